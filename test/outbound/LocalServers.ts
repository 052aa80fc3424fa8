import { execFileSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import * as http from "node:http"
import * as https from "node:https"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TLSSocket } from "node:tls"

/** A request as the receiving server saw it. */
export interface SeenRequest {
  readonly method: string
  readonly url: string
  readonly headers: http.IncomingHttpHeaders
  readonly body: string
  /** The TLS server name the client sent (SNI), for HTTPS. */
  readonly servername: string | undefined
}

/** A receiver on 127.0.0.1 that records what reaches it. */
export interface LocalServer {
  readonly port: number
  /** `http(s)://127.0.0.1:port` */
  readonly origin: string
  readonly requests: Array<SeenRequest>
  /** TCP connections accepted so far. */
  readonly connections: () => number
  readonly close: () => Promise<void>
}

/** Answers one request; it sees the request body already read. */
export type Handler = (req: http.IncomingMessage, res: http.ServerResponse, body: string) => void

/** A self-signed certificate for `localhost`, `receiver.test` and 127.0.0.1. */
export interface Certificate {
  readonly key: string
  readonly cert: string
}

/** Whether the `openssl` CLI is there to make a test certificate. */
export const hasOpenssl = (() => {
  try {
    execFileSync("openssl", ["version"], { stdio: "ignore" })
    return true
  } catch {
    // CI sets OMNI_REQUIRE_OPENSSL so the HTTPS tests fail there rather than skip.
    if (process.env.OMNI_REQUIRE_OPENSSL === "1") throw new Error("the openssl CLI is needed for the HTTPS tests")
    return false
  }
})()

/** Makes a throwaway self-signed certificate with the `openssl` CLI. */
export const makeCertificate = (): Certificate => {
  const dir = mkdtempSync(join(tmpdir(), "outbound-cert-"))
  try {
    execFileSync("openssl", [
      "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
      "-keyout", join(dir, "key.pem"), "-out", join(dir, "cert.pem"), "-days", "2",
      "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,DNS:receiver.test,IP:127.0.0.1"
    ], { stdio: "ignore" })
    return { key: readFileSync(join(dir, "key.pem"), "utf8"), cert: readFileSync(join(dir, "cert.pem"), "utf8") }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** Starts an HTTP server (or HTTPS with `certificate`) on 127.0.0.1 with a free port. */
export const startServer = async (handler: Handler, certificate?: Certificate): Promise<LocalServer> => {
  const requests: Array<SeenRequest> = []
  let connections = 0
  const listener = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Array<Buffer> = []
    req.on("data", (chunk: Buffer) => chunks.push(chunk))
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8")
      const servername = (req.socket as Partial<TLSSocket>).servername
      requests.push({
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body,
        servername: typeof servername === "string" ? servername : undefined
      })
      handler(req, res, body)
    })
  }
  const server = certificate === undefined ? http.createServer(listener) : https.createServer(certificate, listener)
  server.on("connection", () => {
    connections += 1
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    port,
    origin: `${certificate === undefined ? "http" : "https"}://127.0.0.1:${port}`,
    requests,
    connections: () => connections,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  }
}

/** A port on 127.0.0.1 where nothing listens. */
export const freePort = async (): Promise<number> => {
  const server = http.createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
