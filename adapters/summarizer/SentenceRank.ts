/**
 * An extractive summary: the text cut into sentences, each sentence a TF-IDF vector of its words,
 * sentences linked by cosine similarity and ranked by PageRank over that graph (TextRank), and the
 * best few kept in their original order.
 */

/** How long a summary may get. */
export interface SummaryLimits {
  /** At most this many sentences (default 5). */
  readonly maxSentences?: number
  /** At most this many characters, whole sentences only (default 1,200). */
  readonly maxChars?: number
}

// Sentences ranked at most: the similarity graph grows with the square of their number.
const MAX_RANKED = 400
const DAMPING = 0.85
const ITERATIONS = 40
// Sentences this similar say the same thing: only the better-ranked one is kept.
const REDUNDANT = 0.7

// Words too common to tell sentences apart.
const STOPWORDS = new Set(
  ("a about above after again against all also am an and any are as at be because been before being below between " +
    "both but by can could did do does doing down during each few for from further had has have having he her here " +
    "hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now of off " +
    "on once only or other our ours ourselves out over own same she should so some such than that the their theirs them " +
    "themselves then there these they this those through to too under until up very was we were what when where which " +
    "while who whom why will with would you your yours yourself yourselves per within without upon via")
    .split(" ")
)

// Abbreviations whose full stop does not end a sentence.
const ABBREVIATIONS = new Set([
  "mr", "mrs", "ms", "dr", "prof", "st", "no", "nr", "vs", "etc", "inc", "ltd", "co", "corp", "jr", "sr", "e.g", "i.e",
  "approx", "dept", "fig", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "ref"
])

const wordCount = (sentence: string) => sentence.split(/\s+/).filter((w) => w !== "").length

/**
 * The sentences of `text`, whitespace collapsed. A line break ends a sentence only after a line that
 * looks like a heading or list item (a few words, no full stop), so a paragraph wrapped over
 * several lines stays one sentence; a word hyphenated across a line break is joined again.
 */
export const splitSentences = (text: string): Array<string> => {
  const sentences: Array<string> = []
  const lines = text.replace(/\r\n?/g, "\n").replace(/(\p{L})-\n(\p{Ll})/gu, "$1$2").split("\n")
  let paragraph = ""
  const flushParagraph = () => {
    if (paragraph.trim() !== "") sentences.push(...splitParagraph(paragraph))
    paragraph = ""
  }
  lines.forEach((raw, index) => {
    const line = raw.replace(/\s+/g, " ").trim()
    if (line === "") return flushParagraph()
    paragraph = paragraph === "" ? line : `${paragraph} ${line}`
    // A paragraph's first line that is a few words without closing punctuation, followed by a line
    // that does not go on in lower case, is a heading or a list item: it stands alone.
    const next = lines[index + 1]?.trim() ?? ""
    const heading = paragraph === line && line.length < 60 && wordCount(line) <= 8 && !/[.!?:;,]$/.test(line) &&
      !/^\p{Ll}/u.test(next)
    if (heading) flushParagraph()
  })
  flushParagraph()
  return sentences
}

