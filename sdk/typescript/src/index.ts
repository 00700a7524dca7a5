export { Voiced, DEFAULT_BASE_URL, type VoicedOptions } from "./client.js";
export { APIPromise, type ResponseInfo, type WithResponse } from "./api-promise.js";
export type { CreateOptions, FetchLike, RequestOptions } from "./core.js";
export {
  VoicedError,
  type ApiErrorCode,
  type ClientErrorCode,
  type VoicedErrorCode,
  type VoicedErrorInit,
} from "./errors.js";
export { parseRateLimit, type RateLimitInfo, type RateLimitPolicy } from "./rate-limit.js";
export { SpeechAudio, type AudioSpeechCreateParams } from "./resources/audio.js";
export type { PronunciationCreateParams } from "./resources/pronunciations.js";
export type { CaptureIterateOptions, CaptureListParams, VoiceCreateParams } from "./resources/reads.js";
export type { SpeechCreateParams, SpeechResult, WaitOptions } from "./resources/speech.js";
export type { TranscriptionCreateParams } from "./resources/transcriptions.js";
export type { AudioInput, ChunkIterable } from "./uploads.js";
export {
  webhooks,
  WebhookVerificationError,
  type WebhookHeaders,
  type WebhookVerifyOptions,
} from "./webhooks.js";
export type * from "./types.js";
export type { components, paths, operations } from "./generated/openapi.js";
