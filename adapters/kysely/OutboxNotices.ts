import pg from "pg"
import type { OutboxNoticesService } from "../../src/ports/OutboxNotices.ts"

/** The channel an append notifies on PostgreSQL, in the transaction that appends. */
export const OUTBOX_CHANNEL = "omnichannel_outbox"

/** How long a listener that lost its connection waits before connecting again. */
const RECONNECT_MS = 1_000

/** What a listening connection shows in `pg_stat_activity`. */
export const LISTENER_NAME = "omnichannel-core outbox listener"

/**
 * Other processes' outbox commits on PostgreSQL through LISTEN/NOTIFY, on one connection of its own
 * (outside the pool, which it would otherwise hold forever), opened when the first subscriber comes
 * and closed when the last one goes. A lost connection is opened again after a second. Each time it
 * starts listening (at first and after every reconnection) subscribers are told once, for whatever
 * was committed before it listened.
 */
export const makeOutboxNotices = (
  connectionString: string
): OutboxNoticesService & { readonly close: () => Promise<void> } => {
  const subscribers = new Set<() => void>()
  let client: pg.Client | undefined
  let retry: NodeJS.Timeout | undefined
  let closed = false
  const tell = () => {
    for (const onNotice of subscribers) onNotice()
  }
  const connect = () => {
    if (closed || client !== undefined || subscribers.size === 0) return
    const connection = new pg.Client({ connectionString, application_name: LISTENER_NAME })
    client = connection
    const lost = () => {
      if (client !== connection) return
      client = undefined
      connection.end().catch(() => undefined)
      if (!closed && subscribers.size > 0) retry = setTimeout(connect, RECONNECT_MS).unref()
    }
    connection.on("notification", tell)
    connection.on("error", lost)
    connection.on("end", lost)
    connection.connect()
      .then(() => connection.query(`LISTEN ${OUTBOX_CHANNEL}`))
      .then(tell, lost)
  }
  const stop = async () => {
    clearTimeout(retry)
    const connection = client
    client = undefined
    await connection?.end().catch(() => undefined)
  }
  return {
    subscribe: (onNotice) => {
      subscribers.add(onNotice)
      connect()
      return () => {
        subscribers.delete(onNotice)
        if (subscribers.size === 0) void stop()
      }
    },
    close: async () => {
      closed = true
      subscribers.clear()
      await stop()
    }
  }
}
