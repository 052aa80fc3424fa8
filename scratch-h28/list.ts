import { Option, Schema } from "effect"
import { routes } from "/work/main/src/app/Omnichannel.ts"
for (const r of routes) {
  if (r.body === undefined) continue
  const ok = Option.isSome(Schema.decodeUnknownOption(r.body as any, { onExcessProperty: "error" })({}))
  if (ok) console.log(r.method, r.path, r.operationId)
}
