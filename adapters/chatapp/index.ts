export { chatappProvider } from "./ChatappProvider.ts"
export { type GraphChatPlatformOptions, makeGraphChatPlatform } from "./GraphChatPlatform.ts"
export { classifyGraphError, graphErrorFrom } from "./GraphErrors.ts"
export { makeSimulatedChatPlatform } from "./SimulatedChatPlatform.ts"
