import { type Effect, Option, Schema } from "effect"
import type { ApiError } from "../kernel/ApiError.ts"
import type { EncodedJson } from "../kernel/EncodedJson.ts"
import type { ApiKeyPrincipal, UserPrincipal } from "../kernel/Principal.ts"
import type { Scope } from "../kernel/Scope.ts"
import type { StorageError } from "../ports/StorageError.ts"

/** A JSON schema the router decodes with; decoding and encoding need no services. */
export type WireSchema<T> = Schema.Codec<T, unknown, never, never>

/**
 * Who may call a route: an API key holding any one of `scopes`, a user token, or either of them
 * (`api_key_or_user`: an API key whatever its scopes, its `X-Tenant-ID` checked as always).
 */
export type AuthRequirement =
  | { readonly kind: "api_key"; readonly scopes: ReadonlyArray<Scope> }
  | { readonly kind: "user" }
  | { readonly kind: "api_key_or_user" }

/** What a route handler receives, already authenticated and decoded. */
export interface RouteInput<P, Q, B> {
  readonly principal: P
  readonly params: Readonly<Record<string, string>>
  readonly query: Q
  readonly body: B
  /** The request itself, for a route that reads a body that is not JSON (a multipart upload) as a stream. */
  readonly request: Request
}

/** One operation of the API: its path, who may call it, its wire shapes and its use case. */
export interface Route<R> {
  readonly method: "GET" | "POST" | "PATCH" | "PUT" | "DELETE"
  /** Path below the API base, with `{name}` parameters: `/contacts/{contact_id}`. */
  readonly path: string
  readonly operationId: string
  readonly summary: string
  readonly tag: string
  readonly auth: AuthRequirement
  readonly query?: WireSchema<unknown> | undefined
  readonly body?: WireSchema<unknown> | undefined
  /** A body that is not JSON, read by the handler from `request`: documented in OpenAPI as this. */
  readonly rawBody?: { readonly contentType: string; readonly schema: Readonly<Record<string, unknown>>; readonly description: string } | undefined
  readonly response: {
    readonly status: number
    readonly schema: WireSchema<unknown>
    readonly description: string
    /** When the status depends on the outcome (200 for an existing row, 201 for a new one): chooses it. */
    readonly statusOf?: ((result: unknown) => number) | undefined
    /** The other statuses `statusOf` may choose, with what each means, for the OpenAPI document. */
    readonly alternatives?: Readonly<Record<number, string>> | undefined
  }
  /** Statuses this operation can answer besides success and the auth failures, for the OpenAPI document. */
  readonly errors: ReadonlyArray<number>
  /**
   * A body some of this operation's failures answer with instead of the common error body (an
   * adoption's `success: false` answer), for the OpenAPI document.
   */
  readonly failureBody?: WireSchema<unknown> | undefined
  /** What some of those statuses mean for this operation, where the general description does not fit. */
  readonly errorDescriptions?: Readonly<Record<number, string>> | undefined
  /**
   * How failures are written: `detail` (the default, `{"detail": …}`) or `coded`
   * (`{"detail": {"code": "RESOURCE_NOT_FOUND", "message": …}}`, the spec's webhook errors).
   */
  readonly errorStyle: "detail" | "coded"
  readonly handle: (
    input: RouteInput<ApiKeyPrincipal | UserPrincipal, unknown, unknown>
  ) => Effect.Effect<unknown, ApiError | StorageError, R>
}

type PrincipalOf<A extends AuthRequirement> = A extends { readonly kind: "user" } ? UserPrincipal
  : A extends { readonly kind: "api_key_or_user" } ? ApiKeyPrincipal | UserPrincipal
  : ApiKeyPrincipal

/**
 * Declares a route with its types tied together: the handler sees the decoded query and body
 * and must return what the response schema encodes.
 */
export const route = <A extends AuthRequirement, O, R, Q = undefined, B = undefined>(definition: {
  readonly method: Route<R>["method"]
  readonly path: string
  readonly operationId: string
  readonly summary: string
  readonly tag: string
  readonly auth: A
  readonly query?: WireSchema<Q>
  readonly body?: WireSchema<B>
  readonly rawBody?: Route<R>["rawBody"]
  readonly response: {
    readonly status: number
    readonly schema: WireSchema<O>
    readonly description: string
    readonly statusOf?: (result: O) => number
    readonly alternatives?: Readonly<Record<number, string>>
  }
  readonly errors?: ReadonlyArray<number>
  readonly failureBody?: WireSchema<unknown>
  readonly errorDescriptions?: Readonly<Record<number, string>>
  readonly errorStyle?: "detail" | "coded"
  /** Returns the answer, or its JSON text already written (`EncodedJson`), sent as it is. */
  readonly handle: (input: RouteInput<PrincipalOf<A>, Q, B>) => Effect.Effect<O | EncodedJson<O>, ApiError | StorageError, R>
}): Route<R> => ({
  ...definition,
  response: definition.response as Route<R>["response"],
  errors: definition.errors ?? [],
  errorStyle: definition.errorStyle ?? "detail",
  handle: definition.handle as Route<R>["handle"]
})

/**
 * Whether a JSON body schema takes `{}` (no field is required): such a route also takes a request
 * with no body at all, read as `{}`, so an optional body may simply be left out.
 */
export const bodyIsOptional = (schema: WireSchema<unknown>): boolean =>
  Option.isSome(Schema.decodeUnknownOption(schema, { onExcessProperty: "error" })({}))
