// `POST /v1/audio/speech`: the synchronous, OpenAI-compatible speech route, answered with audio.
import { APIPromise, type ResponseInfo } from "../api-promise.js";
import type { CreateOptions, Transport } from "../core.js";
import type { RateLimitInfo } from "../rate-limit.js";
import type { AudioFormat, OpenAiSpeechRequest } from "../types.js";

export interface AudioSpeechCreateParams {
  /** An engine id (`kokoro`), or `tts-1`/`tts-1-hd`/`gpt-4o-mini-tts` for the voice's default engine. */
  model: string;
  /** 1 to 10 000 characters. */
  input: string;
  /** A voice profile name or id of this account, or `{ id }`. */
  voice: string | { id: string };
  /** `mp3` (default), `opus` or `wav`. */
  response_format?: AudioFormat;
  seed?: number;
  temperature?: number;
  /** Only 1 is accepted. */
  speed?: number;
  /** Only `audio` is accepted. */
  stream_format?: "audio";
}

/** The answer of `POST /v1/audio/speech`: the audio bytes and what the headers said. */
export class SpeechAudio {
  readonly ok = true;
  readonly status: number;
  readonly headers: Headers;
  /** The whole audio. */
  readonly bytes: Uint8Array;
  /** `audio/mpeg`, `audio/ogg` or `audio/wav`. */
  readonly contentType: string;
  /** `X-Service-Generation-Id`: the generation behind the audio (`GET /v1/generations/{id}`). */
  readonly generationId: string | undefined;
  /** `X-Service-Engine`: the engine that spoke. */
  readonly engine: string | undefined;
  readonly requestId: string | undefined;
  readonly rateLimit: RateLimitInfo | undefined;

  constructor(bytes: Uint8Array, response: ResponseInfo) {
    this.bytes = bytes;
    this.status = response.status;
    this.headers = response.headers;
    this.contentType = response.headers.get("content-type") ?? "application/octet-stream";
    this.generationId = response.headers.get("x-service-generation-id") ?? undefined;
    this.engine = response.headers.get("x-service-engine") ?? undefined;
    this.requestId = response.requestId;
    this.rateLimit = response.rateLimit;
  }

  /** A copy of the bytes, as `Response.arrayBuffer()` gives. */
  async arrayBuffer(): Promise<ArrayBuffer> {
    return this.bytes.slice().buffer;
  }

  async blob(): Promise<Blob> {
    return new Blob([this.bytes.slice()], { type: this.contentType });
  }
}

export class AudioSpeech {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Speaks `input` and resolves once the whole audio has arrived. */
  create(params: AudioSpeechCreateParams, options?: CreateOptions): APIPromise<SpeechAudio> {
    const body: OpenAiSpeechRequest = { ...params };
    return new APIPromise(
      this.#transport
        .send(
          { method: "POST", path: "/v1/audio/speech", body, accept: "audio/*, application/json" },
          options,
        )
        .then(({ data, response }) => ({ data: new SpeechAudio(data.bytes, response), response })),
    );
  }
}

export class Audio {
  readonly speech: AudioSpeech;

  constructor(transport: Transport) {
    this.speech = new AudioSpeech(transport);
  }
}
