/** `omnichannel-core/node`: serving the library's handler from Node's HTTP server, and Node's HMAC for signing webhooks. */
export * from "./NodeListener.ts"
export { nodeHmacSigner } from "./NodeHmacSigner.ts"
export { makeFileBlobStore } from "./FileBlobStore.ts"
