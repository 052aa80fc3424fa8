/** Sub-accounts. */
export { CreateTenantRequest, Tenant, toTenant } from "./Tenant.ts"
export { TenantService, TRIAL_DAYS } from "./TenantService.ts"
