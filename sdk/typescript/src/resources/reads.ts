// Voices (`GET /v1/voices`, `POST /v1/voices`, `GET /v1/voices/presets`) and captures
// (`GET /v1/captures`: one page, or every capture page by page; one capture and its captions).
import { APIPromise } from "../api-promise.js";
import type { CreateOptions, RequestOptions, Transport } from "../core.js";
import type {
  CaptionFormat,
  Capture,
  CaptureDetail,
  CaptureList,
  CreateVoiceRequest,
  Voice,
  VoiceList,
  VoicePresetList,
} from "../types.js";

export interface VoiceCreateParams {
  /** 1 to 100 characters, unique in the account. */
  name: string;
  /** An installed engine, e.g. `kokoro` (see `presets()`). */
  engine: string;
  /** One of the engine's presets, e.g. `af_heart` (see `presets()`). */
  preset: string;
  /** ISO 639-1, optionally with a region (`en-gb`); default the preset's language. */
  language?: string;
  /** Up to 500 characters. */
  description?: string;
}

export class Voices {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The account's voice profiles, oldest first. */
  list(options?: RequestOptions): APIPromise<VoiceList> {
    return new APIPromise(this.#transport.json<VoiceList>({ method: "GET", path: "/v1/voices" }, options));
  }

  /**
   * `POST /v1/voices`: adds one of an installed engine's preset voices as a voice profile.
   * A name the account already has rejects with code `conflict`. Voices are never cloned
   * through the API.
   */
  create(params: VoiceCreateParams, options?: CreateOptions): APIPromise<Voice> {
    const body: CreateVoiceRequest = {
      name: params.name,
      engine: params.engine,
      preset: params.preset,
      language: params.language,
      description: params.description,
    };
    return new APIPromise(this.#transport.json<Voice>({ method: "POST", path: "/v1/voices", body }, options));
  }

  /** `GET /v1/voices/presets`: the presets of the engines installed on the server. */
  presets(options?: RequestOptions): APIPromise<VoicePresetList> {
    return new APIPromise(
      this.#transport.json<VoicePresetList>({ method: "GET", path: "/v1/voices/presets" }, options),
    );
  }
}

export interface CaptureListParams {
  /** 1 to 200 (server default 50). */
  limit?: number;
  /** Captures to skip (default 0). */
  offset?: number;
}

export interface CaptureIterateOptions extends RequestOptions {
  /** Captures per request, 1 to 200 (default 100). */
  pageSize?: number;
}

export class Captures {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** One page of captures, newest first, with the `total`. */
  list(params: CaptureListParams = {}, options?: RequestOptions): APIPromise<CaptureList> {
    return new APIPromise(
      this.#transport.json<CaptureList>(
        { method: "GET", path: "/v1/captures", query: { limit: params.limit, offset: params.offset } },
        options,
      ),
    );
  }

  /** `GET /v1/captures/{id}`: one capture, with its `segments` and `words` when they were asked for. */
  retrieve(id: string, options?: RequestOptions): APIPromise<CaptureDetail> {
    return new APIPromise(
      this.#transport.json<CaptureDetail>(
        { method: "GET", path: `/v1/captures/${encodeURIComponent(id)}` },
        options,
      ),
    );
  }

  /**
   * `DELETE /v1/captures/{id}`: deletes the capture's transcript and timings (and the stored
   * answer of the request that made it). An id the account does not have rejects with `not_found`.
   */
  delete(id: string, options?: RequestOptions): APIPromise<void> {
    return new APIPromise(
      this.#transport.json<void>(
        { method: "DELETE", path: `/v1/captures/${encodeURIComponent(id)}` },
        options,
      ),
    );
  }

  /**
   * `GET /v1/captures/{id}/captions`: WebVTT (default) or SubRip text, one cue a stored segment.
   * A capture made without timestamps rejects with code `timestamps_unavailable`.
   */
  captions(
    id: string,
    params: { format?: CaptionFormat } = {},
    options?: RequestOptions,
  ): APIPromise<string> {
    const format = params.format ?? "vtt";
    return new APIPromise(
      this.#transport
        .send(
          {
            method: "GET",
            path: `/v1/captures/${encodeURIComponent(id)}/captions`,
            query: { format },
            accept: format === "srt" ? "application/x-subrip" : "text/vtt",
          },
          options,
        )
        .then(({ data, response }) => ({ data: new TextDecoder().decode(data.bytes), response })),
    );
  }

  /**
   * Every capture, newest first, fetching page after page as the loop asks for more. A capture
   * made while iterating shifts the pages; one that would come twice is skipped.
   */
  async *iterate(options: CaptureIterateOptions = {}): AsyncGenerator<Capture, void, undefined> {
    const { pageSize = 100, ...requestOptions } = options;
    const seen = new Set<string>();
    for (let offset = 0; ;) {
      const page = await this.list({ limit: pageSize, offset }, requestOptions);
      for (const capture of page.data) {
        if (seen.has(capture.id)) continue;
        seen.add(capture.id);
        yield capture;
      }
      offset += page.data.length;
      if (page.data.length === 0 || offset >= page.total) return;
    }
  }
}
