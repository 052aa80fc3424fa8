/** Channels. */
export { Channel, ChannelList, toChannel } from "./Channel.ts"
export { ChannelService } from "./ChannelService.ts"
export { CHANNEL_TYPE_LABELS, CHANNEL_TYPES, ChannelType, isChannelType } from "../kernel/ChannelType.ts"
export { SendingLimit, SendingLimitService } from "./SendingLimitService.ts"
export { ThroughputService } from "./ThroughputService.ts"
