// `POST /v1/transcriptions`: audio in (base64 in JSON), a stored capture and its text out.
import { APIPromise } from "../api-promise.js";
import type { CreateOptions, Transport } from "../core.js";
import type { Timestamps, TranscriptionRequest, TranscriptionResult } from "../types.js";
import { readAudio, toBase64, type AudioInput } from "../uploads.js";

export interface TranscriptionCreateParams {
  /** wav, mp3, flac, ogg (vorbis/opus) or webm/opus; up to 25 MiB and 15 minutes. */
  audio: AudioInput;
  /**
   * `segment`: the answer (and the capture) carries `segments` with start and end times;
   * `word`: also `words` (an alignment pass, which costs time). Absent: text only.
   */
  timestamps?: Timestamps;
}

export class Transcriptions {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** Transcribes the audio; the answer's `id` is the stored capture. */
  create(params: TranscriptionCreateParams, options?: CreateOptions): APIPromise<TranscriptionResult> {
    return new APIPromise(
      readAudio(params.audio).then((bytes) => {
        const body: TranscriptionRequest = { audio: toBase64(bytes), timestamps: params.timestamps };
        return this.#transport.json<TranscriptionResult>(
          { method: "POST", path: "/v1/transcriptions", body },
          options,
        );
      }),
    );
  }
}
