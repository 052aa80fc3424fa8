import { Effect } from "effect"
import { route } from "../http/Route.ts"
import { CreateTenantRequest, Tenant, toTenant } from "./Tenant.ts"
import { TenantService } from "./TenantService.ts"

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

/** Every route of the tenants area. */
export const tenantRoutes = [createTenantRoute]
