export * from "./Conversation.ts"
export { ConversationService } from "./ConversationService.ts"
export { conversationRoutes } from "./ConversationRoutes.ts"
