import { Option } from "effect"
import { expect, it } from "vitest"
import { AccountStore } from "../../src/ports/AccountStore.ts"
import { billingAccountRecord, userRecord } from "./Fixtures.ts"
import { makeSuite, type Suite } from "./Harness.ts"

/** AccountStore: users and billing accounts round-trip, and an owner lists only their own accounts, oldest first. */
export const accountStoreSuite: Suite<AccountStore, "user" | "billingAccount"> = makeSuite({
  name: "AccountStore",
  tables: ["user", "billingAccount"],
  tests: (h) => {
    it("stores a user and reads it back by id and by token lookup", async () => {
      const user = userRecord({ email: "zoë.ñandú@exämple.com" })
      await h().run(AccountStore.use((s) => s.insertUser(user)))

      expect(await h().stored.user(user.id)).toEqual(user)
      expect(Option.getOrUndefined(await h().run(AccountStore.use((s) => s.getUser(user.id))))).toEqual(user)
      expect(Option.getOrUndefined(await h().run(AccountStore.use((s) => s.findUserByTokenLookup(user.token_lookup)))))
        .toEqual(user)
    })

    it("finds no user for an unknown id or token lookup", async () => {
      const unknown = userRecord()
      expect(Option.isNone(await h().run(AccountStore.use((s) => s.getUser(unknown.id))))).toBe(true)
      expect(Option.isNone(await h().run(AccountStore.use((s) => s.findUserByTokenLookup(unknown.token_lookup)))))
        .toBe(true)
    })

    it("stores a billing account and reads it back", async () => {
      const user = userRecord()
      const account = billingAccountRecord(user.id, { name: "Ñandú & Söhne GmbH 🧾" })
      await h().run(AccountStore.use((s) => s.insertUser(user)))
      await h().run(AccountStore.use((s) => s.insertBillingAccount(account)))

      expect(await h().stored.billingAccount(account.id)).toEqual(account)
      expect(Option.getOrUndefined(await h().run(AccountStore.use((s) => s.getBillingAccount(account.id)))))
        .toEqual(account)
    })

    it("lists the accounts a user owns, oldest first, and nobody else's", async () => {
      const owner = userRecord()
      const other = userRecord()
      const newer = billingAccountRecord(owner.id, { created_at: "2026-11-22T12:00:00.000Z" })
      const older = billingAccountRecord(owner.id, { created_at: "2026-11-22T09:00:00.000Z" })
      const othersAccount = billingAccountRecord(other.id)
      await h().run(AccountStore.use((s) => s.insertUser(owner)))
      await h().run(AccountStore.use((s) => s.insertUser(other)))
      for (const account of [newer, older, othersAccount]) {
        await h().run(AccountStore.use((s) => s.insertBillingAccount(account)))
      }

      expect(await h().run(AccountStore.use((s) => s.listBillingAccountsOwnedBy(owner.id)))).toEqual([older, newer])
      expect(await h().run(AccountStore.use((s) => s.listBillingAccountsOwnedBy(other.id)))).toEqual([othersAccount])
    })
  }
})
