const encoder = new TextEncoder()

/**
 * An answer whose body, `text`, is held in memory, with its `Content-Length`: a server adapter can
 * write it whole in one call, headers and body together (`writeResponse` in `omnichannel-core/node`
 * does), rather than stream it in chunks.
 */
export const inMemoryResponse = (status: number, text: string, headers: Readonly<Record<string, string>>): Response => {
  const bytes = encoder.encode(text)
  return new Response(bytes, { status, headers: { ...headers, "content-length": String(bytes.byteLength) } })
}
