/** Every port the core needs from outside, for adapter authors. */
export { AccountStore, type BillingAccountRecord, type UserRecord } from "./AccountStore.ts"
export { type ApiKeyRecord, ApiKeyStore } from "./ApiKeyStore.ts"
export { type ContactRecord, ContactStore } from "./ContactStore.ts"
export { OutboxStore } from "./OutboxStore.ts"
export { StorageError } from "./StorageError.ts"
export { type TenantRecord, TenantStore } from "./TenantStore.ts"
export { Transactor } from "./Transactor.ts"
