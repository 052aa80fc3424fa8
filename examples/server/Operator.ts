import { join } from "node:path"
import { type OmnichannelOptions, outboundHttpOf } from "omnichannel-core"
import { chatappProvider, makeGraphChatPlatform, makeSimulatedChatPlatform } from "omnichannel-core/chatapp"
import type { GuardedHttp } from "omnichannel-core/http"
import { simulatedProviders } from "omnichannel-core/providers"
import type { HostConfig } from "./Config.ts"
import { keptSecret } from "./HostSecrets.ts"

/**
 * What the host sets up for the chat-app operator: the Graph API through the guarded client when
 * `OMNI_CHATAPP_GRAPH_URL` is set, else the in-process simulator; the `chatapp` channel type connects
 * through it (credentials checked against the operator); the webhook secrets from the environment or
 * kept in the data dir.
 */
export const operatorOptions = (
  config: HostConfig,
  outbound: GuardedHttp
): Pick<OmnichannelOptions<never>, "chatPlatform" | "providers" | "chatappWebhook"> => {
  const chatPlatform = config.chatappGraphUrl === undefined
    ? makeSimulatedChatPlatform()
    : makeGraphChatPlatform({ baseUrl: config.chatappGraphUrl, outbound: outboundHttpOf(outbound) })
  return {
    chatPlatform,
    providers: { ...simulatedProviders, chatapp: chatappProvider(chatPlatform) },
    chatappWebhook: {
      appSecret: config.chatappAppSecret ?? keptSecret(config.dataDir, "chatapp-app-secret"),
      verifyToken: config.chatappVerifyToken ?? keptSecret(config.dataDir, "chatapp-verify-token")
    }
  }
}

/** Where attachment bytes live, and the key that signs their download links (kept, so links outlive a restart). */
export const fileOptions = (config: HostConfig) => ({
  filesDir: join(config.dataDir, "files"),
  downloads: { secret: keptSecret(config.dataDir, "download-links") }
})
