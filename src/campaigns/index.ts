/** Campaigns: chat-app templates to an audience of lists and contacts, with a warm-up check, split sending and the operator's messaging limit. */
export * from "./Campaign.ts"
export * from "./CampaignRoutes.ts"
export * from "./CampaignService.ts"
export { DEFAULT_CAMPAIGN_ENGINE, type CampaignEngineSettings } from "./CampaignEngine.ts"
export * from "./Pacing.ts"
