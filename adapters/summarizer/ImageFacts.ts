import exifr from "exifr"
import { imageSize } from "image-size"

/** What can be read from an image's bytes without a model: its format, size and camera metadata. */
export interface ImageFacts {
  /** `PNG`, `JPEG`, `GIF`, `WebP`, … */
  readonly format: string
  readonly width: number
  readonly height: number
  /** `Canon EOS 80D`: EXIF make and model. */
  readonly camera: string | undefined
  /** `2026-03-14 09:26:53`: EXIF date taken, in the camera's own clock (EXIF has no time zone). */
  readonly takenAt: string | undefined
  /** True when the image carries GPS coordinates (reported, never repeated). */
  readonly hasGps: boolean
  /** `Horizontal (normal)`, `Rotate 90 CW`, …: EXIF orientation. */
  readonly orientation: string | undefined
}

/** The image is damaged or not an image. */
export class ImageFactsError extends Error {
  constructor(message: string) {
    super(message)
    this.name = "ImageFactsError"
  }
}

const FORMAT_NAMES: Readonly<Record<string, string>> = {
  png: "PNG",
  jpg: "JPEG",
  gif: "GIF",
  webp: "WebP",
  bmp: "BMP",
  tiff: "TIFF",
  heif: "HEIF",
  avif: "AVIF",
  svg: "SVG",
  ico: "ICO"
}

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value.trim() !== "" ? value.replace(/\s+/g, " ").replace(/\0+$/, "").trim() : undefined

// EXIF dates are `YYYY:MM:DD HH:MM:SS`; anything else is shown as found.
const exifDate = (value: unknown): string | undefined => {
  const raw = text(value)
  if (raw === undefined) return undefined
  const match = /^(\d{4}):(\d{2}):(\d{2})[ T](\d{2}:\d{2}:\d{2})/.exec(raw)
  return match === null ? raw : `${match[1]}-${match[2]}-${match[3]} ${match[4]}`
}

const field = (tags: unknown, name: string): unknown =>
  typeof tags === "object" && tags !== null && name in tags ? (tags as Record<string, unknown>)[name] : undefined

const camera = (tags: unknown): string | undefined => {
  const make = text(field(tags, "Make"))
  const model = text(field(tags, "Model"))
  if (model === undefined) return make
  // Models usually repeat the make ("Canon" + "Canon EOS 80D").
  return make === undefined || model.toLowerCase().startsWith(make.toLowerCase()) ? model : `${make} ${model}`
}

/**
 * Reads `bytes`' format and pixel size (image-size, from the header) and its EXIF camera, date
 * taken, orientation and whether it holds GPS coordinates (exifr; TIFF/EXIF/GPS blocks only, no
 * XMP, ICC, IPTC or thumbnails). Rejects with `ImageFactsError` when the size cannot be read;
 * missing or broken EXIF only leaves those facts out.
 */
export const readImageFacts = async (bytes: Uint8Array): Promise<ImageFacts> => {
  let size: ReturnType<typeof imageSize>
  try {
    size = imageSize(bytes)
  } catch (error) {
    throw new ImageFactsError(`the image is damaged or of an unknown format: ${error instanceof Error ? error.message : String(error)}`)
  }
  if (!(size.width > 0 && size.height > 0)) throw new ImageFactsError("the image has no pixels")
  let tags: unknown = undefined
  try {
    tags = await exifr.parse(bytes, {
      tiff: true,
      ifd0: {},
      exif: true,
      gps: true,
      ifd1: false,
      interop: false,
      xmp: false,
      icc: false,
      iptc: false,
      jfif: false,
      ihdr: false,
      makerNote: false,
      userComment: false,
      translateValues: true,
      reviveValues: false
    })
  } catch {
    // No EXIF, or EXIF exifr cannot read: the image is still described by its size.
  }
  const type = size.type ?? "unknown"
  return {
    format: FORMAT_NAMES[type] ?? type.toUpperCase(),
    width: size.width,
    height: size.height,
    camera: camera(tags),
    takenAt: exifDate(field(tags, "DateTimeOriginal")) ?? exifDate(field(tags, "CreateDate")),
    hasGps: field(tags, "GPSLatitude") !== undefined && field(tags, "GPSLongitude") !== undefined,
    orientation: text(field(tags, "Orientation"))
  }
}

/** The facts as the `description` section writes them: a sentence each. */
export const describeImage = (facts: ImageFacts): string => {
  const megapixels = (facts.width * facts.height) / 1_000_000
  const shape = facts.width === facts.height ? "square" : facts.width > facts.height ? "landscape" : "portrait"
  const lines = [
    `${facts.format} image, ${facts.width} x ${facts.height} pixels (${megapixels.toFixed(1)} megapixels), ${shape}.`
  ]
  if (facts.camera !== undefined) lines.push(`Camera: ${facts.camera}.`)
  if (facts.takenAt !== undefined) lines.push(`Taken: ${facts.takenAt}.`)
  if (facts.hasGps) lines.push("Location: GPS coordinates are embedded.")
  if (facts.orientation !== undefined) lines.push(`Orientation: ${facts.orientation}.`)
  if (facts.camera === undefined && facts.takenAt === undefined && !facts.hasGps && facts.orientation === undefined) {
    lines.push("No camera metadata (EXIF).")
  }
  return lines.join("\n")
}
