import { Context } from "effect"

/** Where connect links point: the public base URL (read when a link is made) and the page's path. */
export class ConnectLinks extends Context.Service<ConnectLinks, {
  /** The base of URLs handed out, e.g. `https://app.example.com` (no trailing slash). */
  readonly publicUrl: () => string
  /** The connect page's path below it, e.g. `/connect`. */
  readonly path: string
}>()("omnichannel-core/connect-tokens/ConnectLinks") {}

/** The link a customer opens for `rawToken`. */
export const connectUrl = (links: ConnectLinks["Service"], rawToken: string): string =>
  `${links.publicUrl().replace(/\/+$/, "")}${links.path}/${rawToken}`
