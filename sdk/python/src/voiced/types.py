"""Wire types of the voiced API, generated from openapi/openapi.json.

Do not edit: run `python scripts/gen_types.py` in sdk/python after the document changes
(CI fails when this file is not what the document generates).
"""

# ruff: noqa
import sys
from typing import Any, Literal, Union

if sys.version_info >= (3, 11):
    from typing import NotRequired, TypedDict
else:
    from typing_extensions import NotRequired, TypedDict

class Capture(TypedDict):
    """A stored transcription (item of `GET /v1/captures`)."""

    created_at: str
    duration_ms: int
    id: str
    # ISO 639-1 code of the detected language.
    language: str
    # Where it was made: `api` (`POST /v1/transcriptions`, `/v1/audio/transcriptions` or
    # `/v1/audio/translations`), `agent` (MCP `transcribe`) or `app`.
    source: str
    transcript_raw: str
    transcript_refined: str


class TranscriptSegment(TypedDict):
    """A stretch of speech between two of Whisper's timestamp tokens (OpenAI's `verbose_json`
    segment). Times in seconds from the start of the clip.
    """

    avg_logprob: float
    compression_ratio: float
    end: float
    id: int
    no_speech_prob: float
    # Frame (10 ms) at which the 30 s window that decoded it starts.
    seek: int
    start: float
    # Sampling temperature that decoded it (0: beam search).
    temperature: float
    text: str
    # Whisper's token ids, timestamp tokens included.
    tokens: list[int]


class TranscriptWord(TypedDict):
    """One word with its start and end (seconds from the start of the clip); the text is as
    Whisper writes it, leading space and attached punctuation included.
    """

    end: float
    start: float
    word: str


class CaptureDetail(Capture):
    """One capture with its timings (`GET /v1/captures/{id}`)."""

    # Present when timestamps were asked for.
    segments: NotRequired[list[TranscriptSegment] | None]
    # `transcribe`, or `translate` (the transcript is English; `language` is the language
    # spoken).
    task: str
    # What the transcription asked for: `none`, `segment` or `word`.
    timestamps: str
    # Present when word timestamps were asked for.
    words: NotRequired[list[TranscriptWord] | None]


class CaptureList(TypedDict):
    data: list[Capture]
    limit: int
    offset: int
    total: int


class CreatePronunciationRequest(TypedDict):
    """Request body of `POST /v1/pronunciations`: `text` and exactly one of `alias` and `phonemes`.
    Any other member is refused (400 naming it).
    """

    # Other words to read instead (1 to 200 characters), normalised like the rest of the text.
    alias: NotRequired[str | None]
    # Match the text's case exactly. Default false.
    case_sensitive: NotRequired[bool | None]
    # Only voices of this language (ISO 639-1, optionally with a region; `en` covers `en-gb`).
    # Omitted: every language.
    language: NotRequired[str | None]
    # IPA (1 to 200 characters) given to the phonemiser instead (kokoro and luxtts voices;
    # the other engines say the text as written).
    phonemes: NotRequired[str | None]
    # The word or phrase, 1 to 100 characters, matched as whole words.
    text: str


class CreateVoiceRequest(TypedDict):
    """Request body of `POST /v1/voices`. Any other member is refused (400 naming it)."""

    # Up to 500 characters.
    description: NotRequired[str | None]
    # An installed engine (`GET /v1/voices/presets`).
    engine: str
    # ISO 639-1, optionally with a region (`en-gb`). Omitted: the preset's language.
    language: NotRequired[str | None]
    # 1 to 100 characters, unique in the account; requests name the voice by it.
    name: str
    # One of the engine's presets (`GET /v1/voices/presets`).
    preset: str


class SpokenWord(TypedDict):
    """A word of generated speech (item of a generation's `words`)."""

    end: float
    source_end: int
    source_start: int
    # Seconds from the start of the audio.
    start: float
    text: str


class Generation(TypedDict):
    """A speech generation (`GET /v1/generations/{generationId}`)."""

    # Signed link to the audio, valid about 15 minutes; a fresh one on every poll. Present
    # once completed.
    audio_url: NotRequired[str | None]
    created_at: str
    # Length of the audio once completed; on a generation cancelled after some of its audio
    # had been streamed to its caller, the audio delivered, which is what was charged.
    duration_ms: NotRequired[int | None]
    # Engine that renders it.
    engine: str
    # Why the generation failed; present when `status` is `failed`.
    error: NotRequired[str | None]
    finished_at: NotRequired[str | None]
    # `mp3`, `opus` or `wav`.
    format: str
    has_audio: bool
    id: str
    # Id of the voice profile used.
    profile: str
    # While `generating`: audio rendered over the audio estimated at admission, 0 while still
    # queued, never decreasing, and below 1 until the generation completes.
    progress: NotRequired[float | None]
    # While queued: how many queued generations (of every account) were created before it.
    # Approximate: the fair order can serve another account's newer job first; exact up to
    # 100, an upper bound beyond.
    queue_position: NotRequired[int | None]
    # The seed used (request, else the voice's pin, else random).
    seed: int
    # `generating`, `completed` or `failed`.
    status: str
    # Asked for with `timestamps: "word"`, once completed: each word as spoken (after
    # normalisation), when it is said (seconds in the audio), and the characters of the
    # request's text it reads (`source_start` inclusive, `source_end` exclusive, counted in
    # Unicode code points).
    words: NotRequired[list[SpokenWord] | None]


