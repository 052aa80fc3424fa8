/** Authentication and the operator's commands. */
export { API_KEY_KIND, ApiKeyAuth, USER_TOKEN_KIND } from "./ApiKeyAuth.ts"
export { type Bootstrapped, type IssuedApiKey, type IssuedUser, Operator } from "./Operator.ts"
