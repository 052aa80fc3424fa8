import { Schema } from "effect"
import { bodyIsOptional, type Route, type WireSchema } from "./Route.ts"

const jsonSchema = (schema: WireSchema<unknown>, options?: { readonly onExcessProperty: "error" }): unknown =>
  Schema.toJsonSchemaDocument(schema, options).schema

const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: "Bad request; `detail.code: channel_unavailable` (with `detail.channel_id`) when the channel is not a usable chat-app channel",
  401: "Missing, invalid, revoked or expired credential",
  403: "Missing scope, or not allowed to act in the requested tenant",
  404: "Not found in the caller's tenant",
  409: "Conflicts with existing state",
  413: "Body too large",
  415: "Body is not JSON",
  422: "Validation failed: `detail` lists {loc, msg, type}; an unknown body field or query parameter is `extra_forbidden`"
}

const ERROR_REF = { $ref: "#/components/schemas/Error" }

/** The one error body every operation's failures answer with, and the forms its `detail` takes. */
const ERROR_SCHEMAS = {
  Error: {
    type: "object",
    required: ["detail"],
    description:
      "Every failure: `detail` is an object with a machine-readable `code` and a `message` (some codes add fields, such as `channel_id`, `warmup`, `feature`, `operator`, `message_id`, `errors`); or, where the spec prescribes the body, a 422's list of validation issues, a plain message (a missing scope, and the attachment catalogue's texts such as `URL not allowed` or `Attachment {id} not found`), a summary rate limit's `{error, message}`, or an unsupported URL type's `{detail, allowed_types}`",
    properties: {
      detail: {
        anyOf: [
          { $ref: "#/components/schemas/ErrorDetail" },
          { type: "array", items: { $ref: "#/components/schemas/ValidationIssue" } },
          { type: "string" },
          {
            type: "object",
            required: ["error", "message"],
            properties: { error: { type: "string", enum: ["rate_limit_exceeded", "rate_limit_unavailable"] }, message: { type: "string" } }
          },
          {
            type: "object",
            required: ["detail", "allowed_types"],
            properties: { detail: { type: "string" }, allowed_types: { type: "array", items: { type: "string" } } }
          }
        ]
      }
    }
  },
  ErrorDetail: {
    type: "object",
    required: ["code", "message"],
    properties: {
      code: {
        type: "string",
        description:
          "Machine-readable, snake_case: `unauthenticated`, `forbidden`, `not_found`, `conflict`, `bad_request`, `method_not_allowed`, `payload_too_large`, `unsupported_media_type`, `storage_unavailable`, `internal_error`, or a specific one such as `feature_disabled`, `channel_unavailable`, `warmup_acknowledgement_required`, `attachment_already_sent`; the webhook routes use the spec's `INVALID_TOKEN`, `INSUFFICIENT_SCOPE`, `RESOURCE_NOT_FOUND`, `VALIDATION_ERROR`"
      },
      message: { type: "string", description: "For people: what went wrong and, where there is one, the way out" }
    }
  },
  ValidationIssue: {
    type: "object",
    required: ["loc", "msg", "type"],
    properties: {
      loc: { type: "array", items: { anyOf: [{ type: "string" }, { type: "number" }] } },
      msg: { type: "string" },
      type: { type: "string", description: "`missing`, `extra_forbidden` (an unknown body field or query parameter), `value_error`, …" },
      ctx: { type: "object", additionalProperties: { anyOf: [{ type: "string" }, { type: "number" }] } }
    }
  }
} as const

/** The OpenAPI 3.1 document of `routes`, generated from their Schemas. */
export const makeOpenApiDocument = (
  routes: ReadonlyArray<Route<unknown>>,
  options: { readonly basePath: string; readonly title: string; readonly version: string }
): Record<string, unknown> => {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const route of routes) {
    const parameters: Array<unknown> = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => ({
      name: m[1],
      in: "path",
      required: true,
      // Every path parameter names a resource by its id, a UUID (anything else answers 404).
      schema: /(^|_)id$/.test(m[1]!) ? { type: "string", format: "uuid" } : { type: "string" }
    }))
    if (route.query !== undefined) {
      // The decoded side: a generated client sends `page_size: 10` as a number (the handler still
      // reads every parameter leniently from its URL string).
      const doc = jsonSchema(Schema.toType(route.query)) as { properties?: Record<string, unknown>; required?: Array<string> }
      for (const [name, schema] of Object.entries(doc.properties ?? {})) {
        parameters.push({ name, in: "query", required: doc.required?.includes(name) ?? false, schema })
      }
    }
    if (route.auth.kind !== "user") {
      parameters.push({
        name: "X-Tenant-ID",
        in: "header",
        required: false,
        description: "Act inside this sub-account (parent keys only)",
        schema: { type: "string" }
      })
    }
    const statuses = [401, ...(route.auth.kind !== "user" ? [403] : []), ...route.errors]
    const responses: Record<string, unknown> = {
      [String(route.response.status)]: {
        description: route.response.description,
        content: { "application/json": { schema: jsonSchema(route.response.schema) } }
      }
    }
    for (const [status, description] of Object.entries(route.response.alternatives ?? {})) {
      responses[status] = { description, content: { "application/json": { schema: jsonSchema(route.response.schema) } } }
    }
    const errorSchema = route.failureBody === undefined
      ? ERROR_REF
      : { anyOf: [ERROR_REF, jsonSchema(route.failureBody)] }
    for (const status of [...new Set(statuses)].sort()) {
      responses[String(status)] = {
        description: route.errorDescriptions?.[status] ?? ERROR_DESCRIPTIONS[status] ?? "Error",
        content: { "application/json": { schema: errorSchema } }
      }
    }
    paths[`${options.basePath}${route.path}`] ??= {}
    paths[`${options.basePath}${route.path}`]![route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      security: route.auth.kind === "api_key_or_user"
        ? [{ apiKey: [] }, { userToken: [] }]
        : [{ [route.auth.kind === "user" ? "userToken" : "apiKey"]: [] }],
      ...(route.auth.kind === "api_key" ? { "x-required-scopes-any-of": route.auth.scopes } : {}),
      parameters,
      ...(route.rawBody === undefined ? {} : {
        requestBody: {
          required: true,
          description: route.rawBody.description,
          content: { [route.rawBody.contentType]: { schema: route.rawBody.schema } }
        }
      }),
      ...(route.body === undefined ? {} : {
        // The handler answers an unknown body field with 422 `extra_forbidden`; the document says so.
        // A body whose schema requires no field may be left out (it reads as `{}`).
        requestBody: {
          required: !bodyIsOptional(route.body),
          content: { "application/json": { schema: jsonSchema(route.body, { onExcessProperty: "error" }) } }
        }
      }),
      responses
    }
  }
  return {
    openapi: "3.1.0",
    info: { title: options.title, version: options.version },
    // The paths carry the base path the host mounts the API at, so the server is the host itself,
    // whatever its public address: a client's base URL is the origin it fetched this document from.
    servers: [{ url: "/", description: `The host serving this document; the API is below ${options.basePath || "/"}` }],
    paths,
    components: {
      schemas: ERROR_SCHEMAS,
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: `Authorization: Bearer ock_…`" },
        userToken: { type: "http", scheme: "bearer", description: "A user token: `Authorization: Bearer ocu_…`" }
      }
    }
  }
}
