import { EncodedJson } from "../kernel/EncodedJson.ts"
import { Cause, Effect, Schema } from "effect"
import { ApiKeyAuth, USER_TOKEN_KIND } from "../auth/ApiKeyAuth.ts"
import { type ApiError, errorBody, InvalidRequest, MissingScope } from "../kernel/ApiError.ts"
import type { ApiKeyPrincipal, UserPrincipal } from "../kernel/Principal.ts"
import type { StorageError } from "../ports/StorageError.ts"
import { toCodedErrorResponse, toErrorResponse } from "./ErrorResponse.ts"
import { inMemoryResponse } from "./InMemoryResponse.ts"
import { makeOpenApiDocument } from "./OpenApi.ts"
import { DEFAULT_MAX_BODY_BYTES, PayloadTooLarge, readJsonBody, UnsupportedMediaType } from "./RequestBody.ts"
import { observeRequest, type RequestFacts } from "./RequestTelemetry.ts"
import { bodyIsOptional, type Route } from "./Route.ts"
import { toValidationIssues, unknownField } from "./ValidationIssues.ts"

/** A web-standard request handler: mount it in any server that speaks `Request` / `Response`. */
export type ApiHandler = (request: Request) => Promise<Response>

/** Where the API is mounted and how large a body it takes. */
export interface ApiHandlerOptions {
  /** Path prefix of the API; default `/api/v1`. Embed under another prefix with e.g. `/messaging/api/v1`. */
  readonly basePath?: string
  /** Largest JSON body accepted, in bytes; default 1 MiB. */
  readonly maxBodyBytes?: number
}

const json = (status: number, body: unknown, headers: Readonly<Record<string, string>> = {}): Response =>
  text(status, JSON.stringify(body), headers)

