import { Effect, Layer, Option } from "effect"
import { type ContactRecord, ContactStore } from "../../../src/ports/ContactStore.ts"
import { atomically, KyselyConnection, query } from "../Connection.ts"
import { eraseContact } from "../ContactErasure.ts"
import type { ContactsTable } from "../Database.ts"
import { filterOnly, jsonBatch } from "../JsonBatch.ts"
import { sql } from "kysely"

const CONTACT_COLUMNS = ["id", "tenant_id", "name", "phone", "email", "language", "custom_fields", "created_at", "updated_at"]

const fromRow = (row: ContactsTable): ContactRecord => ({
  ...row,
  custom_fields: JSON.parse(row.custom_fields) as Record<string, unknown>
})

const toRow = (contact: ContactRecord): ContactsTable => ({
  ...contact,
  custom_fields: JSON.stringify(contact.custom_fields)
})

const chunks = <A>(items: ReadonlyArray<A>, size: number): Array<ReadonlyArray<A>> =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size))

/** `ContactStore` on Kysely. */
export const contactStoreLayer: Layer.Layer<ContactStore, never, KyselyConnection> = Layer.effect(
  ContactStore,
  Effect.gen(function*() {
    const connection = yield* KyselyConnection
    const { dialect } = connection
    // Only a held phone skips a candidate: one whose email or id is taken fails the batch, as `insert`
    // fails, rather than going missing from the answer.
    const insertMany = jsonBatch({
      dialect,
      name: "contacts-insert",
      columns: CONTACT_COLUMNS,
      template: (rows) =>
        `INSERT INTO contacts (${CONTACT_COLUMNS.join(", ")}) SELECT ${CONTACT_COLUMNS.map((c) => `r.${c}`).join(", ")}
        FROM ${rows} WHERE true ON CONFLICT (tenant_id, phone) DO NOTHING RETURNING id`
    })
    // Through `contacts_phone_idx`, the tenant only a filter: with every other index led by the tenant,
    // and statistics taken while the table was nearly empty, PostgreSQL matched only the tenant and read
    // every contact of it for each batch.
    const byPhones = jsonBatch({
      dialect,
      name: "contacts-by-phones",
      columns: ["phone"],
      template: (_rows, keyIn) => `SELECT * FROM contacts WHERE ${keyIn("phone")} AND ${filterOnly("tenant_id")} = $2`
    })
    return ContactStore.of({
      // Most senders are known: a look first, and an insert only of the phones not found (in phone
      // order, so two writers inserting the same ones wait for each other rather than deadlock), then a
      // look at those another writer stored first.
      findOrInsertByPhones: (tenantId, candidates) =>
        candidates.length === 0 ? Effect.succeed({ contacts: [], inserted: new Set<string>() }) : query(connection, async (db) => {
          const look = async (phones: ReadonlyArray<string | null>) =>
            (await byPhones.run<ContactsTable>(db, phones.map((phone) => ({ phone })), [tenantId])).map(fromRow)
          const found = await look(candidates.map((c) => c.phone))
          const known = new Set(found.map((contact) => contact.phone))
          const missing = candidates.filter((c) => !known.has(c.phone)).sort((a, b) => (a.phone! < b.phone! ? -1 : 1))
          if (missing.length === 0) return { contacts: found, inserted: new Set<string>() }
          const inserted = new Set((await insertMany.run<{ readonly id: string }>(db, missing.map(toRow))).map((row) => row.id))
          const stored = missing.filter((c) => inserted.has(c.id))
          // A phone given twice is stored once: only a phone none of the batch took was another transaction's.
          const storedPhones = new Set(stored.map((c) => c.phone))
          const raced = missing.filter((c) => !inserted.has(c.id) && !storedPhones.has(c.phone))
          return {
            contacts: [...found, ...stored, ...(raced.length === 0 ? [] : await look(raced.map((c) => c.phone)))],
            inserted
          }
        }),
      insert: (contact) =>
        query(connection, (db) => db.insertInto("contacts").values(toRow(contact)).execute()).pipe(Effect.asVoid),
      get: (tenantId, id) =>
        query(connection, (db) =>
          db.selectFrom("contacts").selectAll().where("tenant_id", "=", tenantId).where("id", "=", id)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow))),
      update: (tenantId, contact) => {
        const { id: _id, tenant_id: _tenant, created_at: _created, ...changes } = toRow(contact)
        return query(connection, (db) =>
          db.updateTable("contacts").set(changes).where("tenant_id", "=", tenantId).where("id", "=", contact.id)
            .executeTakeFirst())
          .pipe(Effect.map((result) => Number(result.numUpdatedRows) > 0))
      },
      list: (tenantId, window) =>
        query(connection, async (db) => {
          const items = await db.selectFrom("contacts").selectAll().where("tenant_id", "=", tenantId)
            .orderBy("created_at", "desc").orderBy("id", "desc").limit(window.limit).offset(window.offset).execute()
          const count = await db.selectFrom("contacts").select((eb) => eb.fn.countAll().as("n"))
            .where("tenant_id", "=", tenantId).executeTakeFirstOrThrow()
          return { items: items.map(fromRow), total: Number(count.n) }
        }),
      getMany: (tenantId, ids) =>
        ids.length === 0 ? Effect.succeed([]) : Effect.map(
          Effect.forEach(chunks(ids, 500), (part) =>
            query(connection, (db) =>
              // By the ids (the primary key); the tenant compared on each row: with stale statistics a
              // tenant-led index looked as good and was walked whole for every page of ids.
              db.selectFrom("contacts").selectAll().where(sql.raw(filterOnly("tenant_id")), "=", tenantId).where("id", "in", [...part])
                .execute())),
          (pages) => pages.flat().map(fromRow)
        ),
      pageById: (tenantId, afterId, limit) =>
        query(connection, (db) => {
          let q = db.selectFrom("contacts").selectAll().where("tenant_id", "=", tenantId)
          if (afterId !== null) q = q.where("id", ">", afterId)
          return q.orderBy("id").limit(limit).execute()
        }).pipe(Effect.map((rows) => rows.map(fromRow))),
      erase: (tenantId, contactId, at) =>
        atomically(connection, (db) => eraseContact(db, dialect, tenantId, contactId, at))
          .pipe(Effect.map(Option.fromUndefinedOr)),
      findBy: (tenantId, field, value) =>
        query(connection, (db) =>
          db.selectFrom("contacts").selectAll().where("tenant_id", "=", tenantId).where(field, "=", value)
            .executeTakeFirst())
          .pipe(Effect.map((row) => Option.map(Option.fromNullishOr(row), fromRow)))
    })
  })
)
