/** A URL-safe name (tenants, lists): lower-case letters, digits and single hyphens, 1 to 63 characters, no hyphen at either end. */
export const SLUG_PATTERN = /^[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){0,62}$/

/**
 * The URL-safe base slug of a display name: accents folded ("Café" → "cafe"), every run of other
 * characters one hyphen, at most 50 characters so numbered variants still fit; "workspace" when
 * nothing usable remains (a name in a non-Latin script, say).
 */
export const slugify = (name: string): string => {
  const base = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .slice(0, 50)
    .replace(/^-+|-+$/g, "")
  return base === "" ? "workspace" : base
}

/** The `n`-th candidate for a base slug: the base itself, then `base-2`, `base-3`, … */
export const candidate = (base: string, n: number): string => (n <= 1 ? base : `${base}-${n}`)
