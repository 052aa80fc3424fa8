/** A 0/1 integer standing for a boolean. */
export type Flag = 0 | 1
