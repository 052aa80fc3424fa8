/** An answer a direct route gives: status, headers and a short text body, written in one call. */
export interface DirectAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/**
 * A route a server adapter may serve straight from its own request object, without making a web
 * `Request` and `Response`: for the hottest route (the operator's webhooks, thousands a second), that
 * is most of the cost of an answer. The adapter reads the whole body, which the request must declare
 * (`Content-Length`, at most `maxBytes`), and writes the answer `handle` gives. Any other request to
 * the path (no declared length, a longer one, another method) goes to the handler as usual, and the
 * handler answers every request the route answers the same way: a server that knows no direct routes
 * loses nothing. `serve` in `omnichannel-core/node` takes them (`direct`), from `Omnichannel.directRoutes`.
 */
export interface DirectRoute {
  readonly method: string
  /** The exact path (a query string after it still matches). */
  readonly path: string
  readonly maxBytes: number
  /**
   * Answers the request whose whole body is `body`; `header` reads one of its headers by lower-case
   * name. Rejects only on a failure the handler would answer 500.
   */
  readonly handle: (body: Uint8Array, header: (name: string) => string | undefined) => Promise<DirectAnswer>
}
