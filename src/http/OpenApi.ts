import { Schema } from "effect"
import { bodyIsOptional, type Route, type WireSchema } from "./Route.ts"

const jsonSchema = (schema: WireSchema<unknown>, options?: { readonly onExcessProperty: "error" }): unknown =>
  Schema.toJsonSchemaDocument(schema, options).schema

const ERROR_DESCRIPTIONS: Readonly<Record<number, string>> = {
  400: "Bad request; `code: channel_unavailable` (with `channel_id`) when the channel is not a usable chat-app channel",
  401: "Missing, invalid, revoked or expired credential",
  403: "Missing scope, or not allowed to act in the requested tenant",
  404: "Not found in the caller's tenant",
  409: "Conflicts with existing state",
  413: "Body too large",
  415: "Body is not JSON",
  422: "Validation failed: `detail` lists {loc, msg, type}"
}

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
      schema: { type: "string" }
    }))
    if (route.query !== undefined) {
      const doc = jsonSchema(route.query) as { properties?: Record<string, unknown>; required?: Array<string> }
      for (const [name, schema] of Object.entries(doc.properties ?? {})) {
        parameters.push({ name, in: "query", required: doc.required?.includes(name) ?? false, schema })
      }
    }
    if (route.auth.kind === "api_key") {
      parameters.push({
        name: "X-Tenant-ID",
        in: "header",
        required: false,
        description: "Act inside this sub-account (parent keys only)",
        schema: { type: "string" }
      })
    }
    const statuses = [401, ...(route.auth.kind === "api_key" ? [403] : []), ...route.errors]
    const responses: Record<string, unknown> = {
      [String(route.response.status)]: {
        description: route.response.description,
        content: { "application/json": { schema: jsonSchema(route.response.schema) } }
      }
    }
    for (const [status, description] of Object.entries(route.response.alternatives ?? {})) {
      responses[status] = { description, content: { "application/json": { schema: jsonSchema(route.response.schema) } } }
    }
    for (const status of [...new Set(statuses)].sort()) {
      responses[String(status)] = { description: route.errorDescriptions?.[status] ?? ERROR_DESCRIPTIONS[status] ?? "Error" }
    }
    paths[`${options.basePath}${route.path}`] ??= {}
    paths[`${options.basePath}${route.path}`]![route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      tags: [route.tag],
      security: [{ [route.auth.kind === "user" ? "userToken" : "apiKey"]: [] }],
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
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: `Authorization: Bearer ock_…`" },
        userToken: { type: "http", scheme: "bearer", description: "A user token: `Authorization: Bearer ocu_…`" }
      }
    }
  }
}
