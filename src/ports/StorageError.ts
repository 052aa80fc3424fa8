/** The error storage ports fail with, beside them; defined in the kernel, whose background jobs fail with it too. */
export { StorageError } from "../kernel/StorageError.ts"
