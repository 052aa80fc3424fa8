import { Schema } from "effect"

/** True for an absolute `http:` or `https:` URL with a host and no credentials in it. */
export const isAbsoluteHttpUrl = (value: string): boolean => {
  if (!URL.canParse(value)) return false
  const url = new URL(value)
  return (url.protocol === "http:" || url.protocol === "https:") && url.hostname !== "" && url.username === "" &&
    url.password === ""
}

/** An absolute http(s) URL of at most 2,048 characters. */
export const HttpUrl = Schema.String.check(
  Schema.isMaxLength(2048),
  Schema.makeFilter((value: string) =>
    isAbsoluteHttpUrl(value) ? undefined : "Must be an absolute http:// or https:// URL without credentials"
  )
)
