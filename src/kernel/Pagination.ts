import { Schema, SchemaTransformation } from "effect"

// Plain decimal digits only: `Number()` would also read "0x10", " 1" and "1e1".
/** A whole number written in plain decimal digits, decoded from a query string. */
export const WholeNumberFromString = Schema.String.check(
  Schema.isPattern(/^[0-9]{1,9}$/, { message: "Must be a whole number" })
).pipe(
  // Decoded as an integer, so the OpenAPI document (built from the decoded side) says `integer`.
  Schema.decodeTo(
    Schema.Int,
    SchemaTransformation.transform({ decode: (s: string) => Number(s), encode: (n: number) => String(n) })
  )
)

/** `page` (from 1) and `page_size` (1 to `maxSize`) query fields, decoded from strings. */
export const pageQueryFields = (maxSize: number) => ({
  page: Schema.optionalKey(WholeNumberFromString.check(Schema.isGreaterThanOrEqualTo(1))),
  page_size: Schema.optionalKey(WholeNumberFromString.check(Schema.isBetween({ minimum: 1, maximum: maxSize })))
})

/** A page request after defaults are applied. */
export interface PageRequest {
  readonly page: number
  readonly pageSize: number
}

/** Applies the defaults to decoded `page` / `page_size` query values. */
export const toPageRequest = (
  query: { readonly page?: number; readonly page_size?: number },
  defaultSize: number
): PageRequest => ({ page: query.page ?? 1, pageSize: query.page_size ?? defaultSize })

/** Row window of a page request. */
export const toWindow = (request: PageRequest): { readonly limit: number; readonly offset: number } => ({
  limit: request.pageSize,
  offset: (request.page - 1) * request.pageSize
})

/** The `pagination` object of list responses. */
export const PaginationInfo = Schema.Struct({
  page: Schema.Int,
  page_size: Schema.Int,
  total: Schema.Int,
  total_pages: Schema.Int
})
/** The `pagination` object of list responses. */
export type PaginationInfo = typeof PaginationInfo.Type

/** Builds the `pagination` object for `total` rows. */
export const paginationInfo = (request: PageRequest, total: number): PaginationInfo => ({
  page: request.page,
  page_size: request.pageSize,
  total,
  total_pages: Math.ceil(total / request.pageSize)
})
