// The HTTP transport every resource goes through: authentication, the automatic
// Idempotency-Key, per-attempt timeouts, the caller's AbortSignal, and retries with backoff.
import type { WithResponse } from "./api-promise.js";
import { VoicedError } from "./errors.js";
import { parseRateLimit } from "./rate-limit.js";

/** The subset of `fetch` the SDK calls; pass your own to `new Voiced({ fetch })`. */
export type FetchLike = (url: string, init: RequestInit) => Promise<Response>;

/** Options every call takes. */
export interface RequestOptions {
  /** Cancels the call, its retries and their waits; the call rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Milliseconds each attempt may take (the client's `timeout` when omitted). */
  timeout?: number;
  /** Retries after a retryable failure (the client's `maxRetries` when omitted). */
  maxRetries?: number;
}

/** Options of calls that create something (POST). */
export interface CreateOptions extends RequestOptions {
  /**
   * Sent as `Idempotency-Key`. When omitted the SDK makes one (a random UUID) per call and
   * reuses it on every retry of that call, so a retry never creates twice. Pass your own to
   * make a call safe to repeat across processes: the same key and body answer the first result.
   */
  idempotencyKey?: string;
}

export interface HttpRequest {
  method: "GET" | "POST" | "DELETE";
  /** Path under the base URL, e.g. `/v1/voices`. */
  path?: string;
  /** An absolute URL instead of `path` (signed audio links); sent without the credential. */
  url?: string;
  query?: Record<string, string | number | undefined>;
  body?: unknown;
  accept?: string;
}

export interface RawResponse {
  status: number;
  headers: Headers;
  bytes: Uint8Array;
}

export interface TransportConfig {
  apiKey: string;
  baseURL: string;
  timeout: number;
  maxRetries: number;
  fetch: FetchLike;
}

/** The longest `Retry-After` the SDK waits out by itself; beyond it the error goes to the caller. */
const MAX_RETRY_AFTER_SECONDS = 60;
const MAX_TIMER_MS = 2 ** 31 - 1;

export class Transport {
  readonly baseURL: string;
  readonly #config: TransportConfig;

  constructor(config: TransportConfig) {
    this.#config = config;
    this.baseURL = config.baseURL;
  }

  /** Sends a request (with retries) and answers its 2xx response, or throws `VoicedError`. */
  async send(req: HttpRequest, options: CreateOptions = {}): Promise<WithResponse<RawResponse>> {
    const url = this.#url(req);
    const idempotencyKey =
      req.method === "POST" ? (options.idempotencyKey ?? crypto.randomUUID()) : undefined;
    const headers: Record<string, string> = { accept: req.accept ?? "application/json" };
    // The credential goes to the API only, never to a URL taken from a response body.
    if (req.url === undefined) headers.authorization = `Bearer ${this.#config.apiKey}`;
    if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
    const body = req.body === undefined ? undefined : JSON.stringify(req.body);
    if (body !== undefined) headers["content-type"] = "application/json";
    const timeout = options.timeout ?? this.#config.timeout;
    const maxRetries = options.maxRetries ?? this.#config.maxRetries;
    // Resending is safe for reads and for writes that carry an Idempotency-Key.
    const resendable = req.method === "GET" || idempotencyKey !== undefined;

    for (let retries = 0; ; retries++) {
      let error: VoicedError;
      try {
        const raw = await this.#attempt(url, { method: req.method, headers, body }, timeout, options.signal);
        if (raw.status >= 200 && raw.status < 300) {
          return {
            data: raw,
            response: {
              status: raw.status,
              headers: raw.headers,
              url,
              requestId: raw.headers.get("x-request-id") ?? undefined,
              rateLimit: parseRateLimit(raw.headers),
              idempotentReplayed: raw.headers.get("idempotent-replayed") === "true",
              idempotencyKey,
              retries,
            },
          };
        }
        error = VoicedError.fromResponse(raw.status, raw.headers, raw.bytes);
      } catch (e) {
        if (!(e instanceof VoicedError)) throw e; // the caller's abort
        error = e;
      }
      const delay = retries < maxRetries ? retryDelay(error, retries, resendable) : undefined;
      if (delay === undefined) throw error;
      await sleep(delay, options.signal);
    }
  }

  /** `send`, then the body parsed as JSON. */
  async json<T>(req: HttpRequest, options?: CreateOptions): Promise<WithResponse<T>> {
    const { data, response } = await this.send(req, options);
    const text = new TextDecoder().decode(data.bytes);
    return { data: (text ? JSON.parse(text) : undefined) as T, response };
  }

  #url(req: HttpRequest): string {
    const url = new URL(req.url ?? `${this.baseURL}${req.path ?? ""}`);
    for (const [name, value] of Object.entries(req.query ?? {})) {
      if (value !== undefined) url.searchParams.set(name, String(value));
    }
    return url.toString();
  }

  /** One attempt: fetch and read the whole body, within `timeout` and the caller's signal. */
  async #attempt(
    url: string,
    init: { method: string; headers: Record<string, string>; body: string | undefined },
    timeout: number,
    signal: AbortSignal | undefined,
  ): Promise<RawResponse> {
    signal?.throwIfAborted();
    const controller = new AbortController();
    let timedOut = false;
    const timer = setTimeout(
      () => {
        timedOut = true;
        controller.abort();
      },
      Math.min(Math.max(timeout, 0), MAX_TIMER_MS),
    );
    const onAbort = () => controller.abort(signal?.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    try {
      const res = await this.#config.fetch(url, { ...init, signal: controller.signal });
      const bytes = new Uint8Array(await res.arrayBuffer());
      return { status: res.status, headers: res.headers, bytes };
    } catch (e) {
      if (signal?.aborted) throw signal.reason;
      if (timedOut) {
        throw new VoicedError({
          code: "timeout",
          message: `${init.method} ${new URL(url).pathname} timed out after ${timeout} ms`,
          cause: e,
        });
      }
      throw new VoicedError({
        code: "connection_error",
        message: `${init.method} ${new URL(url).pathname} failed: ${e instanceof Error ? e.message : String(e)}`,
        cause: e,
      });
    } finally {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
    }
  }
}

/**
 * Milliseconds to wait before resending after `error`, or `undefined` when it is not worth a
 * retry. Retried: 429 (but not an exhausted allowance or ceiling, which a wait does not fix),
 * 503, 409 `idempotency_key_in_use` (our own first attempt is still running), and network
 * failures or timeouts of resendable requests. `Retry-After` is honoured (plus up to 250 ms of
 * jitter); otherwise exponential backoff from 0.5 s, capped at 8 s, with jitter.
 */
export function retryDelay(error: VoicedError, retries: number, resendable: boolean): number | undefined {
  let retryable: boolean;
  switch (error.code) {
    case "connection_error":
    case "timeout":
      retryable = resendable;
      break;
    case "quota_exhausted":
    case "key_ceiling_exceeded":
      retryable = false;
      break;
    case "idempotency_key_in_use":
      retryable = true;
      break;
    default:
      retryable = error.status === 429 || error.status === 503;
  }
  if (!retryable) return undefined;
  if (error.retryAfter !== undefined) {
    if (error.retryAfter > MAX_RETRY_AFTER_SECONDS) return undefined;
    return error.retryAfter * 1000 + Math.random() * 250;
  }
  return Math.min(8000, 500 * 2 ** retries) * (0.75 + Math.random() * 0.25);
}

/** Waits `ms`, or rejects with the signal's reason as soon as it aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(
      () => {
        signal?.removeEventListener("abort", onAbort);
        resolve();
      },
      Math.min(ms, MAX_TIMER_MS),
    );
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
