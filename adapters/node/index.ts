/** `omnichannel-core/node`: serving the library's handler from Node's HTTP server, Node's HMAC for signing webhooks, files on disk for attachments, and busboy for multipart uploads. */
export * from "./NodeListener.ts"
export * from "./NodeServer.ts"
export { nodeHmacSigner } from "./NodeHmacSigner.ts"
export { makeFileBlobStore } from "./FileBlobStore.ts"
export { busboyMultipart, makeBusboyMultipart, type BusboyMultipartOptions } from "./BusboyMultipart.ts"
