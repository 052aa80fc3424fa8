import { Effect, Schema } from "effect"
import { route } from "../http/Route.ts"
import { pathId } from "../kernel/Id.ts"
import { pageQueryFields, paginationInfo, toPageRequest } from "../kernel/Pagination.ts"
import type { ApiKeyPrincipal, UserPrincipal } from "../kernel/Principal.ts"
import { CreateTenantRequest, Tenant, TenantList, toTenant } from "./Tenant.ts"
import { TenantService, type TenantViewer } from "./TenantService.ts"

/** Default and largest `page_size` of `GET /tenants`. */
export const TENANTS_PAGE_SIZE = { default: 25, max: 100 } as const

// Who asks: the key's own tenant decides what it reaches, whatever X-Tenant-ID this request sent.
const viewerOf = (principal: ApiKeyPrincipal | UserPrincipal): TenantViewer =>
  principal.kind === "user"
    ? { kind: "user", userId: principal.userId }
    : { kind: "api_key", homeTenantId: principal.homeTenantId, isParent: principal.isParent }

const WHO =
  "With an API key (any scope): its own tenant and, for a parent key, every active tenant of its billing account (the X-Tenant-ID values it may send). With a user token: the active tenants of the billing accounts the user owns"

/** `POST /tenants`: a billing-account owner creates a sub-account (user token). */
export const createTenantRoute = route({
  method: "POST",
  path: "/tenants",
  operationId: "createTenant",
  summary: "Create a tenant (sub-account) under a billing account you own",
  tag: "Tenants",
  auth: { kind: "user" },
  body: CreateTenantRequest,
  response: { status: 201, schema: Tenant, description: "The new tenant; its id is the value for X-Tenant-ID" },
  errors: [403, 409, 422],
  handle: ({ principal, body }) =>
    Effect.flatMap(TenantService, (tenants) => tenants.create(principal, body)).pipe(Effect.map(toTenant))
})

/** `GET /tenants`: the tenants the caller may act in. */
export const listTenantsRoute = route({
  method: "GET",
  path: "/tenants",
  operationId: "listTenants",
  summary: `List the tenants you may act in, oldest first. ${WHO}`,
  tag: "Tenants",
  auth: { kind: "api_key_or_user" },
  query: Schema.Struct(pageQueryFields(TENANTS_PAGE_SIZE.max)),
  response: { status: 200, schema: TenantList, description: "One page of tenants" },
  errors: [422],
  errorDescriptions: { 403: "Not allowed to act in the tenant named by X-Tenant-ID" },
  handle: ({ principal, query }) =>
    Effect.gen(function*() {
      const page = toPageRequest(query, TENANTS_PAGE_SIZE.default)
      const { items, total } = yield* (yield* TenantService).listFor(viewerOf(principal), page)
      return { items: items.map(toTenant), pagination: paginationInfo(page, total) }
    })
})

/** `GET /tenants/{tenant_id}`: one tenant the caller may act in. */
export const getTenantRoute = route({
  method: "GET",
  path: "/tenants/{tenant_id}",
  operationId: "getTenant",
  summary: `Get a tenant you may act in; 404 for any other, as for an unknown one. ${WHO}`,
  tag: "Tenants",
  auth: { kind: "api_key_or_user" },
  response: { status: 200, schema: Tenant, description: "The tenant" },
  errors: [404],
  errorDescriptions: {
    403: "Not allowed to act in the tenant named by X-Tenant-ID",
    404: "No tenant you may act in has this id: an unknown one, another billing account's, or one this credential does not reach"
  },
  handle: ({ principal, params }) =>
    Effect.gen(function*() {
      const id = yield* pathId(params, "tenant_id", "Tenant")
      return toTenant(yield* (yield* TenantService).getFor(viewerOf(principal), id))
    })
})

/** Every route of the tenants area. */
export const tenantRoutes = [createTenantRoute, listTenantsRoute, getTenantRoute]
