import { readdirSync } from "node:fs"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { join } from "node:path"
import { crc32 } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { admin, type HostProcess, http, startHost } from "../support/Host.ts"
import { hostBackends } from "../support/HostBackends.ts"
import { waitUntil } from "../support/Poll.ts"

// `POST /attachments/from-url` seen from outside: the host as a child process allowed to reach
// loopback, local `node:http` servers playing the sources (honest, failing, empty, lying, huge,
// redirecting), the records and bytes as a user gets them back, and the files directory for what
// was kept. Not here: the 30 s fetch timeout (a source that never answers, or drips), which would
// cost 30 s a case against the host's fixed limit.

const PNG = Uint8Array.from(Buffer.from(
  "89504e470d0a1a0a0000000d4948445200000001000000010806000000" +
    "1f15c4890000000d4944415478da63f8cfc0f01f0005000201e221bc330000000049454e44ae426082",
  "hex"
))
// The start of a Windows executable: file-type reads it as application/x-msdownload.
const EXE = Buffer.concat([Buffer.from("MZ\x90\x00\x03\x00\x00\x00", "latin1"), Buffer.alloc(504)])
const MB = 1024 * 1024
const latin1 = (text: string) => Buffer.from(text, "latin1")
const pngChunk = (type: string, data: Buffer) => {
  const length = Buffer.alloc(4)
  length.writeUInt32BE(data.length)
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([latin1(type), data])))
  return Buffer.concat([length, latin1(type), data, crc])
}

/**
 * The smallest real heads of files of each allowed type (what file-type reads them as), served
 * under `/media/<name>` with the declared type: [name, declared, bytes, type the record gets].
 */
const MEDIA: ReadonlyArray<readonly [string, string, Buffer, string]> = [
  ["doc.pdf", "application/pdf", latin1("%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"), "application/pdf"],
  ["anim.gif", "image/gif", latin1("GIF89a\x01\x00\x01\x00\x00\x00\x00;"), "image/gif"],
  ["photo.jpg", "image/jpeg", Buffer.from("ffd8ffe000104a46494600010100000100010000ffd9", "hex"), "image/jpeg"],
  ["photo.webp", "image/webp", Buffer.concat([latin1("RIFF\x1a\x00\x00\x00WEBPVP8 "), Buffer.alloc(14)]), "image/webp"],
  ["voice.wav", "audio/x-wav", Buffer.concat([latin1("RIFF\x24\x00\x00\x00WAVEfmt "), Buffer.alloc(24)]), "audio/wav"],
  ["song.mp3", "Audio/MPEG; charset=binary", Buffer.concat([latin1("ID3\x03\x00\x00\x00\x00\x00\x00\xff\xfb\x90\x00"), Buffer.alloc(64)]), "audio/mpeg"],
  ["voice.ogg", "audio/ogg", Buffer.concat([latin1("OggS\x00\x02"), Buffer.alloc(22), latin1("\x01vorbis"), Buffer.alloc(64)]), "audio/ogg"],
  ["clip.mp4", "video/mp4", Buffer.from("000000186674797069736f6d0000020069736f6d6d703431000000086d646174", "hex"), "video/mp4"],
  ["clip.mov", "video/quicktime", Buffer.from("0000001466747970717420200000020071742020000000086d646174", "hex"), "video/quicktime"],
  ["clip.webm", "video/webm", Buffer.concat([
    Buffer.from("1a45dfa39f4286810142f7810142f2810442f381084282", "hex"), Buffer.from([0x84]), latin1("webm"),
    Buffer.from("4287810442858102", "hex"), Buffer.alloc(32)
  ]), "video/webm"]
]
/**
 * Files that are what the allowlist names, which file-type calls by another name: an M4A (major
 * brand `M4A `, as phones record voice memos) is `audio/x-m4a`, an animated PNG (an `acTL` chunk
 * before the image data; any PNG reader shows its first frame) is `image/apng`.
 */
