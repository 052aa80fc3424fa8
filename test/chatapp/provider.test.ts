import { Effect } from "effect"
import { afterEach, beforeEach, describe, expect, it } from "vitest"
import { chatappProvider, makeGraphChatPlatform, makeSimulatedChatPlatform } from "../../adapters/chatapp/index.ts"
import { makeGuardedHttp } from "../../adapters/http/GuardedHttp.ts"
import { simulatedProviders } from "../../adapters/providers/SimulatedProviders.ts"
import type { ChannelProvider } from "../../src/ports/ChannelProviders.ts"
import { type FakeGraph, graphError, startFakeGraph } from "../support/FakeGraph.ts"

const VALID = { phone_number_id: "1065550100", business_account_id: "2065550100", access_token: "EAAGsecretSystemUserToken0000000001" }

const connect = (provider: ChannelProvider, input: Record<string, string>) => Effect.runPromise(provider.connect(input))
const refusal = (provider: ChannelProvider, input: Record<string, string>) => Effect.runPromise(Effect.flip(provider.connect(input)))

describe("the chatapp provider's inputs", () => {
  const provider = chatappProvider(makeSimulatedChatPlatform())

  it("asks for the same three fields as the simulated chatapp provider", () => {
    expect(provider.fields).toEqual(simulatedProviders.chatapp!.fields)
    expect(provider.fields.map((f) => [f.name, f.secret, f.required])).toEqual([
      ["phone_number_id", false, true],
      ["business_account_id", false, true],
      ["access_token", true, true]
    ])
  })

  it("checks their format as the simulated provider does, before asking the operator anything", async () => {
    const wrong = { phone_number_id: "+1 415", business_account_id: "", access_token: "short" }
    const error = await refusal(provider, wrong)
    expect(error).toMatchObject({ _tag: "ProviderRejected", message: "Some details need fixing." })
    expect(error.fields).toEqual({
      phone_number_id: "Digits only, as the provider shows it",
      business_account_id: "Required",
      access_token: "At least 20 characters, no spaces"
    })
    expect(error.fields).toEqual((await Effect.runPromise(Effect.flip(simulatedProviders.chatapp!.connect(wrong)))).fields)
  })
})

describe("connecting through the simulated operator", () => {
  const provider = chatappProvider(makeSimulatedChatPlatform())

  it("names the channel after the number's display form and keeps it in the config; the token stays secret", async () => {
    expect(await connect(provider, { ...VALID, phone_number_id: ` ${VALID.phone_number_id} ` })).toEqual({
      external_id: "1065550100",
      name: "Chat app +1 555-555-0100",
      config: { phone_number_id: "1065550100", business_account_id: "2065550100", display_phone_number: "+1 555-555-0100" },
      secrets: { access_token: VALID.access_token }
    })
  })

  it("turns the operator's refusal of the token into a complaint about the access_token field", async () => {
    const error = await refusal(provider, { ...VALID, access_token: "EAAGsecretREJECTthisTokenPlease000001" })
    expect(error.message).toBe("The operator refused these credentials.")
    expect(Object.keys(error.fields)).toEqual(["access_token"])
    expect(error.fields.access_token).toMatch(/^Refused by the operator: Error validating access token/)
  })
})

describe("connecting through the Graph adapter", () => {
  let fake: FakeGraph
  let provider: ChannelProvider
  const cleanups: Array<() => Promise<void>> = []
  beforeEach(async () => {
    fake = await startFakeGraph()
    const client = makeGuardedHttp({ allow: ["127.0.0.1/32"] })
    cleanups.push(fake.close, client.close)
    provider = chatappProvider(makeGraphChatPlatform({ baseUrl: fake.url, outbound: client, timeoutMs: 300 }))
  })
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup()
  })

  it("checks the credentials with GET /{phone_number_id} and the token as Bearer", async () => {
    const connection = await connect(provider, VALID)
    expect(connection.name).toBe("Chat app +1 555-555-0100")
    expect(fake.requests().map((r) => [r.method, r.path, r.headers.authorization])).toEqual([
      ["GET", "/1065550100", `Bearer ${VALID.access_token}`]
    ])
  })

  it("names the channel after its id when the operator gives no display number", async () => {
    fake.script("GET", "/{phone_number_id}", { json: { id: "1065550100", verified_name: "Shop" } })
    expect(await connect(provider, VALID)).toEqual({
      external_id: "1065550100",
      name: "Chat app 1065550100",
      config: { phone_number_id: "1065550100", business_account_id: "2065550100" },
      secrets: { access_token: VALID.access_token }
    })
  })

  it("an auth error names the access_token field, in the operator's words for a person when it has them", async () => {
    fake.script(
      "GET",
      "/{phone_number_id}",
      graphError(401, { code: 190, error_subcode: 463, message: "Error validating access token: Session has expired", error_user_msg: "Your token has expired." }),
      graphError(403, { code: 200, message: "(#200) Permissions error" })
    )
    expect((await refusal(provider, VALID)).fields).toEqual({ access_token: "Refused by the operator: Your token has expired." })
    expect((await refusal(provider, VALID)).fields).toEqual({ access_token: "Refused by the operator: (#200) Permissions error" })
  })

  it("a number the operator does not know names the phone_number_id field", async () => {
    fake.script("GET", "/{phone_number_id}", graphError(400, {
      code: 100,
      error_subcode: 33,
      message: "Unsupported get request. Object with ID '99999' does not exist, cannot be loaded due to missing permissions, or does not support this operation."
    }))
    const error = await refusal(provider, { ...VALID, phone_number_id: "99999" })
    expect(error.message).toBe("The operator refused these credentials.")
    expect(Object.keys(error.fields)).toEqual(["phone_number_id"])
    expect(error.fields.phone_number_id).toMatch(/^Refused by the operator: Unsupported get request/)
  })

  it("says the operator could not be reached when it is down, limiting or silent, blaming no field", async () => {
    fake.script(
      "GET",
      "/{phone_number_id}",
      { status: 503, body: "unavailable" },
      graphError(400, { code: 80007, message: "rate limit hit" }),
      { hang: true }
    )
    for (let i = 0; i < 3; i++) {
      const error = await refusal(provider, VALID)
      expect(error.message).toMatch(/operator could not be reached/)
      expect(error.fields).toEqual({})
    }
  })
})