const text = (status: number, body: string, headers: Readonly<Record<string, string>> = {}): Response =>
  inMemoryResponse(status, body, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store", ...headers })

interface CompiledRoute<R> {
  readonly route: Route<R>
  readonly segments: ReadonlyArray<string>
  readonly decodeQuery: ((u: unknown) => Effect.Effect<unknown, Schema.SchemaError>) | undefined
  readonly decodeBody: ((u: unknown) => Effect.Effect<unknown, Schema.SchemaError>) | undefined
  /** The body schema requires no field: a request without a body reads as `{}`. */
  readonly bodyOptional: boolean
  readonly encodeResponse: (u: unknown) => Effect.Effect<unknown, Schema.SchemaError>
}

/** A request resolved to its route, or answered without one (404, 405, the OpenAPI document). */
type Resolved<R> =
  | { readonly _tag: "Route"; readonly match: CompiledRoute<R>; readonly params: Record<string, string> }
  | { readonly _tag: "Answer"; readonly route: string | undefined; readonly answer: () => Response }

const compile = <R>(route: Route<R>): CompiledRoute<R> => ({
  route,
  segments: route.path.split("/").filter((s) => s !== ""),
  // An unknown query parameter is refused as an unknown body field is (422 `extra_forbidden`): a
  // filter the route does not know would otherwise be ignored and look applied.
  decodeQuery: route.query && Schema.decodeUnknownEffect(route.query, { errors: "all", onExcessProperty: "error" }),
  decodeBody: route.body && Schema.decodeUnknownEffect(route.body, { errors: "all", onExcessProperty: "error" }),
  bodyOptional: route.body !== undefined && bodyIsOptional(route.body),
  encodeResponse: Schema.encodeUnknownEffect(route.response.schema)
})

const matchPath = (
  segments: ReadonlyArray<string>,
  path: ReadonlyArray<string>
): Record<string, string> | undefined => {
  if (segments.length !== path.length) return undefined
  const params: Record<string, string> = {}
  for (let i = 0; i < segments.length; i++) {
    const pattern = segments[i]!
    const actual = path[i]!
    if (pattern.startsWith("{")) params[pattern.slice(1, -1)] = actual
    else if (pattern !== actual) return undefined
  }
  return params
}

const decodeSegments = (pathname: string): ReadonlyArray<string> | undefined => {
  try {
    return pathname.split("/").filter((s) => s !== "").map(decodeURIComponent)
  } catch {
    return undefined
  }
}

/** A route without a query schema takes no query parameter: each one sent is an unknown field. */
const refuseAnyQuery = (query: Readonly<Record<string, string>>): Effect.Effect<undefined, InvalidRequest> => {
  const names = Object.keys(query)
  return names.length === 0 ? Effect.succeed(undefined) : Effect.fail(
    new InvalidRequest({ issues: names.map((name) => unknownField(["query", name])) })
  )
}

const bearerOf = (request: Request): string | undefined => {
  const header = request.headers.get("authorization")
  const match = header === null ? null : /^Bearer\s+(\S+)\s*$/i.exec(header)
  return match?.[1]
}

/**
 * Builds the `/api/v1` handler over `routes`. Every answer is JSON; expected failures map through
 * one table, and anything unexpected is logged and answered 500 without detail.
 */
export const makeApiHandler = <R>(
  routes: ReadonlyArray<Route<R>>,
  options: ApiHandlerOptions & { readonly title: string; readonly version: string }
): Effect.Effect<ApiHandler, never, R | ApiKeyAuth> =>
  Effect.gen(function*() {
    const context = yield* Effect.context<R | ApiKeyAuth>()
    const auth = yield* ApiKeyAuth
    const basePath = (options.basePath ?? "/api/v1").replace(/\/+$/, "")
    const maxBodyBytes = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
    const compiled = routes.map(compile)
    const openApi = JSON.stringify(makeOpenApiDocument(routes as ReadonlyArray<Route<unknown>>, {
      basePath,
      title: options.title,
      version: options.version
    }))

    const authenticate = (request: Request, route: Route<R>) =>
      Effect.gen(function*() {
        if (route.auth.kind === "user") return yield* auth.authenticateUser(bearerOf(request))
        const bearer = bearerOf(request)
        // A route taking either credential tells them apart by their prefix.
        if (route.auth.kind === "api_key_or_user" && bearer?.startsWith(`${USER_TOKEN_KIND}_`)) {
          return yield* auth.authenticateUser(bearer)
        }
        const principal = yield* auth.authenticate(bearer, request.headers.get("x-tenant-id") ?? undefined)
        if (route.auth.kind === "api_key_or_user") return principal
        const required = route.auth.scopes
        if (!required.some((scope) => principal.scopes.has(scope))) {
          return yield* new MissingScope({ scopes: required })
        }
        return principal
      })

    const run = (request: Request, match: CompiledRoute<R>, params: Record<string, string>, url: URL, facts: RequestFacts) =>
      Effect.gen(function*() {
        const principal: ApiKeyPrincipal | UserPrincipal = yield* authenticate(request, match.route)
        if (principal.kind === "api_key") facts.tenantId = principal.tenantId
        const rawQuery = Object.fromEntries(url.searchParams.entries())
        const query = match.decodeQuery === undefined
          ? yield* refuseAnyQuery(rawQuery)
          : yield* match.decodeQuery(rawQuery).pipe(
            Effect.mapError((e) => new InvalidRequest({ issues: toValidationIssues(e.issue, ["query"]) }))
          )
        const body = match.decodeBody === undefined ? undefined : yield* readJsonBody(request, maxBodyBytes, { optional: match.bodyOptional }).pipe(
          Effect.flatMap((raw) =>
            match.decodeBody!(raw).pipe(
              Effect.mapError((e) => new InvalidRequest({ issues: toValidationIssues(e.issue, ["body"]) }))
            )
          )
        )
        const result = yield* match.route.handle({ principal, params, query, body, request })
        if (result instanceof EncodedJson) return text(match.route.response.status, result.text)
        const encoded = yield* Effect.orDie(match.encodeResponse(result))
        const status = match.route.response.statusOf?.(result) ?? match.route.response.status
        return json(status, encoded)
      })

    // Which route a request is for, or its answer when none takes it: decided before anything runs,
    // so the request's span is named by the route template.
    const resolve = (request: Request, url: URL): Resolved<R> => {
      if (url.pathname !== basePath && !url.pathname.startsWith(`${basePath}/`)) {
        return { _tag: "Answer", route: undefined, answer: () => json(404, errorBody("not_found", "Not Found")) }
      }
      const sub = url.pathname.slice(basePath.length)
      if (sub === "/openapi.json" && request.method === "GET") {
        return {
          _tag: "Answer",
          route: `${basePath}/openapi.json`,
          answer: () => new Response(openApi, { headers: { "content-type": "application/json; charset=utf-8" } })
        }
      }
      const path = decodeSegments(sub)
      if (path === undefined) return { _tag: "Answer", route: undefined, answer: () => json(404, errorBody("not_found", "Not Found")) }
      const allowed: Array<string> = []
      for (const candidate of compiled) {
        const params = matchPath(candidate.segments, path)
        if (params === undefined) continue
        if (candidate.route.method !== request.method) {
          allowed.push(candidate.route.method)
          continue
        }
        return { _tag: "Route", match: candidate, params }
      }
      if (allowed.length > 0) {
        return {
          _tag: "Answer",
          route: undefined,
          answer: () => json(405, errorBody("method_not_allowed", "Method Not Allowed"), { allow: allowed.join(", ") })
        }
      }
      return { _tag: "Answer", route: undefined, answer: () => json(404, errorBody("not_found", "Not Found")) }
    }

    const serve = (request: Request, url: URL, candidate: CompiledRoute<R>, params: Record<string, string>, facts: RequestFacts) =>
      run(request, candidate, params, url, facts).pipe(
        Effect.catch((error: ApiError | StorageError | PayloadTooLarge | UnsupportedMediaType) => {
          if (error instanceof PayloadTooLarge) {
            return Effect.succeed(json(413, errorBody("payload_too_large", `Request body too large; the limit is ${error.limit} bytes`)))
          }
          if (error instanceof UnsupportedMediaType) {
            return Effect.succeed(json(415, errorBody("unsupported_media_type", "Content-Type must be application/json")))
          }
          const answer = candidate.route.errorStyle === "coded" ? toCodedErrorResponse(error) : toErrorResponse(error)
          return Effect.succeed(json(answer.status, answer.body, answer.headers))
        })
      )

    const handle = (request: Request): Effect.Effect<Response, never, R> => {
      const url = new URL(request.url)
      const resolved = resolve(request, url)
      const route = resolved._tag === "Route" ? `${basePath}${resolved.match.route.path}` : resolved.route
      return observeRequest(request, route, (facts) =>
        (resolved._tag === "Answer" ? Effect.sync(resolved.answer) : serve(request, url, resolved.match, resolved.params, facts)).pipe(
          // A defect: the cause goes to the log, never to the caller.
          Effect.catchCause((cause) =>
            Effect.as(
              Effect.logError("unexpected failure", Cause.pretty(cause)),
              json(500, errorBody("internal_error", "Internal server error"))
            )
          )
        ))
    }

    const runWith = Effect.runPromiseWith(context)
    return (request: Request): Promise<Response> => runWith(handle(request))
  })