const RENAMED: ReadonlyArray<readonly [string, string, Buffer]> = [
  ["memo.m4a", "audio/mp4", Buffer.from("00000018667479704d344120000002004d34412069736f6d000000086d646174", "hex")],
  ["sticker.png", "image/png", Buffer.concat([
    Buffer.from(PNG.subarray(0, 33)), pngChunk("acTL", Buffer.from([0, 0, 0, 1, 0, 0, 0, 0])), Buffer.from(PNG.subarray(33))
  ])]
]
/** The spec's URL-fetch allowlist, in its order. */
const ALLOWED_TYPES = [
  "application/pdf", "audio/mp4", "audio/mpeg", "audio/ogg", "audio/wav", "audio/x-wav", "image/gif",
  "image/jpeg", "image/png", "image/webp", "video/mp4", "video/quicktime", "video/webm"
]
const UNSUPPORTED = { status: 415, body: { detail: { detail: "Unsupported Media Type", allowed_types: ALLOWED_TYPES } } }
const TOO_LARGE = { status: 413, body: { detail: "Payload Too Large" } }
const refused = (detail: string) => ({ status: 400, body: { detail } })

/** What a streaming route of the source managed to write, and whether the reader went away first. */
interface Streamed {
  written: number
  cutOff: boolean
}

/**
 * Writes `total` bytes (`head` first, zeros after) as the reader takes them (waiting for `drain`),
 * stopping when the connection closes; `state` counts what was handed to the socket.
 */
const streamOut = async (response: ServerResponse, head: Uint8Array, total: number, state: Streamed) => {
  const filler = Buffer.alloc(256 * 1024)
  let wake = () => {}
  response.on("close", () => {
    if (!response.writableFinished) state.cutOff = true
    wake()
  })
  let offset = 0
  while (offset < total && !state.cutOff && !response.destroyed) {
    const piece = offset === 0 ? Buffer.from(head) : filler.subarray(0, Math.min(filler.length, total - offset))
    offset += piece.length
    state.written += piece.length
    if (!response.write(piece)) {
      await new Promise<void>((resolve) => {
        wake = resolve
        response.once("drain", resolve)
      })
    }
  }
  if (!state.cutOff && !response.destroyed) response.end()
}

const listen = (server: Server) =>
  new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as AddressInfo).port)))
const close = (server: Server | undefined) =>
  new Promise<void>((resolve) => {
    if (server === undefined) return resolve()
    server.closeAllConnections()
    server.close(() => resolve())
  })

/** A server that answers nothing, counting every connection and request made to it. */
const startCounter = async () => {
  const seen = { connections: 0, requests: 0 }
  const server = createServer((_request, response) => {
    seen.requests += 1
    response.writeHead(200, { "content-type": "image/png" }).end(PNG)
  })
  server.on("connection", () => {
    seen.connections += 1
  })
  const port = await listen(server)
  return { server, seen, url: `http://127.0.0.1:${port}` }
}

