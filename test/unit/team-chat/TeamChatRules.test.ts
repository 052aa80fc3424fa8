import { Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import type { ApiKeyPrincipal } from "../../../src/kernel/Principal.ts"
import type { TeamChatChannelWithMembers } from "../../../src/ports/TeamChatStore.ts"
import {
  actorOf,
  admitChannel,
  admitDirectMessage,
  type Belongs,
  dmKey,
  isMember,
  NOT_BOUND,
  offersSummaries
} from "../../../src/team-chat/TeamChatRules.ts"

// Membership and summary-offer rules of team chat, as pure functions.

const HOME = "10000000-0000-4000-8000-000000000001"
const SHARED_A = "10000000-0000-4000-8000-00000000000a"
const SHARED_B = "10000000-0000-4000-8000-00000000000b"
const ME = "20000000-0000-4000-8000-000000000001"
const COLLEAGUE = "20000000-0000-4000-8000-000000000002"
const PARTNER = "20000000-0000-4000-8000-000000000003"
const STRANGER = "20000000-0000-4000-8000-000000000009"

/** Who belongs where: `tenant/user` pairs. */
const belonging = (...pairs: ReadonlyArray<readonly [string, string]>): Belongs => {
  const set = new Set(pairs.map(([t, u]) => `${t}/${u}`))
  return (tenantId, userId) => set.has(`${tenantId}/${userId}`)
}

const actor = { tenantId: HOME, userId: ME }

describe("the actor of a team chat request", () => {
  const principal = (userId: string | null): ApiKeyPrincipal => ({
    kind: "api_key",
    keyId: "key",
    tenantId: HOME,
    homeTenantId: HOME,
    isParent: false,
    scopes: new Set(["team_chat:read"]),
    userId
  })

  it("is the user a bound key acts as, in the tenant the request acts in", () => {
    expect(Effect.runSync(actorOf(principal(ME)))).toEqual({ tenantId: HOME, userId: ME })
  })

  it("does not exist for a key bound to nobody: 403 saying how to get a bound key", () => {
    const exit = Effect.runSyncExit(actorOf(principal(null)))
    expect(exit).toEqual(Exit.fail(expect.objectContaining({ _tag: "Forbidden", message: NOT_BOUND })))
    expect(NOT_BOUND).toMatch(/--user/)
  })
})

describe("which channels offer summaries", () => {
  it("every channel and direct message but those shared across workspaces or with external guests", () => {
    expect(offersSummaries({ shared_with_tenant_ids: [], has_external_guests: false })).toBe(true)
    expect(offersSummaries({ shared_with_tenant_ids: [SHARED_A], has_external_guests: false })).toBe(false)
    expect(offersSummaries({ shared_with_tenant_ids: [], has_external_guests: true })).toBe(false)
    expect(offersSummaries({ shared_with_tenant_ids: [SHARED_A, SHARED_B], has_external_guests: true })).toBe(false)
  })
})

describe("membership", () => {
  const found = (userIds: ReadonlyArray<string>): TeamChatChannelWithMembers => ({
    channel: {
      id: "c",
      tenant_id: HOME,
      kind: "channel",
      name: "n",
      shared_with_tenant_ids: [],
      has_external_guests: false,
      dm_key: null,
      created_by: ME,
      created_at: "2026-11-26T09:00:00.000Z"
    },
    members: userIds.map((u) => ({ channel_id: "c", user_id: u, tenant_id: HOME, joined_at: "2026-11-26T09:00:00.000Z" }))
  })

  it("is being among the channel's members, nothing else", () => {
    expect(isMember(found([ME, COLLEAGUE]), COLLEAGUE)).toBe(true)
    expect(isMember(found([ME]), COLLEAGUE)).toBe(false)
    expect(isMember(found([]), ME)).toBe(false)
  })

  it("of a direct message is keyed by its participants in any order, repeats ignored", () => {
    expect(dmKey([COLLEAGUE, ME])).toBe(`${ME},${COLLEAGUE}`)
    expect(dmKey([ME, COLLEAGUE, ME])).toBe(dmKey([COLLEAGUE, ME]))
    expect(dmKey([ME, COLLEAGUE])).not.toBe(dmKey([ME, COLLEAGUE, PARTNER]))
  })
})

describe("who a new channel admits", () => {
  it("the creator through the acting tenant, and each member through the first tenant of the channel they belong to", () => {
    const belongs = belonging([HOME, ME], [SHARED_A, ME], [SHARED_B, ME], [HOME, COLLEAGUE], [SHARED_B, PARTNER], [SHARED_A, COLLEAGUE])
    const admitted = admitChannel({ actor, sharedWith: [SHARED_A, SHARED_B], memberUserIds: [PARTNER, COLLEAGUE, ME, PARTNER], belongs })
    expect(admitted).toEqual({
      ok: true,
      value: {
        sharedWith: [SHARED_A, SHARED_B],
        members: [
          { user_id: ME, tenant_id: HOME },
          { user_id: PARTNER, tenant_id: SHARED_B },
          { user_id: COLLEAGUE, tenant_id: HOME }
        ]
      }
    })
  })

  it("refuses each unknown user and each workspace the creator does not belong to, naming the element, all at once", () => {
    const belongs = belonging([HOME, ME], [SHARED_A, ME], [HOME, COLLEAGUE], [SHARED_B, PARTNER])
    const admitted = admitChannel({
      actor,
      sharedWith: [SHARED_A, HOME, SHARED_B, SHARED_A],
      memberUserIds: [COLLEAGUE, STRANGER, PARTNER],
      belongs
    })
    expect(admitted).toEqual({
      ok: false,
      issues: [
        { loc: ["body", "shared_with_tenant_ids", 1], msg: "This is the channel's own workspace; list only other workspaces", type: "value_error" },
        { loc: ["body", "shared_with_tenant_ids", 2], msg: `Unknown workspace ${SHARED_B}: not one you belong to`, type: "value_error" },
        { loc: ["body", "shared_with_tenant_ids", 3], msg: `Workspace ${SHARED_A} is listed twice`, type: "value_error" },
        {
          loc: ["body", "member_user_ids", 1],
          msg: `Unknown user ${STRANGER}: not a user of this workspace or of a workspace the channel is shared with`,
          type: "value_error"
        },
        // The partner belongs only to a workspace the channel could not be shared with.
        {
          loc: ["body", "member_user_ids", 2],
          msg: `Unknown user ${PARTNER}: not a user of this workspace or of a workspace the channel is shared with`,
          type: "value_error"
        }
      ]
    })
  })

  it("of one workspace only: its users, and the creator alone when nobody else is named", () => {
    const belongs = belonging([HOME, COLLEAGUE], [SHARED_A, PARTNER])
    expect(admitChannel({ actor, sharedWith: [], memberUserIds: [], belongs })).toEqual({
      ok: true,
      value: { sharedWith: [], members: [{ user_id: ME, tenant_id: HOME }] }
    })
    expect(admitChannel({ actor, sharedWith: [], memberUserIds: [PARTNER], belongs })).toEqual({
      ok: false,
      issues: [{ loc: ["body", "member_user_ids", 0], msg: `Unknown user ${PARTNER}: not a user of this workspace`, type: "value_error" }]
    })
  })
})

describe("who a direct message is between", () => {
  const belongs = belonging([HOME, COLLEAGUE], [HOME, PARTNER], [SHARED_A, STRANGER])

  it("the caller and the users named, each of the acting workspace, repeats and the caller's own id ignored", () => {
    expect(admitDirectMessage({ actor, userIds: [COLLEAGUE, ME, COLLEAGUE, PARTNER], belongs })).toEqual({
      ok: true,
      value: [
        { user_id: ME, tenant_id: HOME },
        { user_id: COLLEAGUE, tenant_id: HOME },
        { user_id: PARTNER, tenant_id: HOME }
      ]
    })
  })

  it("refuses users of other workspaces, naming each, and a direct message with oneself alone", () => {
    expect(admitDirectMessage({ actor, userIds: [COLLEAGUE, STRANGER], belongs })).toEqual({
      ok: false,
      issues: [{ loc: ["body", "user_ids", 1], msg: `Unknown user ${STRANGER}: not a user of this workspace`, type: "value_error" }]
    })
    expect(admitDirectMessage({ actor, userIds: [ME], belongs })).toEqual({
      ok: false,
      issues: [{ loc: ["body", "user_ids"], msg: "Name at least one other user", type: "value_error" }]
    })
  })
})
