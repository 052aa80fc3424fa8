import { describe, expect, it } from "vitest"
import { messageIdOfReference, sendReferenceOf } from "../../../src/kernel/SendReference.ts"

describe("a send's reference to its message (the operator's biz_opaque_callback_data)", () => {
  it("names the message it was made for, as a lower-case id, and fits the operator's 512 characters", () => {
    const id = "0b9d6a3e-5f1c-4c2a-9e7d-3f4a5b6c7d8e"
    expect(messageIdOfReference(sendReferenceOf(id))).toBe(id)
    expect(messageIdOfReference(sendReferenceOf(id.toUpperCase()))).toBe(id)
    expect(sendReferenceOf(id).length).toBeLessThanOrEqual(512)
  })

  it("names nothing for another sender's data, a reference whose id is not one, or none", () => {
    for (const data of [null, "", "order-1234", "omnichannel-message:", "omnichannel-message:not-an-id", "omnichannel-message:0b9d6a3e-5f1c-4c2a-9e7d-3f4a5b6c7d8e'--"]) {
      expect(messageIdOfReference(data), String(data)).toBeNull()
    }
  })
})
