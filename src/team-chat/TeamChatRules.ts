import { Effect } from "effect"
import { Forbidden, type ValidationIssue } from "../kernel/ApiError.ts"
import type { ApiKeyPrincipal } from "../kernel/Principal.ts"
import type { TeamChatChannelRecord, TeamChatChannelWithMembers } from "../ports/TeamChatStore.ts"

/** A person acting in team chat: the user a bound API key acts as, in the tenant the request acts in. */
export interface TeamChatActor {
  readonly tenantId: string
  readonly userId: string
}

/** The 403 body's text for an API key bound to no user. */
export const NOT_BOUND =
  "Team chat acts as a user: this API key is bound to none. Use a key bound to a user (api-key create --user ID)"

/** The actor of a request, or 403 when its key is bound to no user. */
export const actorOf = (principal: ApiKeyPrincipal): Effect.Effect<TeamChatActor, Forbidden> =>
  principal.userId === null
    ? Effect.fail(new Forbidden({ message: NOT_BOUND }))
    : Effect.succeed({ tenantId: principal.tenantId, userId: principal.userId })

/** Channels shared across workspaces and channels with external guests never offer summaries; others do. */
export const offersSummaries = (
  channel: Pick<TeamChatChannelRecord, "shared_with_tenant_ids" | "has_external_guests">
): boolean => channel.shared_with_tenant_ids.length === 0 && !channel.has_external_guests

/** Whether the user is a member of the channel (or a participant of the direct message). */
export const isMember = (found: TeamChatChannelWithMembers, userId: string): boolean =>
  found.members.some((member) => member.user_id === userId)

/** The key of a direct message between these users (any order, repeats ignored): their ids sorted and comma-joined. */
export const dmKey = (userIds: ReadonlyArray<string>): string => [...new Set(userIds)].sort().join(",")

/** A user who may join, and the tenant they are admitted through. */
export interface Admission {
  readonly user_id: string
  readonly tenant_id: string
}

/** Whether `userId` belongs to `tenantId` (owns its billing account or holds a live key bound to them in it). */
export type Belongs = (tenantId: string, userId: string) => boolean

/** Admissions, or the request's problems, each naming its element. */
export type Admitted<A> =
  | { readonly ok: true; readonly value: A }
  | { readonly ok: false; readonly issues: ReadonlyArray<ValidationIssue> }

const issue = (loc: ReadonlyArray<string | number>, msg: string): ValidationIssue => ({ loc: ["body", ...loc], msg, type: "value_error" })

const unknownUser = (userId: string, shared: boolean) =>
  shared
    ? `Unknown user ${userId}: not a user of this workspace or of a workspace the channel is shared with`
    : `Unknown user ${userId}: not a user of this workspace`

/**
 * Who a new channel admits. The tenants that see it are the acting tenant and `sharedWith`, each of
 * which the creator must belong to (the acting tenant's own name among them is refused, as is a
 * tenant twice). The creator joins through the acting tenant; each other member through the acting
 * tenant if they belong to it, else through the first shared tenant they belong to; a user belonging
 * to none is refused, naming the element, without saying whether the user exists.
 */
export const admitChannel = (input: {
  readonly actor: TeamChatActor
  readonly sharedWith: ReadonlyArray<string>
  readonly memberUserIds: ReadonlyArray<string>
  readonly belongs: Belongs
}): Admitted<{ readonly sharedWith: ReadonlyArray<string>; readonly members: ReadonlyArray<Admission> }> => {
  const issues: Array<ValidationIssue> = []
  const shared: Array<string> = []
  input.sharedWith.forEach((tenantId, i) => {
    const loc = ["shared_with_tenant_ids", i]
    if (tenantId === input.actor.tenantId) issues.push(issue(loc, "This is the channel's own workspace; list only other workspaces"))
    else if (shared.includes(tenantId)) issues.push(issue(loc, `Workspace ${tenantId} is listed twice`))
    else if (!input.belongs(tenantId, input.actor.userId)) issues.push(issue(loc, `Unknown workspace ${tenantId}: not one you belong to`))
    else shared.push(tenantId)
  })
  const members: Array<Admission> = [{ user_id: input.actor.userId, tenant_id: input.actor.tenantId }]
  input.memberUserIds.forEach((userId, i) => {
    if (members.some((m) => m.user_id === userId)) return
    const through = [input.actor.tenantId, ...shared].find((tenantId) => input.belongs(tenantId, userId))
    if (through === undefined) issues.push(issue(["member_user_ids", i], unknownUser(userId, input.sharedWith.length > 0)))
    else members.push({ user_id: userId, tenant_id: through })
  })
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: { sharedWith: shared, members } }
}

/**
 * Who a direct message is between: the actor and `userIds` (repeats and the actor's own id ignored),
 * each of whom must belong to the acting tenant; at least one other user.
 */
export const admitDirectMessage = (input: {
  readonly actor: TeamChatActor
  readonly userIds: ReadonlyArray<string>
  readonly belongs: Belongs
}): Admitted<ReadonlyArray<Admission>> => {
  const issues: Array<ValidationIssue> = []
  const participants: Array<Admission> = [{ user_id: input.actor.userId, tenant_id: input.actor.tenantId }]
  input.userIds.forEach((userId, i) => {
    if (participants.some((p) => p.user_id === userId)) return
    if (input.belongs(input.actor.tenantId, userId)) participants.push({ user_id: userId, tenant_id: input.actor.tenantId })
    else issues.push(issue(["user_ids", i], unknownUser(userId, false)))
  })
  if (issues.length === 0 && participants.length < 2) issues.push(issue(["user_ids"], "Name at least one other user"))
  return issues.length > 0 ? { ok: false, issues } : { ok: true, value: participants }
}
