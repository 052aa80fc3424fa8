/** At most this many raw bytes of files and inline images per email (the spec's limit). */
export const MAX_EMAIL_ATTACHMENT_BYTES = 20 * 1024 * 1024

/** Longest subject taken. */
export const MAX_SUBJECT_LENGTH = 998

/** True when a header value would carry a line break (or another control character) into the header. */
export const breaksHeader = (value: string): boolean => /[\r\n\0]/.test(value)

/** The subject of a reply: `Re: ` once, never `Re: Re: `. */
export const replySubject = (subject: string | null): string => {
  const base = (subject ?? "").trim()
  if (base === "") return "Re:"
  return /^(re|aw|sv|antw)\s*:/i.test(base) ? base : `Re: ${base}`
}

/** The `References` of a reply: the parent's references, then the parent itself, each once, the newest 50. */
export const replyReferences = (parent: { readonly references: ReadonlyArray<string>; readonly message_id_header: string }) =>
  [...new Set([...parent.references, parent.message_id_header])].slice(-50)

/** A file chosen for an email, with what decides how it goes. */
export interface ChosenFile {
  readonly attachmentId: string
  readonly fileSize: number
  /** The Content-ID of an inline image upload, if it is one. */
  readonly contentId: string | null
}

/** How each file goes: inline (its `cid:` is in the HTML body) or as a regular file. */
export interface FilePlacement {
  readonly attachmentId: string
  readonly inline: boolean
  readonly contentId: string | null
}

/**
 * Places files: an inline image upload whose Content-ID the HTML body refers to as `cid:` goes
 * inline (and is not also a file); every other file is a regular attachment. Without an HTML body,
 * or where inline embedding does not apply (`POST /messages`), every file is regular.
 */
export const placeFiles = (files: ReadonlyArray<ChosenFile>, html: string | null): ReadonlyArray<FilePlacement> =>
  files.map((file) => {
    const inline = html !== null && file.contentId !== null && html.includes(`cid:${file.contentId}`)
    return { attachmentId: file.attachmentId, inline, contentId: inline ? file.contentId : null }
  })

/** The raw total of the files, and whether it is over the limit. */
export const totalSize = (files: ReadonlyArray<{ readonly fileSize: number }>): number =>
  files.reduce((sum, file) => sum + file.fileSize, 0)

/** `12.3 MB` for a byte count. */
export const megabytes = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MB`

/** The domain part of generated Message-IDs: the mailbox's own, so replies stay recognisable. */
export const messageIdFor = (id: string, fromAddress: string): string => {
  const domain = fromAddress.split("@")[1] ?? "omnichannel-core.local"
  return `${id}@${domain}`
}
