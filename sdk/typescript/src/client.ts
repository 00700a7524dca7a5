import { Transport, type FetchLike } from "./core.js";
import { Audio } from "./resources/audio.js";
import { Pronunciations } from "./resources/pronunciations.js";
import { Captures, Voices } from "./resources/reads.js";
import { Generations, Speech } from "./resources/speech.js";
import { Transcriptions } from "./resources/transcriptions.js";

export interface VoicedOptions {
  /** An API key (`vk_…`) or an OAuth access token (`vat_…`). Default: env `VOICED_API_KEY`. */
  apiKey?: string;
  /**
   * The server's base URL, e.g. `https://voice.example.com` (a trailing `/v1` is accepted too).
   * Default: env `VOICED_BASE_URL`, else `http://127.0.0.1:8080` (`voiced serve`'s default).
   */
  baseURL?: string;
  /** Milliseconds each HTTP attempt may take (default 600 000: synchronous speech of long text is slow). */
  timeout?: number;
  /** Retries of a retryable failure (429, 503, network errors), default 2. */
  maxRetries?: number;
  /** A `fetch` to use instead of the global one (proxies, instrumentation, tests). */
  fetch?: FetchLike;
}

export const DEFAULT_BASE_URL = "http://127.0.0.1:8080";

/** Environment variables, where the runtime has `process.env` (Node, Bun, Deno's Node layer). */
function env(name: string): string | undefined {
  const process = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  try {
    return process?.env?.[name] || undefined;
  } catch {
    return undefined; // Deno without --allow-env
  }
}

/** The client: one per credential; safe to share between concurrent calls. */
export class Voiced {
  readonly baseURL: string;
  /** `POST /v1/speech`, and waiting for its audio. */
  readonly speech: Speech;
  /** `GET /v1/generations/{id}`, and waiting for one to finish. */
  readonly generations: Generations;
  /** `POST /v1/audio/speech` (OpenAI-compatible, synchronous). */
  readonly audio: Audio;
  /** `POST /v1/transcriptions`. */
  readonly transcriptions: Transcriptions;
  /** `GET /v1/voices`, `POST /v1/voices` (add a preset voice), `GET /v1/voices/presets`. */
  readonly voices: Voices;
  /** `GET|POST /v1/pronunciations`, `DELETE /v1/pronunciations/{id}`: how the account's voices read a word. */
  readonly pronunciations: Pronunciations;
  /** `GET /v1/captures`. */
  readonly captures: Captures;

  constructor(options: VoicedOptions = {}) {
    const apiKey = options.apiKey ?? env("VOICED_API_KEY");
    if (!apiKey) {
      throw new TypeError("Voiced needs an API key: pass { apiKey } or set VOICED_API_KEY");
    }
    this.baseURL = (options.baseURL ?? env("VOICED_BASE_URL") ?? DEFAULT_BASE_URL)
      .replace(/\/+$/, "")
      .replace(/\/v1$/, "");
    const fetch = options.fetch ?? globalThis.fetch?.bind(globalThis);
    if (!fetch) throw new TypeError("no global fetch on this runtime: pass { fetch }");
    const transport = new Transport({
      apiKey,
      baseURL: this.baseURL,
      timeout: options.timeout ?? 600_000,
      maxRetries: options.maxRetries ?? 2,
      fetch,
    });
    this.generations = new Generations(transport);
    this.speech = new Speech(transport, this.generations);
    this.audio = new Audio(transport);
    this.transcriptions = new Transcriptions(transport);
    this.voices = new Voices(transport);
    this.pronunciations = new Pronunciations(transport);
    this.captures = new Captures(transport);
  }
}
