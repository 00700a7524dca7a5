// Speech: the asynchronous `POST /v1/speech` (plus waiting for the generation and fetching its
// audio), `GET /v1/generations` (the history), `GET /v1/generations/{id}` and
// `POST /v1/generations/{id}/cancel`.
import { APIPromise } from "../api-promise.js";
import { sleep, type CreateOptions, type RequestOptions, type Transport } from "../core.js";
import { parseRetryAfter, VoicedError } from "../errors.js";
import type {
  AudioFormat,
  CaptionFormat,
  Generation,
  GenerationList,
  GenerationStatus,
  SpeechAccepted,
  SpeechRequest,
} from "../types.js";

export interface GenerationListParams {
  /** 1 to 200 (server default 50). */
  limit?: number;
  /** Generations to skip (default 0). */
  offset?: number;
  /** Only generations with this status. */
  status?: GenerationStatus;
  /** Only generations of this voice profile, by id or name. */
  voice?: string;
}

export interface SpeechCreateParams {
  /** 1 to 10 000 characters. */
  text: string;
  /** Name of one of the account's voice profiles (sent as `voice_name`). */
  voice: string;
  /** 0 to 2^53−1; the same seed, text and voice give the same audio. */
  seed?: number;
  /** 0.05 to 2; only engines that take one (chatterbox). */
  temperature?: number;
  /** `mp3` (default), `opus` (Ogg Opus) or `wav` (sent as `response_format`). */
  format?: AudioFormat;
  /**
   * `word`: the completed generation carries `words` (text, start, end, source_start,
   * source_end) and `generations.captions(id)` renders them. Kokoro voices only.
   */
  timestamps?: "word" | "none";
}

export interface WaitOptions {
  signal?: AbortSignal;
  /** First pause between polls in ms (default 250); it grows 1.5× per poll up to `maxPollInterval`. */
  pollInterval?: number;
  /** Longest pause between polls in ms (default 2000). A `Retry-After` on a poll overrides both. */
  maxPollInterval?: number;
  /** How long to wait for the generation to finish, in ms (default 15 minutes). */
  waitTimeout?: number;
}

export interface SpeechResult {
  /** The completed generation. */
  generation: Generation;
  /** The audio bytes, fetched from the generation's signed `audio_url`. */
  audio: Uint8Array;
  /** `audio/mpeg`, `audio/ogg` or `audio/wav`. */
  contentType: string;
}

export class Generations {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** `GET /v1/generations`: one page of the account's generations, newest first, with the `total`. */
  list(params: GenerationListParams = {}, options?: RequestOptions): APIPromise<GenerationList> {
    const query = { limit: params.limit, offset: params.offset, status: params.status, voice: params.voice };
    return new APIPromise(
      this.#transport.json<GenerationList>({ method: "GET", path: "/v1/generations", query }, options),
    );
  }

