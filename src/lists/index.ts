/** Lists and subscriptions: static and dynamic lists, subscriptions kept with their history, opt-in keywords, marketing opt-outs, contact imports. */
export * from "./ContactImport.ts"
export * from "./Keywords.ts"
export { keywordTextOf, leftMessage, OPTED_OUT_MESSAGE } from "./KeywordHandler.ts"
export * from "./List.ts"
export * from "./ListRoutes.ts"
export * from "./ListService.ts"
