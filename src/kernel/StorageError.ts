import { Schema } from "effect"

/**
 * A storage operation failed. `reason` is a closed set: `UniqueViolation` names the constraint
 * (callers turn it into a 409 or retry), `Unavailable` is worth retrying, `Unknown` is not.
 * It lives in the kernel because more than the ports speak it: background jobs fail with it.
 */
export class StorageError extends Schema.TaggedError<StorageError>()("StorageError", {
  reason: Schema.Literals(["UniqueViolation", "Unavailable", "Unknown"]),
  message: Schema.String,
  constraint: Schema.optional(Schema.String),
  cause: Schema.optional(Schema.Defect())
}) {
  /** True when trying the same operation again may succeed. */
  get isRetryable(): boolean {
    return this.reason === "Unavailable"
  }
}
