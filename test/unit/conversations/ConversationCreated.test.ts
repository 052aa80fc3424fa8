import { randomUUID } from "node:crypto"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ConversationService, openKey } from "../../../src/conversations/ConversationService.ts"
import { StorageError } from "../../../src/kernel/StorageError.ts"
import { ConversationStore } from "../../../src/ports/ConversationStore.ts"
import { OutboxStore } from "../../../src/ports/OutboxStore.ts"
import { Transactor } from "../../../src/ports/Transactor.ts"
import { testDatabases } from "../../support/Databases.ts"
import { bootstrap, startTestApp, type TestApp } from "../../support/TestApp.ts"

// Issue 28's third race: `conversation.created` used to commit apart from its conversation (the
// row and the event were two autocommits, outside any transaction), so a failure between them left
// a conversation nobody was told of. Now they commit together, in the caller's transaction or one of
// their own. The failure is injected into the outbox's append, over real storage.

const databases = testDatabases.filter((database) => database.name === "sqlite-memory" || database.name === "postgres")

/** The append that fails, as a database gone away would. */
const OUTBOX_DOWN = new StorageError({ reason: "Unavailable", message: "the outbox is unreachable (injected)" })
/** A caller's own failure after it opened conversations in its transaction. */
const CALLER_FAILED = new StorageError({ reason: "Unknown", message: "the caller failed after opening (injected)" })

describe.each(databases)("a new conversation and its conversation.created ($name)", (database) => {
  let test: TestApp
  let tenantId: string
  beforeAll(async () => {
    test = await startTestApp(await database.open())
    tenantId = (await bootstrap(test, "conversation-created@example.com")).tenant_id
  })
  afterAll(() => test?.close())

  /**
   * Runs `use` with the conversation service built over the real storage, its outbox's append
   * failing when `outbox` is "failing"; resolves to the exit.
   */
  const withService = <A, E>(
    outbox: "failing" | "working",
    use: (conversations: ConversationService["Service"]) => Effect.Effect<A, E, Transactor>
  ) =>
    test.app.run(Effect.exit(Effect.gen(function*() {
      const real = yield* OutboxStore
      const conversations = yield* ConversationService.pipe(
        // Fresh: not the app's own service, which the app's layers already built over the working outbox.
        Effect.provide(Layer.fresh(ConversationService.layer)),
        Effect.provideService(OutboxStore, OutboxStore.of({ ...real, append: outbox === "failing" ? () => Effect.fail(OUTBOX_DOWN) : real.append }))
      )
      return yield* use(conversations)
    })))
  const inTransaction = <A, E>(effect: Effect.Effect<A, E>) => Transactor.use((t) => t.withTransaction(effect))

  /** The tenant's stored conversations of `contactId`. */
  const conversationsOf = (contactId: string) =>
    test.app.run(ConversationStore.use((s) => s.list(tenantId, { contact_id: contactId }, { limit: 100, offset: 0 }))).then((page) => page.items)
  /** The `conversation.created` events of the tenant naming a conversation of `contactId`. */
  const announcedFor = async (contactId: string) => {
    const events = await test.app.run(OutboxStore.use((s) => s.listByTenant(tenantId, { limit: 10_000, type: "conversation.created" })))
    return events.filter((e) => (e.data as { conversation: { contact_id: string } }).conversation.contact_id === contactId)
  }
  const failedWith = (exit: Exit.Exit<unknown, unknown>, error: StorageError) => {
    expect(Exit.isFailure(exit)).toBe(true)
    if (Exit.isFailure(exit)) expect(Cause.squash(exit.cause)).toBe(error)
  }

  it("openFor: the event's append failing leaves no conversation; once it works, both are stored, the event naming the row", async () => {
    const channelId = randomUUID()
    const contactId = randomUUID()
    const open = (conversations: ConversationService["Service"]) => conversations.openFor({ tenantId, channelId, contactId })

    failedWith(await withService("failing", open), OUTBOX_DOWN)
    expect(await conversationsOf(contactId)).toEqual([])
    expect(await test.app.run(ConversationStore.use((s) => s.findOpen(tenantId, channelId, contactId)))).toEqual(Option.none())
    expect(await announcedFor(contactId)).toEqual([])

    const opened = await withService("working", open)
    if (Exit.isFailure(opened)) throw Cause.squash(opened.cause)
    expect(opened.value.created).toBe(true)
    expect(await conversationsOf(contactId)).toEqual([opened.value.conversation])
    const announced = await announcedFor(contactId)
    expect(announced.map((e) => (e.data as any).conversation)).toEqual([
      expect.objectContaining({ id: opened.value.conversation.id, channel_id: channelId, contact_id: contactId, status: "open" })
    ])
    // Found the next time, not announced again.
    const again = await withService("failing", open)
    expect(Exit.isSuccess(again) && again.value).toEqual({ conversation: opened.value.conversation, created: false })
    expect(await announcedFor(contactId)).toHaveLength(1)
  })

  it("startThread: the event's append failing leaves no email thread", async () => {
    const contactId = randomUUID()
    failedWith(
      await withService("failing", (conversations) => conversations.startThread({ tenantId, channelId: randomUUID(), contactId, subject: "Your order" })),
      OUTBOX_DOWN
    )
    expect(await conversationsOf(contactId)).toEqual([])
    expect(await announcedFor(contactId)).toEqual([])
  })

  // The contract the other two rest on (it held before the fix too): inside a caller's transaction
  // nothing is committed on its own.
  it("openFor and openForMany join the caller's transaction: it failing after them keeps neither conversations nor events", async () => {
    const channelId = randomUUID()
    const [one, two, three] = [randomUUID(), randomUUID(), randomUUID()]
    const failedAfter = await withService("working", (conversations) =>
      inTransaction(Effect.gen(function*() {
        yield* conversations.openFor({ tenantId, channelId, contactId: one })
        const many = yield* conversations.openForMany(tenantId, [{ channelId, contactId: two }, { channelId, contactId: three }])
        expect([...many.keys()].sort()).toEqual([openKey(channelId, two), openKey(channelId, three)].sort())
        return yield* Effect.fail(CALLER_FAILED)
      })))
    failedWith(failedAfter, CALLER_FAILED)
    for (const contactId of [one, two, three]) {
      expect(await conversationsOf(contactId)).toEqual([])
      expect(await announcedFor(contactId)).toEqual([])
    }
    // The batch form with its own append failing, in its caller's transaction: nothing either.
    failedWith(
      await withService("failing", (conversations) => inTransaction(conversations.openForMany(tenantId, [{ channelId, contactId: two }]))),
      OUTBOX_DOWN
    )
    expect(await conversationsOf(two)).toEqual([])
  })
})
