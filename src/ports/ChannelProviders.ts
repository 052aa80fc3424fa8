import { Context, type Effect, Schema } from "effect"

/** One input the connect page asks for. `secret` inputs are typed as passwords and never shown again. */
export interface ProviderField {
  readonly name: string
  readonly label: string
  readonly secret: boolean
  readonly required: boolean
  /** A hint shown under the input, e.g. the expected format. */
  readonly hint?: string
}

/** What a provider hands back for a connected account. */
export interface ProviderConnection {
  readonly external_id: string
  readonly name: string
  readonly config: Readonly<Record<string, string>>
  readonly secrets: Readonly<Record<string, string>>
}

/** The provider refused the inputs; `fields` maps an input name to what is wrong with it. */
export class ProviderRejected extends Schema.TaggedError<ProviderRejected>()("ProviderRejected", {
  message: Schema.String,
  fields: Schema.Record(Schema.String, Schema.String)
}) {}

/** One channel type's provider: what it asks for and how it connects. */
export interface ChannelProvider {
  readonly fields: ReadonlyArray<ProviderField>
  /** Checks the inputs with the provider and returns the connected account. */
  readonly connect: (input: Readonly<Record<string, string>>) => Effect.Effect<ProviderConnection, ProviderRejected>
}

/** The providers the host offers, by channel type; a type without one cannot be connected here. */
export class ChannelProviders extends Context.Service<ChannelProviders, {
  readonly byType: Readonly<Partial<Record<string, ChannelProvider>>>
}>()("omnichannel-core/ports/ChannelProviders") {}