const splitParagraph = (paragraph: string): Array<string> => {
  const out: Array<string> = []
  const boundary = /([.!?]["')\]]*)\s+(?=["'(\[]?[\p{Lu}\p{N}])/gu
  let start = 0
  for (const match of paragraph.matchAll(boundary)) {
    const end = match.index + match[1]!.length
    const before = paragraph.slice(start, match.index)
    const lastWord = /([\p{L}.]+)$/u.exec(before)?.[1]?.toLowerCase() ?? ""
    // "Ltd." or "e.g." or a single initial ("J. Smith") does not end a sentence.
    if (match[1] === "." && (ABBREVIATIONS.has(lastWord) || /^\p{L}$/u.test(lastWord))) continue
    out.push(paragraph.slice(start, end).trim())
    start = match.index + match[0].length
  }
  const rest = paragraph.slice(start).trim()
  if (rest !== "") out.push(rest)
  return out
}

/** The words of `sentence` that carry meaning: lower-cased letters and digits, stopwords dropped. */
export const contentWords = (sentence: string): Array<string> =>
  (sentence.toLowerCase().normalize("NFKC").match(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu) ?? [])
    .map((word) => word.replace(/['-]+$/, ""))
    .filter((word) => word.length > 2 && !STOPWORDS.has(word) && !/^\d+$/.test(word))


// The cosine similarity of every pair of sentences' TF-IDF vectors (zero on the diagonal).
const similarities = (sentences: ReadonlyArray<string>): Array<Float64Array> => {
  const n = sentences.length
  const bags = sentences.map((sentence) => {
    const counts = new Map<string, number>()
    // Numbers are details: "order ORD-4101" and "order ORD-4102" say the same kind of thing.
    for (const word of contentWords(sentence)) {
      const shape = word.replace(/\d+/g, "#")
      counts.set(shape, (counts.get(shape) ?? 0) + 1)
    }
    return counts
  })
  const documentFrequency = new Map<string, number>()
  for (const bag of bags) for (const word of bag.keys()) documentFrequency.set(word, (documentFrequency.get(word) ?? 0) + 1)
  const vectors = bags.map((bag) => {
    const vector = new Map<string, number>()
    let norm = 0
    for (const [word, count] of bag) {
      const weight = count * Math.log(1 + n / (documentFrequency.get(word) ?? 1))
      vector.set(word, weight)
      norm += weight * weight
    }
    return { vector, norm: Math.sqrt(norm) }
  })
  const similarity: Array<Float64Array> = Array.from({ length: n }, () => new Float64Array(n))
  for (let i = 0; i < n; i++) {
    const a = vectors[i]!
    for (let j = i + 1; j < n; j++) {
      const b = vectors[j]!
      if (a.norm === 0 || b.norm === 0) continue
      let dot = 0
      const [small, large] = a.vector.size < b.vector.size ? [a.vector, b.vector] : [b.vector, a.vector]
      for (const [word, weight] of small) dot += weight * (large.get(word) ?? 0)
      const value = dot / (a.norm * b.norm)
      similarity[i]![j] = value
      similarity[j]![i] = value
    }
  }
  return similarity
}

// PageRank over the weighted similarity graph.
const pageRank = (similarity: ReadonlyArray<Float64Array>): Array<number> => {
  const n = similarity.length
  const outWeight = similarity.map((row) => row.reduce((sum, value) => sum + value, 0))
  let scores = new Float64Array(n).fill(1)
  for (let iteration = 0; iteration < ITERATIONS; iteration++) {
    const next = new Float64Array(n).fill(1 - DAMPING)
    for (let j = 0; j < n; j++) {
      if (outWeight[j] === 0) continue
      const share = DAMPING * scores[j]! / outWeight[j]!
      const row = similarity[j]!
      for (let i = 0; i < n; i++) if (row[i]! > 0) next[i]! += share * row[i]!
    }
    let change = 0
    for (let i = 0; i < n; i++) change += Math.abs(next[i]! - scores[i]!)
    scores = next
    if (change < 1e-6) break
  }
  return Array.from(scores)
}

/**
 * Scores each sentence by TextRank: PageRank over the graph whose edges are the cosine similarity
 * of the sentences' TF-IDF vectors. A sentence that shares nothing with the others keeps the base
 * score `1 - 0.85`.
 */
export const rankSentences = (sentences: ReadonlyArray<string>): Array<number> => pageRank(similarities(sentences))

/**
 * The summary of `text`: its best-ranked sentences (from the first 400), in their original order,
 * within `limits`. Sentences under four words (headings, page numbers) or over 80 words are not
 * picked, nor one that repeats a sentence already picked; ties favour the earlier sentence. Empty
 * when the text holds no sentence.
 */
export const summarizeText = (text: string, limits: SummaryLimits = {}): Array<string> => {
  const maxSentences = limits.maxSentences ?? 5
  const maxChars = limits.maxChars ?? 1_200
  const sentences = splitSentences(text).slice(0, MAX_RANKED)
  const similarity = similarities(sentences)
  const scores = pageRank(similarity)
  const candidates = sentences
    .map((sentence, index) => ({ sentence, index, score: scores[index]! }))
    .filter(({ sentence }) => {
      const words = wordCount(sentence)
      return words >= 4 && words <= 80
    })
  // A text of headings only still says something: its first lines.
  const pool = candidates.length > 0
    ? candidates
    : sentences.map((sentence, index) => ({ sentence, index, score: 0 }))
  const best = [...pool].sort((a, b) => b.score - a.score || a.index - b.index)
  const chosen: Array<{ sentence: string; index: number }> = []
  let length = 0
  for (const candidate of best) {
    if (chosen.length >= maxSentences) break
    // A sentence that repeats one already chosen (a letterhead on every page) adds nothing.
    if (chosen.some(({ index, sentence }) => sentence === candidate.sentence || similarity[index]![candidate.index]! > REDUNDANT)) continue
    const cost = candidate.sentence.length + (chosen.length > 0 ? 1 : 0)
    if (length + cost > maxChars) {
      if (chosen.length === 0) {
        chosen.push({ sentence: `${candidate.sentence.slice(0, maxChars - 1).trimEnd()}…`, index: candidate.index })
        break
      }
      continue
    }
    chosen.push(candidate)
    length += cost
  }
  return chosen.sort((a, b) => a.index - b.index).map(({ sentence }) => sentence)
}
