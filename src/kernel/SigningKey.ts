const SECRET_PREFIX = "whsec_"

/** The key bytes of a Standard Webhooks signing secret: the base64 after `whsec_` (or a bare base64 secret). */
export const signingKeyBytes = (secret: string): Uint8Array<ArrayBuffer> => {
  const binary = atob(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret)
  const bytes = new Uint8Array(new ArrayBuffer(binary.length))
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}
