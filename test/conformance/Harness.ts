import { type Effect, type Exit, Layer, ManagedRuntime } from "effect"
import { afterAll, beforeAll, describe } from "vitest"
import type { EventEnvelope } from "../../src/kernel/EventEnvelope.ts"
import type { StorageAdapter, StorageCapabilities, StoredOutboxEvent, StoredRows, StoredTable } from "./StorageAdapter.ts"

/** One opened adapter as a suite's tests use it. */
export interface Harness<R, T extends StoredTable> {
  readonly capabilities: StorageCapabilities
  /** The rows as stored; lists of records come sorted by id, so a test can compare whole lists. */
  readonly stored: Pick<StoredRows, T>
  readonly run: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<A>
  readonly exit: <A, E>(effect: Effect.Effect<A, E, R>) => Promise<Exit.Exit<A, E>>
}

/** The harness of the running suite; it exists once `beforeAll` has opened the adapter. */
export type UseHarness<R, T extends StoredTable> = () => Harness<R, T>

/**
 * A group of conformance tests. Its type says what it needs: `R`, the ports the adapter's layer
 * must provide (the port under test and those it seeds rows with), and `T`, the tables it checks
 * writes in, whose direct readers the adapter must give.
 */
export interface Suite<R, T extends StoredTable> {
  /** Registers the suite under `describe(name)`: `open` is called once before it and the adapter closed after it. */
  (name: string, open: () => Promise<StorageAdapter<R, T>>): void
  /** Registers the tests against an adapter the caller opens and closes: how several suites share one database. */
  readonly register: (adapter: () => StorageAdapter<R, T>) => void
}

/** Orders records by id, so lists read in any order compare whole. */
export const byId = (a: { readonly id: string }, b: { readonly id: string }): number => a.id.localeCompare(b.id)

/** The events of stored outbox rows, in the rows' order. */
export const eventsOf = (rows: ReadonlyArray<StoredOutboxEvent>): ReadonlyArray<EventEnvelope> => rows.map((row) => row.event)

// The readers answering with lists "in any order": sorted here, so tests compare whole lists.
const LISTS: ReadonlySet<StoredTable> = new Set<StoredTable>([
  "contacts",
  "channels",
  "connectTokens",
  "webhookEndpoints",
  "webhookDeliveries",
  "conversations",
  "messages",
  "attachments",
  "emailIntegrations",
  "emailMessages",
  "emailAttachments",
  "lists",
  "campaigns",
  "flowDefinitions",
  "flowVersions",
  "flowSessions",
  "customFields",
  "tags",
  "teamChatChannels",
  "teamChatMessages"
])

/** The adapter's readers of `tables`, lists sorted by id; a missing reader fails the suite, naming it. */
const readersOf = <T extends StoredTable>(suite: string, rows: Partial<StoredRows>, tables: ReadonlyArray<T>) => {
  const missing = tables.filter((table) => typeof rows[table] !== "function")
  if (missing.length > 0) {
    throw new Error(
      `the ${suite} suite checks its writes by reading the database directly: storedRows lacks ${missing.join(", ")}`
    )
  }
  const sorted = (read: (key: string) => Promise<ReadonlyArray<{ readonly id: string }>>) => async (key: string) =>
    [...await read(key)].sort(byId)
  // Each entry keeps its reader's own type; the map over keys cannot say so.
  return Object.fromEntries(tables.map((table) => [table, LISTS.has(table) ? sorted(rows[table] as never) : rows[table]])) as Pick<
    StoredRows,
    T
  >
}

/**
 * Makes a suite: `tests` run against the adapter's ports, with `services` (use cases a suite drives,
 * built over those ports) added. Called with a name and an opener, it runs on its own database;
 * `register` runs it on one its caller opened.
 */
export const makeSuite = <R, T extends StoredTable, S = never>(definition: {
  readonly name: string
  readonly tables: ReadonlyArray<T>
  // What the services need never decides what the suite needs: `R` comes from the suite's declared type.
  readonly services?: Layer.Layer<S, never, NoInfer<R>>
  readonly tests: (h: UseHarness<R | S, T>) => void
}): Suite<R, T> => {
  const register = (adapter: () => StorageAdapter<R, T>): void => {
    describe(definition.name, () => {
      let harness: Harness<R | S, T> | undefined
      let runtime: ManagedRuntime.ManagedRuntime<R | S, never> | undefined
      beforeAll(() => {
        const opened = adapter()
        const stored = readersOf(definition.name, opened.storedRows, definition.tables)
        // Without services `S` is never, which the empty layer provides.
        const services = (definition.services ?? Layer.empty) as Layer.Layer<S, never, R>
        const made = ManagedRuntime.make(services.pipe(Layer.provideMerge(opened.layer)))
        runtime = made
        harness = {
          capabilities: opened.capabilities,
          stored,
          run: (effect) => made.runPromise(effect),
          exit: (effect) => made.runPromiseExit(effect)
        }
      })
      afterAll(async () => {
        await runtime?.dispose()
      })
      definition.tests(() => {
        if (harness === undefined) throw new Error(`the ${definition.name} suite has no adapter: it did not open`)
        return harness
      })
    })
  }
  return Object.assign((name: string, open: () => Promise<StorageAdapter<R, T>>) => describeOpened(name, open, register), { register })
}

/** Registers `register`'s tests under `describe(name)` against the adapter `open` gives, closed after them. */
export const describeOpened = <R, T extends StoredTable>(
  name: string,
  open: () => Promise<StorageAdapter<R, T>>,
  register: (adapter: () => StorageAdapter<R, T>) => void
): void => {
  describe(name, () => {
    let adapter: StorageAdapter<R, T> | undefined
    beforeAll(async () => {
      adapter = await open()
    })
    afterAll(async () => {
      await adapter?.close()
    })
    register(() => {
      if (adapter === undefined) throw new Error(`storage adapter ${name} did not open`)
      return adapter
    })
  })
}
