import type { SummarySection } from "../../src/ports/Summarizer.ts"

/** The spec's section keys of each kind of summary, in order, with the heading each is written under. */
export const SECTION_HEADINGS = {
  image: [["description", "Description"], ["text", "Text"]],
  pdf: [["summary", "Summary"], ["key_facts", "Key facts"]]
} as const satisfies Record<"image" | "pdf", ReadonlyArray<readonly [string, string]>>

const headingOf = (key: string): string => {
  for (const pairs of Object.values(SECTION_HEADINGS)) {
    for (const [k, heading] of pairs) if (k === key) return heading
  }
  return key
}

/** A summary's plain text: each section under its heading (`Summary:`), a blank line between. */
export const joinSections = (sections: ReadonlyArray<SummarySection>): string =>
  sections.map(({ key, text }) => `${headingOf(key)}:\n${text}`).join("\n\n")

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")

/**
 * Splits a model's answer into `kind`'s sections. A heading is a line holding only a section's
 * heading (Markdown `#` or bold, and a closing colon, allowed), or the heading and a colon followed
 * by the section's first line; text before the first heading is dropped. Empty unless every
 * section of the kind is found, once, with some text.
 */
export const splitSections = (answer: string, kind: "image" | "pdf"): ReadonlyArray<SummarySection> => {
  const pairs = SECTION_HEADINGS[kind]
  const names = pairs.map(([, heading]) => escapeRegExp(heading).replace(/ /g, "[ _-]?")).join("|")
  const headingLine = new RegExp(
    `^\\s*(?:#{1,6}\\s*)?(?:\\*\\*|__)?\\s*(${names})\\s*(?:(?:\\*\\*|__)\\s*:?|:\\s*(?:\\*\\*|__)?)?\\s*$` +
      `|^\\s*(?:#{1,6}\\s*)?(?:\\*\\*|__)?\\s*(${names})\\s*(?:\\*\\*|__)?\\s*:\\s*(?:\\*\\*|__)?\\s*(\\S.*)$`,
    "i"
  )
  const keyOf = (name: string) =>
    pairs.find(([, heading]) => heading.toLowerCase().replace(/ /g, "") === name.toLowerCase().replace(/[ _-]/g, ""))?.[0]
  const found = new Map<string, Array<string>>()
  let current: Array<string> | undefined
  for (const line of answer.replace(/\r\n?/g, "\n").split("\n")) {
    const match = headingLine.exec(line)
    const key = match === null ? undefined : keyOf(match[1] ?? match[2] ?? "")
    if (key === undefined) {
      current?.push(line)
      continue
    }
    if (found.has(key)) return []
    current = match?.[3] === undefined ? [] : [match[3]]
    found.set(key, current)
  }
  const sections = pairs.map(([key]) => ({ key, text: (found.get(key) ?? []).join("\n").trim() }))
  return sections.every(({ text }) => text !== "") ? sections : []
}
