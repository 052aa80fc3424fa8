export * from "./Message.ts"
export { CUSTOMER_SERVICE_WINDOW_MS, MessageService } from "./MessageService.ts"
export { messageRoutes } from "./MessageRoutes.ts"
export { applyStatus, type StatusReport, type StatusState } from "./MessageStatusMachine.ts"
export {
  CHATAPP_MEDIA_RULES,
  CHATAPP_SEND_MEDIA_TYPES,
  type ChatappMediaRule,
  type ChatappSendMediaType,
  MAX_CAPTION_LENGTH,
  MAX_CHATAPP_FILES_PER_SEND,
  mediaTypeFor
} from "./ChatappMediaRules.ts"
