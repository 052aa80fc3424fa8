// The simulator's media: real files, so whatever checks the bytes checks something true.

/** A 1×1 RGBA PNG, every chunk's CRC right. */
const PNG_1X1 = Uint8Array.from(Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==",
  "base64"
))

/** A one-page PDF saying "Simulated document", its cross-reference offsets computed. */
const ONE_PAGE_PDF = (() => {
  const content = "BT /F1 18 Tf 24 60 Td (Simulated document) Tj ET"
  const objects = [
    "<< /Type /Catalog /Pages 2 0 R >>",
    "<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 240 120] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>",
    `<< /Length ${content.length} >>\nstream\n${content}\nendstream`,
    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
  ]
  let text = "%PDF-1.4\n"
  const offsets = objects.map((object, i) => {
    const offset = text.length
    text += `${i + 1} 0 obj\n${object}\nendobj\n`
    return offset
  })
  const xref = text.length
  text += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`
  for (const offset of offsets) text += `${String(offset).padStart(10, "0")} 00000 n \n`
  text += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`
  return new TextEncoder().encode(text)
})()

/** The simulator's media: ids by prefix, as the operator's media ids are opaque to us. */
export const SIMULATED_MEDIA: ReadonlyArray<{ readonly prefix: string; readonly bytes: Uint8Array; readonly mimeType: string }> = [
  { prefix: "sim-image", bytes: PNG_1X1, mimeType: "image/png" },
  { prefix: "sim-document", bytes: ONE_PAGE_PDF, mimeType: "application/pdf" }
]
