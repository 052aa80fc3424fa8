export * from "./Message.ts"
export { CUSTOMER_SERVICE_WINDOW_MS, MessageService } from "./MessageService.ts"
export { messageRoutes } from "./MessageRoutes.ts"
export { applyStatus, type StatusReport, type StatusState } from "./MessageStatusMachine.ts"
