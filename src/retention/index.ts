/** Retention: how long finished deliveries, their outbox events and raw inbound payloads are kept. */
export { checkRetentionDays, cutoffOf, DAY_MS, isRetentionDays, MAX_RETENTION_DAYS, RetentionSettings, UNSENT_UPLOAD_MS } from "./Retention.ts"
export { makeRetentionJob } from "./RetentionJob.ts"
