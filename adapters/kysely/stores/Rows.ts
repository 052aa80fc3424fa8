import type { Flag } from "../Database.ts"

/** A boolean as stored (0/1). */
export const toFlag = (value: boolean): Flag => (value ? 1 : 0)

/** A stored 0/1 (PostgreSQL may hand back a string for some integer types) as a boolean. */
export const fromFlag = (value: Flag | number | string): boolean => Number(value) === 1
