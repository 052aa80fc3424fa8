import { Effect, Option } from "effect"
import { FailedWithBody, InvalidRequest } from "../kernel/ApiError.ts"
import { newId } from "../kernel/Id.ts"
import { isRateLimitKind } from "../kernel/OperatorErrorKind.ts"
import { randomToken } from "../kernel/Secret.ts"
import type { StorageError } from "../kernel/StorageError.ts"
import { now } from "../kernel/Timestamp.ts"
import type { ChatappCredentials, ChatPlatform, ChatPlatformError } from "../ports/ChatPlatform.ts"
import type { TemplateRecord, TemplateStore } from "../ports/TemplateStore.ts"
import {
  buttonInputIssues,
  buttonsWithInputs,
  componentsOf,
  contentChanged,
  entryOfSnapshot,
  MAX_TEMPLATE_NAME,
  normalTemplateName
} from "./Adoption.ts"
import type { LibraryEntry } from "./LibraryEntry.ts"
import { type AdoptRequest, type AdoptResponse, adoptedResponse } from "./Template.ts"
import type { TemplateLibraryService } from "./TemplateLibraryService.ts"

/** The operator's subcode for "content in this language already exists" on template creation. */
export const TEMPLATE_EXISTS_SUBCODE = 2388024

/** How long a `submitting` reservation may stand before another adoption takes it over (its holder died). */
export const RESERVATION_LEASE_MS = 120_000
/** How often, and how many times, an adoption looks again at a reservation another one holds (real time: 45 s in all). */
const WAIT_POLL_MS = 100
const WAIT_POLLS = 450
/** Pages of the business account's templates read to find one the operator already has. */
const LOOKUP_PAGES = 50

/** What an adoption produced: the response, and whether it created the template (201) or found it (200). */
export interface Adopted {
  readonly response: AdoptResponse
}

/** The operator's status in the service's words: lower case; `REINSTATED` is approved again. */
export const statusOf = (operatorStatus: string): string => {
  const status = operatorStatus.trim().toLowerCase()
  return status === "reinstated" ? "approved" : status
}

/**
 * How a failed adoption answers: `success: false` with the operator's error fields, and a status
 * telling whether a retry is worthwhile: 429 (rate-limited) and 503 (briefly failing) are; 409
 * (already exists at the operator), 422 (the operator refused the request as sent) and 502 (the
 * channel's credentials were refused, or the operator failed otherwise) are not.
 */
export const adoptFailure = (error: ChatPlatformError, request: { readonly name: string; readonly language: string; readonly category: string | null }) => {
  const status = isRateLimitKind(error.kind)
    ? 429
    : error.kind === "transient"
    ? 503
    : error.subcode === TEMPLATE_EXISTS_SUBCODE
    ? 409
    : error.kind === "auth"
    ? 502
    : error.httpStatus !== null && error.httpStatus >= 400 && error.httpStatus < 500
    ? 422
    : 502
  const said = error.userMessage ?? error.message
  const body: AdoptResponse = {
    success: false,
    id: null,
    template_id: null,
    name: request.name,
    language: request.language,
    status: null,
    category: request.category,
    already_existed: false,
    error: error.userTitle === null ? said : `${error.userTitle}: ${said}`,
    error_code: error.code,
    error_subcode: error.subcode,
    error_is_retryable: error.retryable,
    fbtrace_id: error.fbtraceId
  }
  return new FailedWithBody({
    status,
    body,
    ...(status === 429 ? { headers: { "retry-after": "60" } } : status === 503 ? { headers: { "retry-after": "5" } } : {})
  })
}

/** A failure that is not the operator's: `success: false` with the service's own words. */
export const refused = (status: number, message: string, request: { readonly name: string; readonly language: string }) =>
  new FailedWithBody({
    status,
    body: {
      success: false,
      id: null,
      template_id: null,
      name: request.name,
      language: request.language,
      status: null,
      category: null,
      already_existed: false,
      error: message,
      error_code: null,
      error_subcode: null,
      error_is_retryable: false,
      fbtrace_id: null
    } satisfies AdoptResponse
  })

/** What an adoption needs. */
export interface AdoptionDeps {
  readonly templates: TemplateStore["Service"]
  readonly platform: ChatPlatform["Service"]
  readonly library: TemplateLibraryService["Service"]
}

