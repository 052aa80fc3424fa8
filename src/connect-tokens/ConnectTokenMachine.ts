import { Schema } from "effect"
import { addSeconds, type Timestamp } from "../kernel/Timestamp.ts"

/** The part of a connect token its state machine reads and writes. */
export const ConnectTokenState = Schema.Struct({
  expires_at: Schema.String,
  max_uses: Schema.Int,
  uses_count: Schema.Int,
  use_window_minutes: Schema.Int,
  use_window_ends_at: Schema.NullOr(Schema.String),
  revoked_at: Schema.NullOr(Schema.String)
})
/** The part of a connect token its state machine reads and writes. */
export type ConnectTokenState = typeof ConnectTokenState.Type

/** A token's status: the spec's four states, derived from its fields and the time. */
export const ConnectTokenStatus = Schema.Literals(["valid", "revoked", "expired", "exhausted"])
/** A token's status. */
export type ConnectTokenStatus = typeof ConnectTokenStatus.Type

/** What can happen to a token: a DELETE or revoke call, or a customer completing a connection. */
export type ConnectTokenEvent = { readonly _tag: "Revoke" } | { readonly _tag: "Use" }

/** What the service must do after a transition. */
export type ConnectTokenIntent =
  | { readonly _tag: "CreateChannel" }
  | { readonly _tag: "RejectUse"; readonly status: Exclude<ConnectTokenStatus, "valid"> }

/**
 * The status at `now`. Revocation wins; a token whose uses ran out stays `exhausted` after its
 * expiry; a token past `expires_at`, or past the use window its first use opened, is `expired`.
 */
export const statusAt = (state: ConnectTokenState, now: Timestamp): ConnectTokenStatus => {
  if (state.revoked_at !== null) return "revoked"
  if (state.uses_count >= state.max_uses) return "exhausted"
  if (now >= state.expires_at) return "expired"
  if (state.use_window_ends_at !== null && now >= state.use_window_ends_at) return "expired"
  return "valid"
}

/** The pure transition: next state plus intents. Invalid moves leave the state as it was. */
export const transition = <S extends ConnectTokenState>(
  state: S,
  event: ConnectTokenEvent,
  now: Timestamp
): { readonly state: S; readonly intents: ReadonlyArray<ConnectTokenIntent> } => {
  switch (event._tag) {
    case "Revoke":
      // Revoking twice keeps the first time; connections already made are not touched.
      return { state: state.revoked_at === null ? { ...state, revoked_at: now } : state, intents: [] }
    case "Use": {
      const status = statusAt(state, now)
      if (status !== "valid") return { state, intents: [{ _tag: "RejectUse", status }] }
      return {
        state: {
          ...state,
          uses_count: state.uses_count + 1,
          use_window_ends_at: state.use_window_ends_at ?? addSeconds(now, state.use_window_minutes * 60)
        },
        intents: [{ _tag: "CreateChannel" }]
      }
    }
  }
}
