/**
 * The libraries the embedded summarizer reads files with, at the versions its `model` names
 * (test/summarizer checks them against the installed packages, so an upgrade updates the name).
 */
export const EMBEDDED_LIBRARIES = {
  unpdf: "1.8.1",
  // The pdf.js build unpdf ships.
  "pdf.js": "6.1.200",
  "tesseract.js": "7.0.0",
  "@tesseract.js-data/eng": "1.0.0",
  "image-size": "2.1.0",
  exifr: "7.1.3"
} as const

const versions = EMBEDDED_LIBRARIES

/** The `model` of an embedded PDF summary: the implementation and the PDF reader's versions. */
export const EMBEDDED_PDF_MODEL = `omnichannel-embedded-1 (unpdf ${versions.unpdf}, pdf.js ${versions["pdf.js"]})`

/** The `model` of an embedded image summary: the implementation and the OCR and metadata readers' versions. */
export const EMBEDDED_IMAGE_MODEL =
  `omnichannel-embedded-1 (tesseract.js ${versions["tesseract.js"]} eng, image-size ${versions["image-size"]}, exifr ${versions.exifr})`
