/** Sub-accounts. */
export { CreateTenantRequest, Tenant, TenantList, toTenant } from "./Tenant.ts"
export { keyReach, ownerReach, reaches, TenantService, type TenantViewer, TRIAL_DAYS } from "./TenantService.ts"
