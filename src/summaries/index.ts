/** AI file summaries: availability and prices, summaries on demand and for agents, credits, request rates. */
export * from "./Summary.ts"
export * from "./SummaryMachine.ts"
export * from "./SummaryRoutes.ts"
export * from "./SummaryService.ts"
