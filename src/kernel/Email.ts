/** A pragmatic address check: one `@`, no spaces or control characters, a dot in the domain. */
export const EMAIL_PATTERN = /^[^\s@\p{Cc}]{1,64}@[^\s@.\p{Cc}]+(\.[^\s@.\p{Cc}]+)+$/u

/** The address as stored and compared: trimmed and lower-cased, so lookups are case-insensitive. */
export const normalizeEmail = (email: string): string => email.trim().toLowerCase()