  /**
   * `POST /v1/generations/{id}/cancel`: a queued generation never runs, a running one stops; it
   * ends `failed` with `error: "cancelled: by request"` and nothing is charged. Resolves with the
   * generation (still `generating` when its worker had not stopped within 5 s: poll it).
   * Rejects with code `generation_finished` when it had already completed or failed.
   */
  cancel(id: string, options?: RequestOptions): APIPromise<Generation> {
    return new APIPromise(
      this.#transport.json<Generation>(
        { method: "POST", path: `/v1/generations/${encodeURIComponent(id)}/cancel` },
        options,
      ),
    );
  }

  /**
   * `GET /v1/generations/{id}/captions`: WebVTT (default) or SubRip text from the word
   * timestamps of a generation asked for with `timestamps: "word"`; otherwise rejects with code
   * `timestamps_unavailable`.
   */
  captions(
    id: string,
    params: { format?: CaptionFormat } = {},
    options?: RequestOptions,
  ): APIPromise<string> {
    return new APIPromise(
      this.#transport
        .send(
          {
            method: "GET",
            path: `/v1/generations/${encodeURIComponent(id)}/captions`,
            query: { format: params.format },
            accept: params.format === "srt" ? "application/x-subrip" : "text/vtt",
          },
          options,
        )
        .then(({ data, response }) => ({ data: new TextDecoder().decode(data.bytes), response })),
    );
  }

  /**
   * `DELETE /v1/generations/{id}/audio`: deletes a finished generation's stored audio; the
   * generation stays with `has_audio: false`. Rejects with `conflict` while it is still generating.
   */
  deleteAudio(id: string, options?: RequestOptions): APIPromise<void> {
    return new APIPromise(
      this.#transport.json<void>(
        { method: "DELETE", path: `/v1/generations/${encodeURIComponent(id)}/audio` },
        options,
      ),
    );
  }

  /** `GET /v1/generations/{id}`: status, and a fresh signed `audio_url` once completed. */
  get(id: string, options?: RequestOptions): APIPromise<Generation> {
    return new APIPromise(
      this.#transport.json<Generation>(
        { method: "GET", path: `/v1/generations/${encodeURIComponent(id)}` },
        options,
      ),
    );
  }

  /**
   * Polls the generation until it is no longer `generating`; resolves with it when `completed`,
   * rejects with `VoicedError` code `generation_failed` when `failed`, or `timeout` when
   * `waitTimeout` passes first.
   */
  async wait(id: string, options: WaitOptions & RequestOptions = {}): Promise<Generation> {
    const deadline = Date.now() + (options.waitTimeout ?? 15 * 60_000);
    const maxInterval = options.maxPollInterval ?? 2000;
    let interval = Math.min(options.pollInterval ?? 250, maxInterval);
    for (;;) {
      const { data: generation, response } = await this.get(id, options).withResponse();
      if (generation.status === "completed") return generation;
      if (generation.status === "failed") {
        throw new VoicedError({
          code: "generation_failed",
          message: `generation ${id} failed: ${generation.error ?? "no reason given"}`,
          detail: generation.error ?? undefined,
          requestId: response.requestId,
          generation,
        });
      }
      const retryAfter = parseRetryAfter(response.headers.get("retry-after"));
      const pause = retryAfter !== undefined ? retryAfter * 1000 : interval;
      if (Date.now() + pause > deadline) {
        throw new VoicedError({
          code: "timeout",
          message: `generation ${id} still ${generation.status} when the wait ran out`,
          generation,
        });
      }
      await sleep(pause, options.signal);
      interval = Math.min(interval * 1.5, maxInterval);
    }
  }
}

export class Speech {
  readonly #transport: Transport;
  readonly #generations: Generations;

  constructor(transport: Transport, generations: Generations) {
    this.#transport = transport;
    this.#generations = generations;
  }

  /** `POST /v1/speech`: admits a generation and answers at once (`status: "generating"`). */
  create(params: SpeechCreateParams, options?: CreateOptions): APIPromise<SpeechAccepted> {
    const body: SpeechRequest = {
      text: params.text,
      voice_name: params.voice,
      seed: params.seed,
      temperature: params.temperature,
      response_format: params.format,
      timestamps: params.timestamps,
    };
    return new APIPromise(
      this.#transport.json<SpeechAccepted>({ method: "POST", path: "/v1/speech", body }, options),
    );
  }

  /**
   * `create`, then polls the generation until it completes and downloads its audio. The
   * `Idempotency-Key` (given or generated) covers the create, so retries never generate twice.
   */
  async createAndWait(
    params: SpeechCreateParams,
    options: CreateOptions & WaitOptions = {},
  ): Promise<SpeechResult> {
    const accepted = await this.create(params, options);
    const generation = await this.#generations.wait(accepted.id, options);
    if (!generation.audio_url) {
      throw new VoicedError({
        code: "generation_failed",
        message: `generation ${generation.id} completed without audio`,
        generation,
      });
    }
    const { data } = await this.#transport.send(
      { method: "GET", url: generation.audio_url, accept: "audio/*, application/json" },
      { signal: options.signal, timeout: options.timeout, maxRetries: options.maxRetries },
    );
    return {
      generation,
      audio: data.bytes,
      contentType: data.headers.get("content-type") ?? "application/octet-stream",
    };
  }
}
