/** Team chat: channels, direct messages, messages and thread replies with files, and their AI summaries. */
export * from "./TeamChat.ts"
export * from "./TeamChatRoutes.ts"
export * from "./TeamChatRules.ts"
export * from "./TeamChatService.ts"