class GenerationList(TypedDict):
    """One page of the account's generations (`GET /v1/generations`), newest first."""

    data: list[Generation]
    limit: int
    offset: int
    # How many generations match the filters.
    total: int


# A generation's status, as the `status` filter of `GET /v1/generations` takes it.
GenerationStatusFilter = Literal["generating", "completed", "failed"]


class Health(TypedDict):
    """Liveness / readiness answer."""

    status: str


class OpenAiErrorBody(TypedDict):
    # The same stable token as in problem documents.
    code: str
    message: str
    # The request field at fault, or null.
    param: NotRequired[str | None]
    # `invalid_request_error`, `authentication_error`, `permission_error`, `rate_limit_error`
    # or `server_error`.
    type: str


class OpenAiError(TypedDict):
    """OpenAI's error envelope (errors of `POST /v1/audio/speech`)."""

    error: OpenAiErrorBody


class VoiceRefObject(TypedDict):
    """OpenAI's object form."""

    id: str


# How `voice` names a profile.
VoiceRef = Union[str, VoiceRefObject]


class OpenAiSpeechRequest(TypedDict):
    """Request body. Any other member is refused (400 naming it)."""

    # Text, 1 to 10 000 characters.
    input: str
    # An engine id (e.g. `kokoro`) selects that engine; `tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`
    # use the voice's default engine. Echoed in `X-Service-Engine`.
    model: str
    # `mp3` (default), `opus`, `wav`.
    response_format: NotRequired[str | None]
    # Extension: 0 to 2^53−1.
    seed: NotRequired[int | None]
    # Only 1.
    speed: NotRequired[float | None]
    # Only `audio`.
    stream_format: NotRequired[str | None]
    # Extension: 0.05 to 2, chatterbox engines only.
    temperature: NotRequired[float | None]
    # A voice profile id or name of this account (string, or an object `{"id": …}`). OpenAI's
    # built-in voice names are refused.
    voice: VoiceRef


class OpenAiUsage(TypedDict):
    """Seconds of audio billed (OpenAI's duration usage)."""

    # Seconds of audio, rounded up.
    seconds: int
    # Always `duration`.
    type: str


class OpenAiTranscription(TypedDict):
    """`response_format=json`."""

    text: str
    usage: OpenAiUsage


# Request form of `POST /v1/audio/transcriptions` (for the document; parsing is field by field).
OpenAiTranscriptionForm = TypedDict(
    "OpenAiTranscriptionForm",
    {
        "file": bytes,
        "keywords[]": NotRequired[list[str] | None],
        "language": NotRequired[str | None],
        "languages[]": NotRequired[list[str] | None],
        "model": str,
        "prompt": NotRequired[str | None],
        "response_format": NotRequired[str | None],
        "stream": NotRequired[bool | None],
        "temperature": NotRequired[float | None],
        "timestamp_granularities[]": NotRequired[list[str] | None],
    },
)


class OpenAiTranslationForm(TypedDict):
    """Request form of `POST /v1/audio/translations` (for the document)."""

    # The clip, as for transcriptions.
    file: bytes
    # ISO 639-1 code of the language spoken (detected when absent).
    language: NotRequired[str | None]
    # As for transcriptions; an English-only recogniser cannot translate (400 naming `model`).
    model: str
    prompt: NotRequired[str | None]
    # `json` (default), `text`, `srt`, `vtt` or `verbose_json`.
    response_format: NotRequired[str | None]
    temperature: NotRequired[float | None]


class OpenAiVerboseTranscription(TypedDict):
    """`response_format=verbose_json`."""

    # Seconds of audio.
    duration: float
    # ISO 639-1 code of the language spoken (for a translation too).
    language: str
    # With the `segment` granularity (the default).
    segments: NotRequired[list[TranscriptSegment] | None]
    # `transcribe` or `translate`.
    task: str
    text: str
    usage: OpenAiUsage
    # With the `word` granularity.
    words: NotRequired[list[TranscriptWord] | None]


class Problem(TypedDict):
    """RFC 9457 problem document (every error outside `POST /v1/audio/speech`)."""

    # Stable token to branch on, e.g. `invalid_request`.
    code: str
    detail: str
    # The request path.
    instance: str
    # The request field at fault, where one is.
    param: NotRequired[str | None]
    # With `insufficient_scope`: the scope the key lacks.
    required_scope: NotRequired[str | None]
    # With plan, allowance and ceiling errors: where to resolve it.
    settings_url: NotRequired[str | None]
    status: int
    title: str
    # `{errors_url}/<code>`.
    type: str


