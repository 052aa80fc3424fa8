import { Effect } from "effect"
import { ChatPlatform, ChatPlatformError } from "../ports/ChatPlatform.ts"
import { Mailer, MailerError } from "../ports/Mailer.ts"
import { MultipartError, MultipartReader } from "../ports/MultipartReader.ts"
import { type Notification, Notifier } from "../ports/Notifier.ts"
import { type OutboundClient, OutboundError } from "../ports/OutboundHttp.ts"
import { Summarizer, SummarizerError } from "../ports/Summarizer.ts"

// What `make` uses for a port the host did not configure: each fails (or logs) with a message
// naming what is missing, so the service still starts and answers.

export const noMultipart = MultipartReader.of({
  file: () =>
    Effect.fail(new MultipartError({ message: "this service reads no multipart bodies (no multipart reader is configured)" }))
})

export const noOutbound: OutboundClient = {
  request: () =>
    Effect.fail(new OutboundError({ reason: "Connection", message: "no outbound HTTP client is configured" }))
}

export const noChatPlatform: ChatPlatform["Service"] = (() => {
  const fail = () =>
    Effect.fail(new ChatPlatformError({
      kind: "other",
      code: null,
      subcode: null,
      message: "no chat-app operator is configured",
      userTitle: null,
      userMessage: null,
      fbtraceId: null,
      httpStatus: null
    }))
  return ChatPlatform.of({
    name: "none",
    sendMessage: fail,
    listTemplates: fail,
    createTemplate: fail,
    browseLibrary: fail,
    phoneNumber: fail,
    fetchMedia: fail,
    uploadMedia: fail
  })
})()

export const noSummarizer = Summarizer.of({
  summarize: () => Effect.fail(new SummarizerError({ reason: "Unavailable", message: "no summarizer is configured" }))
})

export const noMailer = Mailer.of({
  send: () => Effect.fail(new MailerError({ reason: "Unavailable", message: "no mail transport is configured" }))
})

export const logNotifier = Notifier.of({
  send: (notification: Notification) =>
    Effect.logInfo(`notification to ${notification.to}: ${notification.subject}`)
})
