/** A pragmatic address check: one `@`, no spaces, a dot in the domain, at most 254 characters. */
export const EMAIL_PATTERN = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/

/** The address as stored and compared: trimmed and lower-cased, so lookups are case-insensitive. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase()
