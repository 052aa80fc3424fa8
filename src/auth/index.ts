/** Authentication and the operator's commands (their result types are exported at the top level). */
export { API_KEY_KIND, ApiKeyAuth, USER_TOKEN_KIND } from "./ApiKeyAuth.ts"
export { Operator } from "./Operator.ts"
