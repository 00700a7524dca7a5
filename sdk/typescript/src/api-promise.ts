import type { RateLimitInfo } from "./rate-limit.js";

/** What a call's final HTTP answer said besides its body. */
export interface ResponseInfo {
  status: number;
  headers: Headers;
  url: string;
  /** `X-Request-Id`: quote it when reporting a problem. */
  requestId: string | undefined;
  /** Rate-limit state (`RateLimit`, `RateLimit-Policy`); absent without a key (OAuth, 401). */
  rateLimit: RateLimitInfo | undefined;
  /** `Idempotent-Replayed: true`: the server answered from an earlier request with the same key. */
  idempotentReplayed: boolean;
  /** The `Idempotency-Key` sent (every POST has one). */
  idempotencyKey: string | undefined;
  /** How many times the request was sent again after a retryable failure. */
  retries: number;
}

export interface WithResponse<T> {
  data: T;
  response: ResponseInfo;
}

/**
 * The promise every call returns: await it for the data, or call `withResponse()` for the data
 * together with the answer's headers, request id and rate-limit state.
 */
export class APIPromise<T> implements PromiseLike<T> {
  readonly #inner: Promise<WithResponse<T>>;

  constructor(inner: Promise<WithResponse<T>>) {
    this.#inner = inner;
  }

  withResponse(): Promise<WithResponse<T>> {
    return this.#inner;
  }

  then<R1 = T, R2 = never>(
    onfulfilled?: ((value: T) => R1 | PromiseLike<R1>) | null,
    onrejected?: ((reason: unknown) => R2 | PromiseLike<R2>) | null,
  ): Promise<R1 | R2> {
    return this.#inner.then((r) => r.data).then(onfulfilled, onrejected);
  }

  catch<R = never>(onrejected?: ((reason: unknown) => R | PromiseLike<R>) | null): Promise<T | R> {
    return this.then(undefined, onrejected);
  }

  finally(onfinally?: (() => void) | null): Promise<T> {
    return this.then().finally(onfinally);
  }

  get [Symbol.toStringTag]() {
    return "APIPromise";
  }
}
