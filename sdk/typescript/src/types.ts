// Wire types, taken from the types generated out of openapi/openapi.json (src/generated), so
// that a change to the API document shows up here as a compile error rather than at run time.
import type { components } from "./generated/openapi.js";

type Schemas = components["schemas"];

export type Generation = Schemas["Generation"];
export type GenerationList = Schemas["GenerationList"];
export type SpeechAccepted = Schemas["SpeechAccepted"];
export type SpeechRequest = Schemas["SpeechRequest"];
export type OpenAiSpeechRequest = Schemas["OpenAiSpeechRequest"];
export type TranscriptionRequest = Schemas["TranscriptionRequest"];
export type TranscriptionResult = Schemas["TranscriptionResult"];
export type Voice = Schemas["Voice"];
export type VoiceList = Schemas["VoiceList"];
export type CreateVoiceRequest = Schemas["CreateVoiceRequest"];
export type VoicePreset = Schemas["VoicePreset"];
export type VoicePresetList = Schemas["VoicePresetList"];
export type Pronunciation = Schemas["Pronunciation"];
export type PronunciationList = Schemas["PronunciationList"];
export type CreatePronunciationRequest = Schemas["CreatePronunciationRequest"];
export type Capture = Schemas["Capture"];
export type CaptureList = Schemas["CaptureList"];
export type CaptureDetail = Schemas["CaptureDetail"];
export type TranscriptSegment = Schemas["TranscriptSegment"];
export type TranscriptWord = Schemas["TranscriptWord"];

/** Timings a transcription returns and its capture keeps. */
export type Timestamps = "segment" | "word";

/** Caption formats of `captures.captions`. */
export type CaptionFormat = "vtt" | "srt";
export type Problem = Schemas["Problem"];
export type OpenAiError = Schemas["OpenAiError"];

/** Audio formats both speech endpoints produce: MP3, Ogg Opus, 16-bit PCM WAV. */
export type AudioFormat = "mp3" | "opus" | "wav";

/** `status` of a generation. */
export type GenerationStatus = "generating" | "completed" | "failed";
