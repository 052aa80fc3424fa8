/** Email: mailboxes (integrations), received mail threaded into conversations, threads, and mail sent with files and inline images. */
export * from "./Email.ts"
export * from "./EmailRoutes.ts"
export * from "./EmailService.ts"
export * from "./OutgoingEmail.ts"
export { messageIdsOf, readReceivedEmail, threadCandidates, UnreadableEmail } from "./ReceivedEmail.ts"
export type { ReceivedEmail, ReceivedFile } from "./ReceivedEmail.ts"