/**
 * Adopts a library entry into a channel (`POST /chatapp-templates/library/adopt`), once: a row in
 * `submitting` reserves the channel's name and language before the operator is asked, so two
 * identical adoptions create one template; the other waits for it and answers `already_existed`.
 */
export const makeAdoption = ({ library, platform, templates }: AdoptionDeps) => {
  /** The settled template of that name and language, a reservation to take over, or none. */
  const standing = Effect.fnUntraced(function*(tenantId: string, channelId: string, name: string, language: string) {
    for (let poll = 0; poll < WAIT_POLLS; poll++) {
      const found = yield* templates.findByName(tenantId, channelId, name, language)
      if (Option.isNone(found)) return { kind: "none" } as const
      const row = found.value
      if (row.status !== "submitting") return { kind: "settled", row } as const
      const age = Date.parse(yield* now) - Date.parse(row.updated_at ?? row.created_at)
      if (age >= RESERVATION_LEASE_MS) return { kind: "abandoned", row } as const
      yield* Effect.sleep(WAIT_POLL_MS)
    }
    return { kind: "busy" } as const
  })

  /** The template the operator already has under that name and language, if it has one. */
  const findAtOperator = Effect.fnUntraced(function*(credentials: ChatappCredentials, name: string, language: string) {
    let after: string | undefined
    for (let page = 0; page < LOOKUP_PAGES; page++) {
      const answer = yield* platform.listTemplates(credentials, { limit: 100, ...(after === undefined ? {} : { after }) })
      const found = answer.items.find((template) => template.name === name && template.language === language)
      if (found !== undefined) return Option.some(found)
      if (answer.after === null) break
      after = answer.after
    }
    return Option.none()
  })

  /** The entry to adopt: the operator's (through the cached library), else the snapshot when the operator cannot answer. */
  const entryFor = Effect.fnUntraced(function*(
    credentials: ChatappCredentials,
    request: AdoptRequest,
    names: { readonly name: string; readonly language: string }
  ) {
    const libraryName = request.library_template_name.trim()
    const read = yield* library.browse(credentials, { name: libraryName, language: names.language }).pipe(
      Effect.map((copy) => ({ _tag: "Success" as const, success: copy })),
      Effect.catchTag("ChatPlatformError", (failure) => Effect.succeed({ _tag: "Failure" as const, failure }))
    )
    const snapshotEntry = () =>
      entryOfSnapshot(request.snapshot!, libraryName, names.language, request.category ?? "UTILITY")
    if (read._tag === "Failure") {
      if (!read.failure.retryable || request.snapshot === undefined) {
        return yield* adoptFailure(read.failure, { ...names, category: request.category ?? null })
      }
      // A copy of another browse may still hold the entry, so the snapshot's wording can be checked;
      // else the snapshot stands in for the entry (the spec's content fallback).
      const kept = yield* library.cachedEntry(credentials, libraryName, names.language)
      return { entry: Option.getOrElse(kept, snapshotEntry), inLibrary: true }
    }
    const entry = read.success.entries.find((candidate) => candidate.name === libraryName && candidate.language === names.language)
    if (entry !== undefined) return { entry, inLibrary: true }
    if (request.snapshot !== undefined) return { entry: snapshotEntry(), inLibrary: false }
    return yield* refused(404, `The template library has no "${libraryName}" in ${names.language}`, names)
  })

  /** Asks the operator to create the reserved template and settles the reservation with its answer. */
  const submit = Effect.fnUntraced(function*(
    credentials: ChatappCredentials,
    reservation: TemplateRecord,
    body: Readonly<Record<string, unknown>>
  ) {
    const attempt = reservation.attempt_id!
    const settle = (fields: Pick<TemplateRecord, "status" | "category" | "external_id">) =>
      Effect.gen(function*() {
        const settled: TemplateRecord = { ...reservation, ...fields, attempt_id: null, updated_at: yield* now }
        const kept = yield* templates.update(reservation.tenant_id, settled, attempt)
        return kept ? Option.some(settled) : Option.none<TemplateRecord>()
      })
    const created = yield* Effect.result(platform.createTemplate(credentials, body))
    if (created._tag === "Success") {
      const answer = created.success
      return { settled: yield* settle({ status: statusOf(answer.status), category: answer.category, external_id: answer.id }), existed: false }
    }
    const error = created.failure
    if (error.subcode === TEMPLATE_EXISTS_SUBCODE) {
      // Created by an attempt that died before recording it, or outside the service: recorded now.
      const known = yield* Effect.result(findAtOperator(credentials, reservation.name, reservation.language))
      if (known._tag === "Success" && Option.isSome(known.success)) {
        const template = known.success.value
        return {
          settled: yield* settle({ status: statusOf(template.status), category: template.category, external_id: template.id }),
          existed: true
        }
      }
    }
    yield* templates.removeReservation(reservation.tenant_id, reservation.id, attempt)
    return yield* adoptFailure(error, { name: reservation.name, language: reservation.language, category: reservation.category })
  })

  return Effect.fnUntraced(function*(
    tenantId: string,
    channelId: string,
    credentials: ChatappCredentials,
    request: AdoptRequest
  ): Effect.fn.Return<Adopted, InvalidRequest | FailedWithBody | StorageError> {
    const language = request.language?.trim() ?? "en_US"
    const name = normalTemplateName(request.name ?? request.library_template_name)
    const nameField = request.name === undefined ? "library_template_name" : "name"
    if (name === "") return yield* InvalidRequest.single(["body", nameField], "Must contain a letter or a digit", "value_error")
    if (name.length > MAX_TEMPLATE_NAME) {
      return yield* InvalidRequest.single(["body", nameField], `At most ${MAX_TEMPLATE_NAME} characters once normalised`, "string_too_long")
    }
    const names = { name, language }

    const first = yield* standing(tenantId, channelId, name, language)
    if (first.kind === "settled") return { response: adoptedResponse(first.row, true) }
    if (first.kind === "busy") {
      return yield* refused(503, "Another adoption of this template is still waiting for the operator; try again shortly", names)
    }

    const { entry, inLibrary } = yield* entryFor(credentials, request, names)
    const issues = buttonInputIssues(entry, request.button_inputs)
    if (issues.length > 0) return yield* new InvalidRequest({ issues })
    const changed = !inLibrary || contentChanged(entry, request.snapshot)
    const category = request.category ?? entry.category
    const content: LibraryEntry = changed && request.snapshot !== undefined
      ? { ...entry, ...entryOfSnapshot(request.snapshot, entry.name, language, category), buttons: entry.buttons }
      : entry
    const components = componentsOf(content, buttonsWithInputs(content.buttons, request.button_inputs ?? []))
    const body: Record<string, unknown> = changed
      ? { name, language, category, components }
      : {
        name,
        language,
        category,
        library_template_name: entry.name,
        ...(request.button_inputs === undefined ? {} : { library_template_button_inputs: request.button_inputs })
      }

    const attempt = yield* randomToken(24)
    const at = yield* now
    let reservation: TemplateRecord
    if (first.kind === "abandoned") {
      reservation = { ...first.row, category, components, library_template_name: changed ? null : entry.name, attempt_id: attempt, updated_at: at }
      const taken = yield* templates.update(tenantId, reservation, first.row.attempt_id ?? undefined)
      if (!taken) return yield* refused(503, "Another adoption of this template took it over; try again shortly", names)
    } else {
      reservation = {
        id: yield* newId,
        tenant_id: tenantId,
        channel_id: channelId,
        name,
        language,
        category,
        status: "submitting",
        status_reason: null,
        external_id: null,
        library_template_name: changed ? null : entry.name,
        components,
        attempt_id: attempt,
        created_at: at,
        updated_at: at
      }
      const inserted = yield* Effect.result(templates.insert(reservation))
      if (inserted._tag === "Failure") {
        if (inserted.failure.reason !== "UniqueViolation") return yield* Effect.fail(inserted.failure)
        // Another adoption reserved it first: its outcome is the answer.
        const other = yield* standing(tenantId, channelId, name, language)
        if (other.kind === "settled") return { response: adoptedResponse(other.row, true) }
        return yield* refused(503, "Another adoption of this template is still waiting for the operator; try again shortly", names)
      }
    }

    const { settled, existed } = yield* submit(credentials, reservation, body)
    if (Option.isSome(settled)) return { response: adoptedResponse(settled.value, existed) }
    // Taken over while the operator answered: the row as it stands now is the answer.
    const now_ = yield* templates.findByName(tenantId, channelId, name, language)
    if (Option.isSome(now_) && now_.value.status !== "submitting") return { response: adoptedResponse(now_.value, true) }
    return yield* refused(503, "Another adoption of this template took it over; try again shortly", names)
  })
}
