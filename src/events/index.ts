/** Events: the envelope every change emits, and the tenant's event log. */
export * from "../kernel/EventEnvelope.ts"
export { EventService } from "./EventService.ts"
