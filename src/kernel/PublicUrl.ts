import { Context } from "effect"

/** The base of URLs the service hands out (inbound routes, links), read each time it is needed. */
export class PublicUrl extends Context.Service<PublicUrl, {
  /** E.g. `https://app.example.com`, no trailing slash. */
  readonly base: () => string
}>()("omnichannel-core/kernel/PublicUrl") {}

/** `path` below the public base URL. */
export const publicUrlOf = (publicUrl: PublicUrl["Service"], path: string): string =>
  `${publicUrl.base().replace(/\/+$/, "")}${path}`