/** The sources: one local server whose paths play each kind of source, counting requests per path. */
const startSource = async (redirectTarget: string) => {
  const hits = new Map<string, number>()
  const declared60: Streamed = { written: 0, cutOff: false }
  const chunked200: Streamed = { written: 0, cutOff: false }
  const DISPOSITIONS: Readonly<Record<string, string>> = {
    "/download/1?sig=x": 'attachment; filename="receipt.png"',
    "/download/1": 'inline; filename="receipt.png"',
    "/download/2": `attachment; filename="fallback.png"; filename*=UTF-8''Zo%C3%AB's%20chart.png`,
    "/download/3": 'attachment; filename="../../etc/passwd.png"',
    "/download/4": 'attachment; filename="setup.exe"'
  }
  const server = createServer((request: IncomingMessage, response: ServerResponse) => {
    const path = request.url ?? "/"
    hits.set(path, (hits.get(path) ?? 0) + 1)
    if (path === "/" || path.startsWith("/files/")) return response.writeHead(200, { "content-type": "image/png" }).end(PNG)
    // A download link naming its file in Content-Disposition, as the host's own /files links do.
    const disposition = DISPOSITIONS[path]
    if (disposition !== undefined) {
      return response.writeHead(200, { "content-type": "image/png", "content-disposition": disposition }).end(PNG)
    }
    const media = [...MEDIA, ...RENAMED].find(([name]) => path === `/media/${name}`)
    if (media !== undefined) return response.writeHead(200, { "content-type": media[1] }).end(media[2])
    switch (path) {
      case "/status/404":
        return response.writeHead(404, { "content-type": "text/plain" }).end("not here")
      case "/status/500":
        return response.writeHead(500, { "content-type": "text/plain" }).end("broken")
      case "/empty.png":
        return response.writeHead(200, { "content-type": "image/png", "content-length": "0" }).end()
      case "/redirect.png":
        return response.writeHead(302, { location: `${redirectTarget}/target.png` }).end()
      case "/redirect-metadata.png":
        return response.writeHead(302, { location: "http://169.254.169.254/latest/meta-data/" }).end()
      case "/page.html":
        return response.writeHead(200, { "content-type": "text/html" }).end("<html><body>hi</body></html>")
      case "/untyped.png":
        // No content-type header at all (node:http adds none unless told).
        return response.writeHead(200, { "content-length": String(PNG.length) }).end(PNG)
      case "/disguised.png":
        return response.writeHead(200, { "content-type": "image/png" }).end(EXE)
      case "/cut.png":
        // Promises 100 KB, sends the head of a PNG and hangs up.
        response.writeHead(200, { "content-type": "image/png", "content-length": String(100 * 1024) })
        return response.write(PNG, () => response.destroy())
      case "/declared-60mb.mp4":
        response.writeHead(200, { "content-type": "video/mp4", "content-length": String(60 * MB) })
        return void streamOut(response, PNG, 60 * MB, declared60)
      case "/chunked-200mb.mp4":
        // Chunked: no length declared, only the bytes tell.
        response.writeHead(200, { "content-type": "video/mp4" })
        return void streamOut(response, PNG, 200 * MB, chunked200)
      default:
        return response.writeHead(404).end()
    }
  })
  const port = await listen(server)
  return { server, hits, declared60, chunked200, url: `http://127.0.0.1:${port}`, count: (path: string) => hits.get(path) ?? 0 }
}

