/** Channel connect links. */
export { ConnectToken, CreateConnectTokenRequest, CreatedConnectToken, toConnectToken } from "./ConnectToken.ts"
export { ConnectLinks } from "./ConnectLinks.ts"
export { statusAt, transition } from "./ConnectTokenMachine.ts"
export { CONNECT_TOKEN_KIND, ConnectTokenService, LinkUnusable } from "./ConnectTokenService.ts"
