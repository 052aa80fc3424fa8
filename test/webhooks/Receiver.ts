import type { IncomingHttpHeaders } from "node:http"
import { Webhook } from "standardwebhooks"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import { type Certificate, type SeenRequest, startServer } from "../outbound/LocalServers.ts"

/** How a receiver answers: an HTTP status, a redirect to `location`, or no answer at all. */
export type Answer = number | { readonly redirect: string } | "hang"

/** A webhook receiver: a real HTTPS server on 127.0.0.1 that records every request and answers as told. */
export interface Receiver {
  /** Where an endpoint points to reach it. */
  readonly url: string
  /** Every request it got, deliveries and verification checks alike, in arrival order. */
  readonly requests: ReadonlyArray<SeenRequest>
  /** The bodies of the deliveries it got (verification checks left out), in arrival order. */
  readonly deliveries: () => ReadonlyArray<EventEnvelope>
  /** The bodies of the verification checks it got (type `webhook.verification`). */
  readonly verifications: () => ReadonlyArray<EventEnvelope>
  /** Changes how the following requests are answered. */
  readonly answerWith: (answer: Answer) => void
  readonly close: () => Promise<void>
}

const VERIFICATION = "webhook.verification"

/** Starts a receiver answering `answer` (200 unless told) over TLS with `certificate`. */
export const startReceiver = async (certificate: Certificate, answer: Answer = 200): Promise<Receiver> => {
  let current = answer
  const server = await startServer((_req, res) => {
    if (current === "hang") return
    if (typeof current === "number") {
      res.writeHead(current, { "content-type": "text/plain" }).end(`answered ${current}`)
      return
    }
    res.writeHead(302, { location: current.redirect }).end()
  }, certificate)
  const bodies = () => server.requests.map((request) => JSON.parse(request.body) as EventEnvelope)
  return {
    url: `${server.origin}/hooks/omni`,
    requests: server.requests,
    deliveries: () => bodies().filter((body) => body.type !== VERIFICATION),
    verifications: () => bodies().filter((body) => body.type === VERIFICATION),
    answerWith: (next) => {
      current = next
    },
    close: server.close
  }
}

/** Checks a request's Standard Webhooks signature with the endpoint's secret; returns the verified payload. */
export const verifySignature = (secret: string, request: SeenRequest): unknown =>
  new Webhook(secret).verify(request.body, request.headers as Record<string, string> & IncomingHttpHeaders)
