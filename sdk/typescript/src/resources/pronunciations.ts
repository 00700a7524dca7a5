// Pronunciation rules (`GET /v1/pronunciations`, `POST /v1/pronunciations`,
// `DELETE /v1/pronunciations/{id}`): how every later generation of the account reads a word.
import { APIPromise } from "../api-promise.js";
import type { CreateOptions, RequestOptions, Transport } from "../core.js";
import type { CreatePronunciationRequest, Pronunciation, PronunciationList } from "../types.js";

/** A rule: `text` and exactly one of `alias` (other words) and `phonemes` (IPA). */
export type PronunciationCreateParams = {
  /** The word or phrase, 1 to 100 characters, matched as whole words. */
  text: string;
  /** Only voices of this language (`en` covers `en-gb`). Omitted: every language. */
  language?: string;
  /** Match the text's case exactly (default false). */
  case_sensitive?: boolean;
} & ({ alias: string; phonemes?: never } | { phonemes: string; alias?: never });

export class Pronunciations {
  readonly #transport: Transport;

  constructor(transport: Transport) {
    this.#transport = transport;
  }

  /** The account's rules, newest first. */
  list(options?: RequestOptions): APIPromise<PronunciationList> {
    return new APIPromise(
      this.#transport.json<PronunciationList>({ method: "GET", path: "/v1/pronunciations" }, options),
    );
  }

  /**
   * Adds a rule. Refusals reject with code `invalid_request` and `param` naming the member
   * (e.g. `phonemes` holding a symbol no voice knows).
   */
  create(params: PronunciationCreateParams, options?: CreateOptions): APIPromise<Pronunciation> {
    const body: CreatePronunciationRequest = {
      text: params.text,
      alias: params.alias,
      phonemes: params.phonemes,
      language: params.language,
      case_sensitive: params.case_sensitive,
    };
    return new APIPromise(
      this.#transport.json<Pronunciation>({ method: "POST", path: "/v1/pronunciations", body }, options),
    );
  }

  /** Deletes a rule; an id the account does not have rejects with code `not_found`. */
  delete(id: string, options?: RequestOptions): APIPromise<void> {
    return new APIPromise(
      this.#transport.json<void>(
        { method: "DELETE", path: `/v1/pronunciations/${encodeURIComponent(id)}` },
        options,
      ),
    );
  }
}
