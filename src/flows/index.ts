/** Chat-app flows: definitions and versions, sends with sessions, answers matched by token, masking, write-back, status and health. */
export * from "./Flow.ts"
export * from "./FlowRoutes.ts"
export * from "./FlowService.ts"
export * from "./FlowSession.ts"
export { ADOPTED_META_FLOW_ID } from "./FlowAnswers.ts"
export { healthOf } from "./FlowWebhooks.ts"
export * from "./Writeback.ts"