class Pronunciation(TypedDict):
    """A pronunciation rule (item of `GET /v1/pronunciations`): exactly one of `alias` and
    `phonemes` is present.
    """

    # Words read instead of `text`.
    alias: NotRequired[str | None]
    case_sensitive: bool
    created_at: str
    id: str
    # The voice language it is limited to; `null`: every language.
    language: NotRequired[str | None]
    # IPA spoken instead of `text` (kokoro and luxtts voices).
    phonemes: NotRequired[str | None]
    # The word or phrase, matched as whole words.
    text: str


class PronunciationList(TypedDict):
    data: list[Pronunciation]
    total: int


class SpeechAccepted(TypedDict):
    """Answer of `POST /v1/speech`."""

    id: str
    status: str
    # Name of the voice profile.
    voice: str


# What `timestamps` may ask of `POST /v1/speech`.
SpeechTimestamps = Literal["none", "word"]


class SpeechRequest(TypedDict):
    """Request body of `POST /v1/speech`. Any other member is refused (400 naming it)."""

    # `mp3` (default), `opus` (Ogg Opus) or `wav` (16-bit PCM).
    response_format: NotRequired[str | None]
    # 0 to 2^53−1. Omitted: the voice's pinned seed, else random. Same seed, text and voice →
    # the same audio.
    seed: NotRequired[int | None]
    # 0.05 to 2, chatterbox engines only.
    temperature: NotRequired[float | None]
    # 1 to 10 000 characters after trimming.
    text: str
    timestamps: NotRequired[None | SpeechTimestamps]
    # Name of one of the account's voice profiles.
    voice_name: str


class TranscriptionRequest(TypedDict):
    """Request body (for the document; parsing is field by field)."""

    # Base64 (standard alphabet; missing padding and a `data:audio/…;base64,` prefix are
    # accepted) of a wav, mp3, flac, ogg (vorbis or opus) or webm/opus clip: at most 25 MiB
    # decoded and 15 minutes long.
    audio: str
    # `segment`: the answer (and the capture) carries `segments` with start and end times;
    # `word`: also `words`, each word's start and end (an alignment pass: it costs time).
    # Absent: text only.
    timestamps: NotRequired[str | None]


class TranscriptionResult(TypedDict):
    """The transcript, and the id of the capture that stores it."""

    duration_ms: int
    # Id of the capture created (listed by `GET /v1/captures`).
    id: str
    # ISO 639-1 code of the detected language.
    language: str
    # Present when `timestamps` was sent.
    segments: NotRequired[list[TranscriptSegment] | None]
    # What was said; empty when no speech was found.
    text: str
    # Present when `timestamps` was `word`.
    words: NotRequired[list[TranscriptWord] | None]


class Voice(TypedDict):
    """A voice profile (item of `GET /v1/voices`)."""

    created_at: str
    # Engine id used when a request names none.
    default_engine: str
    description: str
    # Completed generations in this voice.
    generation_count: int
    has_personality: bool
    id: str
    # ISO 639-1 code.
    language: str
    name: str
    # Reference samples behind the profile (0 for a preset).
    sample_count: int
    updated_at: str
    # `preset` (an engine's built-in voice) or `cloned`.
    voice_type: str


class VoiceList(TypedDict):
    data: list[Voice]
    total: int


class VoicePreset(TypedDict):
    """A preset an installed engine offers (item of `GET /v1/voices/presets`)."""

    description: str
    engine: str
    # ISO 639-1, with the region where the engine distinguishes it (`en-us`, `en-gb`, `pt-br`).
    language: str
    preset: str


class VoicePresetList(TypedDict):
    data: list[VoicePreset]
    total: int


__all__ = [
    "Capture",
    "CaptureDetail",
    "CaptureList",
    "CreatePronunciationRequest",
    "CreateVoiceRequest",
    "Generation",
    "GenerationList",
    "GenerationStatusFilter",
    "Health",
    "OpenAiError",
    "OpenAiErrorBody",
    "OpenAiSpeechRequest",
    "OpenAiTranscription",
    "OpenAiTranscriptionForm",
    "OpenAiTranslationForm",
    "OpenAiUsage",
    "OpenAiVerboseTranscription",
    "Problem",
    "Pronunciation",
    "PronunciationList",
    "SpeechAccepted",
    "SpeechRequest",
    "SpeechTimestamps",
    "SpokenWord",
    "TranscriptSegment",
    "TranscriptWord",
    "TranscriptionRequest",
    "TranscriptionResult",
    "Voice",
    "VoiceList",
    "VoicePreset",
    "VoicePresetList",
    "VoiceRef",
    "VoiceRefObject",
]
