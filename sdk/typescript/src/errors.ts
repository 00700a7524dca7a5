// One error class for everything a call can fail with. API failures are parsed from problem
// documents (RFC 9457) and from the OpenAI envelope `POST /v1/audio/speech` answers with; the
// client's own failures (network, timeout, a failed generation) carry codes of their own.
import { parseRateLimit, type RateLimitInfo } from "./rate-limit.js";
import type { Generation } from "./types.js";

/** Error codes the API answers with (docs/api.md, "Errors"). */
export type ApiErrorCode =
  | "invalid_api_key"
  | "pro_plan_required"
  | "insufficient_scope"
  | "feature_not_enabled"
  | "invalid_signature"
  | "invalid_request"
  | "not_found"
  | "method_not_allowed"
  | "conflict"
  | "generation_finished"
  | "idempotency_key_in_use"
  | "timestamps_unavailable"
  | "payload_too_large"
  | "request_timeout"
  | "range_not_satisfiable"
  | "unsupported_media_type"
  | "idempotency_key_reused"
  | "rate_limit_exceeded"
  | "quota_exhausted"
  | "key_ceiling_exceeded"
  | "internal_error"
  | "service_unavailable";

/**
 * Codes of failures the SDK reports itself: the server could not be reached
 * (`connection_error`), an attempt or a wait ran out of time (`timeout`), a generation ended
 * `failed` (`generation_failed`), or the server answered an error this SDK version does not
 * know (`unknown_error`; the body is in `error.body`).
 */
export type ClientErrorCode = "connection_error" | "timeout" | "generation_failed" | "unknown_error";

export type VoicedErrorCode = ApiErrorCode | ClientErrorCode;

const API_CODES: ReadonlySet<string> = new Set<ApiErrorCode>([
  "invalid_api_key",
  "pro_plan_required",
  "insufficient_scope",
  "feature_not_enabled",
  "invalid_signature",
  "invalid_request",
  "not_found",
  "method_not_allowed",
  "conflict",
  "generation_finished",
  "idempotency_key_in_use",
  "timestamps_unavailable",
  "payload_too_large",
  "request_timeout",
  "range_not_satisfiable",
  "unsupported_media_type",
  "idempotency_key_reused",
  "rate_limit_exceeded",
  "quota_exhausted",
  "key_ceiling_exceeded",
  "internal_error",
  "service_unavailable",
]);

/** The code a bare status stands for when the body names none (e.g. a proxy's error page). */
const STATUS_CODES: Record<number, ApiErrorCode> = {
  400: "invalid_request",
  401: "invalid_api_key",
  404: "not_found",
  405: "method_not_allowed",
  408: "request_timeout",
  413: "payload_too_large",
  415: "unsupported_media_type",
  416: "range_not_satisfiable",
  429: "rate_limit_exceeded",
  500: "internal_error",
  503: "service_unavailable",
};

export interface VoicedErrorInit {
  code: VoicedErrorCode;
  message: string;
  status?: number;
  detail?: string;
  title?: string;
  type?: string;
  instance?: string;
  param?: string;
  requiredScope?: string;
  settingsUrl?: string;
  retryAfter?: number;
  requestId?: string;
  headers?: Headers;
  rateLimit?: RateLimitInfo;
  body?: unknown;
  generation?: Generation;
  cause?: unknown;
}

/** Every failure of a `Voiced` call (except the caller's own abort, which rethrows its reason). */
export class VoicedError extends Error {
  override name = "VoicedError";
  /** Stable token to branch on. */
  readonly code: VoicedErrorCode;
  /** HTTP status; `undefined` when no answer came (`connection_error`, `timeout`). */
  readonly status: number | undefined;
  /** Human-readable explanation (problem `detail`, or the envelope's `message`). */
  readonly detail: string | undefined;
  readonly title: string | undefined;
  /** Problem `type` URL, or the OpenAI envelope's error family (`invalid_request_error`, …). */
  readonly type: string | undefined;
  readonly instance: string | undefined;
  /** The request field at fault (`invalid_request`), e.g. `seed`, `limit`, `audio`. */
  readonly param: string | undefined;
  /** With `insufficient_scope`: the scope the credential lacks. */
  readonly requiredScope: string | undefined;
  /** With plan, allowance and ceiling errors: where to resolve it. */
  readonly settingsUrl: string | undefined;
  /** Seconds the server asked to wait (`Retry-After`). */
  readonly retryAfter: number | undefined;
  /** `X-Request-Id` of the failed answer: quote it when reporting a problem. */
  readonly requestId: string | undefined;
  readonly headers: Headers | undefined;
  /** Rate-limit state of the failed answer. */
  readonly rateLimit: RateLimitInfo | undefined;
  /** The parsed error body as sent. */
  readonly body: unknown;
  /** With `generation_failed`: the generation as last read. */
  readonly generation: Generation | undefined;

  constructor(init: VoicedErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.code = init.code;
    this.status = init.status;
    this.detail = init.detail;
    this.title = init.title;
    this.type = init.type;
    this.instance = init.instance;
    this.param = init.param;
    this.requiredScope = init.requiredScope;
    this.settingsUrl = init.settingsUrl;
    this.retryAfter = init.retryAfter;
    this.requestId = init.requestId;
    this.headers = init.headers;
    this.rateLimit = init.rateLimit;
    this.body = init.body;
    this.generation = init.generation;
  }

  /** Builds the error for a non-2xx answer from its status, headers and body bytes. */
  static fromResponse(status: number, headers: Headers, bytes: Uint8Array): VoicedError {
    let body: unknown = undefined;
    const text = new TextDecoder().decode(bytes);
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    const common = {
      status,
      headers,
      body,
      retryAfter: parseRetryAfter(headers.get("retry-after")),
      requestId: headers.get("x-request-id") ?? undefined,
      rateLimit: parseRateLimit(headers),
    };
    const fields = errorFields(body);
    const code = toCode(fields.code, status);
    const detail = fields.detail ?? fields.title;
    return new VoicedError({
      ...common,
      ...fields,
      code,
      detail,
      message: `${status} ${code}${detail ? `: ${detail}` : ""}`,
    });
  }
}

type Fields = Pick<
  VoicedErrorInit,
  "detail" | "title" | "type" | "instance" | "param" | "requiredScope" | "settingsUrl"
> & { code?: string };

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function errorFields(body: unknown): Fields {
  if (typeof body !== "object" || body === null) return {};
  const b = body as Record<string, unknown>;
  const envelope = b.error;
  if (typeof envelope === "object" && envelope !== null) {
    // OpenAI's `{"error":{"message","type","param","code"}}` (POST /v1/audio/speech).
    const e = envelope as Record<string, unknown>;
    return { code: str(e.code), detail: str(e.message), type: str(e.type), param: str(e.param) };
  }
  return {
    code: str(b.code),
    detail: str(b.detail),
    title: str(b.title),
    type: str(b.type),
    instance: str(b.instance),
    param: str(b.param),
    requiredScope: str(b.required_scope),
    settingsUrl: str(b.settings_url),
  };
}

function toCode(code: string | undefined, status: number): VoicedErrorCode {
  if (code !== undefined) return API_CODES.has(code) ? (code as ApiErrorCode) : "unknown_error";
  return STATUS_CODES[status] ?? "unknown_error";
}

/** `Retry-After` as seconds: delay-seconds, or an HTTP date counted from now. */
export function parseRetryAfter(value: string | null): number | undefined {
  if (value === null) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed);
  const date = Date.parse(trimmed);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, Math.ceil((date - Date.now()) / 1000));
}