describe.each(hostBackends)("attachments from a URL on the reference host ($name)", (backend) => {
  let env: Record<string, string>
  let tearDown: () => Promise<void>
  let host: HostProcess
  let tenant: { id: string; key: string }
  let target: Awaited<ReturnType<typeof startCounter>>
  let source: Awaited<ReturnType<typeof startSource>>
  let closedPort: number

  beforeAll(async () => {
    target = await startCounter()
    source = await startSource(target.url)
    const doomed = createServer()
    closedPort = await listen(doomed)
    await close(doomed)
    ;({ env, tearDown } = await backend.setUp())
    env = { ...env, OMNI_OUTBOUND_ALLOW: "127.0.0.1/32" }
    host = await startHost(env)
    const boot = await admin(env, "bootstrap", "--email", "owner@example.com")
    tenant = { id: boot.tenant_id, key: boot.api_key }
  })
  afterAll(async () => {
    if (host?.child.exitCode === null) await host.stop()
    await close(source?.server)
    await close(target?.server)
    await tearDown?.()
  })

  const fromUrl = (body: { url: string; filename?: string }, key = tenant.key) =>
    http(host.url, "POST", "/api/v1/attachments/from-url", { token: key, body })
  const get = (path: string) => http(host.url, "GET", `/api/v1${path}`, { token: tenant.key })
  /** The files the host keeps for the tenant (partial files included: they start with a dot). */
  const keptFiles = () => {
    try {
      return readdirSync(join(env.OMNI_DATA_DIR!, "files", tenant.id))
    } catch {
      return []
    }
  }
  /** The record and the bytes its download link serves. */
  const fetched = async (id: string) => {
    const read = await get(`/attachments/${id}`)
    expect(read.status).toBe(200)
    const bytes = new Uint8Array(await (await fetch(read.body.url)).arrayBuffer())
    return { record: read.body, bytes }
  }

  it("fetches a PNG into a record named after the URL's last path segment; its link serves the same bytes", async () => {
    const created = await fromUrl({ url: `${source.url}/files/photo.png` })
    expect(created).toEqual({
      status: 201,
      body: { id: expect.stringMatching(/^[0-9a-f-]{36}$/), filename: "photo.png", content_type: "image/png", file_size: PNG.length }
    })
    expect(source.count("/files/photo.png")).toBe(1)
    const { record, bytes } = await fetched(created.body.id)
    expect(record).toMatchObject({ ...created.body, direction: "outbound", message_id: null, conversation_id: null })
    expect(bytes).toEqual(PNG)
    expect(keptFiles()).toContain(created.body.id)

    // The last segment is percent-decoded.
    const decoded = await fromUrl({ url: `${source.url}/files/Receipt%20M%C3%A4rz.png?size=large` })
    expect(decoded).toMatchObject({ status: 201, body: { filename: "Receipt März.png", content_type: "image/png" } })
    expect((await fetched(decoded.body.id)).bytes).toEqual(PNG)
  })

  it.each(MEDIA)("takes %s served as %s, typed by its bytes", async (name, _declared, bytes, stored) => {
    const created = await fromUrl({ url: `${source.url}/media/${name}` })
    expect(created).toEqual({ status: 201, body: { id: expect.any(String), filename: name, content_type: stored, file_size: bytes.length } })
    expect((await fetched(created.body.id)).bytes).toEqual(new Uint8Array(bytes))
  })

  it("takes an M4A served as audio/mp4 and an animated PNG served as image/png (types on the allowlist)", async () => {
    const answers = []
    for (const [name, declared] of RENAMED) {
      const created = await fromUrl({ url: `${source.url}/media/${name}` })
      answers.push({ name, declared, status: created.status, file_size: created.body.file_size })
      expect(source.count(`/media/${name}`)).toBe(1)
    }
    expect(answers).toEqual(RENAMED.map(([name, declared, bytes]) => ({ name, declared, status: 201, file_size: bytes.length })))
  })

  it("names the file from the filename field when given, stored safe", async () => {
    const named = await fromUrl({ url: `${source.url}/files/a.png`, filename: "Quarterly chart.png" })
    expect(named).toMatchObject({ status: 201, body: { filename: "Quarterly chart.png", file_size: PNG.length } })
    expect((await fetched(named.body.id)).record.filename).toBe("Quarterly chart.png")

    const isSafe = (name: string) => {
      expect(name).not.toMatch(/[/\\]/)
      expect(name).not.toMatch(/\p{Cc}/u)
      expect(name).not.toMatch(/^\./)
      expect(name.endsWith(".png")).toBe(true)
    }
    const traversal = await fromUrl({ url: `${source.url}/files/b.png`, filename: "../../etc/pass\twd\r\n\u001b[31m\u007f.png" })
    expect(traversal.status).toBe(201)
    isSafe(traversal.body.filename)
    expect(traversal.body.filename).toContain("passwd")
    expect(traversal.body.filename).not.toContain("..")
    expect((await fetched(traversal.body.id)).record.filename).toBe(traversal.body.filename)

    // NUL is refused in any JSON text the host reads, before anything is fetched.
    expect(await fromUrl({ url: `${source.url}/files/nul.png`, filename: "a\u0000.png" })).toEqual({
      status: 422,
      body: { detail: [{ loc: ["body", "filename"], msg: expect.stringContaining("NUL"), type: "string_unicode" }] }
    })
    expect(source.count("/files/nul.png")).toBe(0)

    // A traversal spelled in the URL's last segment, percent-encoded so it stays one segment.
    const fromPath = await fromUrl({ url: `${source.url}/files/..%2F..%2Fsecret.png` })
    expect(fromPath.status).toBe(201)
    isSafe(fromPath.body.filename)
    expect(fromPath.body.filename).toContain("secret")

    // A long name is cut, its extension kept.
    const long = await fromUrl({ url: `${source.url}/files/c.png`, filename: `${"a".repeat(300)}.png` })
    expect(long.status).toBe(201)
    expect(long.body.filename.length).toBeLessThanOrEqual(255)
    isSafe(long.body.filename)

    // No path segment at all: the host still gives the file a name, with the extension of its type.
    const bare = await fromUrl({ url: `${source.url}/` })
    expect(bare).toMatchObject({ status: 201, body: { content_type: "image/png" } })
    isSafe(bare.body.filename)
  })

  it("names a file without a filename field after the answer's Content-Disposition, before the URL's path; a blocked extension there is refused", async () => {
    const plain = await fromUrl({ url: `${source.url}/download/1?sig=x` })
    expect(plain).toMatchObject({ status: 201, body: { filename: "receipt.png", content_type: "image/png", file_size: PNG.length } })
    const extended = await fromUrl({ url: `${source.url}/download/2` })
    expect(extended).toMatchObject({ status: 201, body: { filename: "Zoë's chart.png" } })
    // A path in the header is not followed: the name is made safe.
    const traversal = await fromUrl({ url: `${source.url}/download/3` })
    expect(traversal.status).toBe(201)
    expect(traversal.body.filename).not.toMatch(/[/\\]|\.\./)
    expect(traversal.body.filename).toContain("passwd")
    // The field, when given, still wins.
    expect(await fromUrl({ url: `${source.url}/download/1`, filename: "mine.png" })).toMatchObject({ status: 201, body: { filename: "mine.png" } })
    // A blocked extension named only by the header is refused, keeping nothing.
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/download/4` })).toEqual(refused("File extension '.exe' is not allowed"))
    expect(keptFiles()).toEqual(before)
  })

  it("answers the source's failures with the spec's words, keeping nothing", async () => {
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/status/404` })).toEqual(refused("Source URL returned status 404"))
    expect(await fromUrl({ url: `${source.url}/status/500` })).toEqual(refused("Source URL returned status 500"))
    expect(await fromUrl({ url: `${source.url}/empty.png` })).toEqual(refused("Source URL returned an empty body"))
    expect(await fromUrl({ url: `${source.url}/cut.png` })).toEqual(refused("Failed to fetch URL"))
    // Nothing listens there: connection refused.
    expect(await fromUrl({ url: `http://127.0.0.1:${closedPort}/photo.png` })).toEqual(refused("Failed to fetch URL"))
    expect(await fromUrl({ url: "ftp://127.0.0.1/photo.png" })).toEqual(refused("URL not allowed"))
    expect(await fromUrl({ url: "file:///etc/passwd" })).toEqual(refused("URL not allowed"))
    for (const path of ["/status/404", "/status/500", "/empty.png", "/cut.png"]) expect(source.count(path)).toBe(1)
    expect(keptFiles()).toEqual(before)
  })

  it("never follows a redirect, to a local server or to the metadata address", async () => {
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/redirect.png` })).toEqual(refused("Failed to fetch URL"))
    expect(await fromUrl({ url: `${source.url}/redirect-metadata.png` })).toEqual(refused("Failed to fetch URL"))
    expect(source.count("/redirect.png")).toBe(1)
    expect(source.count("/redirect-metadata.png")).toBe(1)
    // The redirect's target, reachable by the host, was never even connected to.
    expect(target.seen).toEqual({ connections: 0, requests: 0 })
    expect(keptFiles()).toEqual(before)
  })

  it("refuses types off the allowlist, as declared and as the bytes show, with the allowed types", async () => {
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/page.html` })).toEqual(UNSUPPORTED)
    expect(await fromUrl({ url: `${source.url}/untyped.png` })).toEqual(UNSUPPORTED)
    // Declared image/png, but an executable's bytes: the bytes decide.
    expect(await fromUrl({ url: `${source.url}/disguised.png` })).toEqual(UNSUPPORTED)
    expect(source.count("/disguised.png")).toBe(1)
    expect(keptFiles()).toEqual(before)
  })

  it("refuses a blocked extension before asking the source anything", async () => {
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/files/invoice.pdf`, filename: "invoice.pdf.exe" }))
      .toEqual(refused("File extension '.exe' is not allowed"))
    expect(source.count("/files/invoice.pdf")).toBe(0)
    // Named by the URL's last segment: the same rule.
    expect(await fromUrl({ url: `${source.url}/files/setup.exe` })).toEqual(refused("File extension '.exe' is not allowed"))
    expect(source.count("/files/setup.exe")).toBe(0)
    expect(keptFiles()).toEqual(before)
  })

  it("refuses a blocked extension that appears once the name is made safe", async () => {
    // A name is cleaned of control, invisible and separator characters before it is stored: the
    // blocklist must hold for the name as stored, or `invoice.ex\u0001e` is kept as `invoice.exe`.
    const disguised: ReadonlyArray<{ url: string; filename?: string }> = [
      { url: `${source.url}/files/d1.png`, filename: "invoice.ex\u0001e" },
      { url: `${source.url}/files/d2.png`, filename: "invoice.ex\u200be" },
      { url: `${source.url}/files/d3.png`, filename: "invoice.exe\u200b" },
      { url: `${source.url}/files/d4.png`, filename: "invoice.exe/" },
      { url: `${source.url}/files/invoice.ex%00e` },
      { url: `${source.url}/files/invoice.exe%E2%80%8B` }
    ]
    const answers = []
    for (const body of disguised) {
      const answer = await fromUrl(body)
      answers.push({ ...body, status: answer.status, stored: answer.body.filename, detail: answer.body.detail })
    }
    expect(answers).toEqual(disguised.map((body) => ({
      ...body, status: 400, stored: undefined, detail: "File extension '.exe' is not allowed"
    })))
  })

  it("refuses a declared 60 MB with 413 and cancels the download long before it is sent", async () => {
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/declared-60mb.mp4` })).toEqual(TOO_LARGE)
    await waitUntil("the source sees the download cancelled", () => source.declared60.cutOff)
    // What the source handed over before the host hung up: socket buffers' worth, not 60 MB.
    expect(source.declared60.written).toBeLessThan(8 * MB)
    expect(keptFiles()).toEqual(before)
  })

  it("stops a chunked body past 50 MB with 413, far before the 200 MB offered, keeping nothing", async () => {
    const before = keptFiles()
    expect(await fromUrl({ url: `${source.url}/chunked-200mb.mp4` })).toEqual(TOO_LARGE)
    await waitUntil("the source sees the download cancelled", () => source.chunked200.cutOff)
    expect(source.chunked200.written).toBeGreaterThan(50 * MB)
    // 50 MB and what sat in socket buffers when the host hung up (about 56 MB here).
    expect(source.chunked200.written).toBeLessThan(70 * MB)
    expect(keptFiles()).toEqual(before)
  }, 60_000)

  it("needs messages:create; a read-only key reaches no source", async () => {
    const limited = await admin(env, "api-key", "create", "--tenant", tenant.id, "--scopes", "messages:read")
    expect(await fromUrl({ url: `${source.url}/files/scoped.png` }, limited.api_key))
      .toEqual({ status: 403, body: { detail: "Missing required permission(s): messages:create" } })
    expect(source.count("/files/scoped.png")).toBe(0)
  })
})
