//! Input and output schemas of the tools (JSON Schema 2020-12, the MCP default). Written out
//! by hand so that they read like the documentation; the structured results are built to match
//! them, and the Python SDK's client validates every result against them in CI
//! (tests/mcp_python/).

use serde_json::{Map, Value, json};

use crate::domain::{MAX_ID_CHARS, MAX_KEY_CHARS, MAX_SEED, MAX_TEXT_CHARS, Page};

/// Longest wait `speak` accepts, and its default.
pub const MAX_WAIT_SECONDS: i64 = 120;
pub const DEFAULT_WAIT_SECONDS: i64 = 20;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("schemas are objects"),
    }
}

fn idempotency_key() -> Value {
    json!({
        "type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS,
        "description": "Optional. The same key with the same request returns the first result instead of doing the work again (48 hours; shared with the REST Idempotency-Key header)."
    })
}

pub fn no_arguments() -> Map<String, Value> {
    object(json!({"type": "object", "properties": {}, "additionalProperties": false}))
}

pub fn list_captures_input() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "limit": {"type": "integer", "minimum": Page::LIMIT.min, "maximum": Page::LIMIT.max, "default": Page::LIMIT.default,
                      "description": "Captures per page."},
            "offset": {"type": "integer", "minimum": Page::OFFSET.min, "maximum": Page::OFFSET.max, "default": Page::OFFSET.default,
                       "description": "Captures to skip."}
        },
        "additionalProperties": false
    }))
}

pub fn get_generation_input() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "generation_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS,
                              "description": "The id speak returned."}
        },
        "required": ["generation_id"],
        "additionalProperties": false
    }))
}

pub fn speak_input() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": MAX_TEXT_CHARS,
                     "description": "What to say, 1 to 10 000 characters."},
            "voice": {"type": "string", "minLength": 1,
                      "description": "A voice profile's name or id (list_voices)."},
            "seed": {"type": "integer", "minimum": 0, "maximum": MAX_SEED,
                     "description": "Optional. The same seed, text and voice give the same audio; omitted: the voice's pinned seed, else random."},
            "temperature": {"type": "number", "minimum": 0.05, "maximum": 2,
                            "description": "Optional, chatterbox voices only."},
            "format": {"type": "string", "enum": ["mp3", "opus", "wav"], "default": "mp3",
                       "description": "Audio format: mp3, opus (Ogg Opus) or wav (16-bit PCM)."},
            "wait_seconds": {"type": "integer", "minimum": 0, "maximum": MAX_WAIT_SECONDS,
                             "default": DEFAULT_WAIT_SECONDS,
                             "description": "How long to wait for the audio before returning the generation id to poll."},
            "inline_audio": {"type": "boolean", "default": false,
                             "description": "Also return the audio itself (base64) when it is under 1 MiB."},
            "idempotency_key": idempotency_key(),
            "timestamps": {"type": "string", "enum": ["none", "word"], "default": "none",
                           "description": "word: the result carries words, when each word is said (seconds) and which characters of the text it reads. Kokoro voices only."}
        },
        "required": ["text", "voice"],
        "additionalProperties": false
    }))
}

pub fn speak_output() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "generation_id": {"type": "string"},
            "status": {"type": "string", "enum": ["generating", "completed"]},
            "duration_ms": {"type": ["integer", "null"], "description": "Length of the audio once completed."},
            "audio_url": {"type": ["string", "null"], "description": "Signed link to the audio, valid about 15 minutes; null until completed."},
            "format": {"type": "string", "enum": ["mp3", "opus", "wav"]},
            "replayed": {"type": "boolean", "description": "True when idempotency_key matched an earlier request."},
            "words": {"type": "array", "description": "With timestamps: word, once completed: when each word is said.",
                      "items": {"type": "object", "properties": {
                          "text": {"type": "string"}, "start": {"type": "number"}, "end": {"type": "number"},
                          "source_start": {"type": "integer"}, "source_end": {"type": "integer"}},
                          "required": ["text", "start", "end", "source_start", "source_end"]}}
        },
        "required": ["generation_id", "status", "duration_ms", "audio_url", "format", "replayed"]
    }))
}

pub fn transcribe_input() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "audio_base64": {"type": "string", "minLength": 1,
                             "description": "The clip as base64 (standard alphabet; a data: URL prefix is accepted)."},
            "audio_url": {"type": "string", "format": "uri", "pattern": "^https://",
                          "description": "An https URL of the clip, fetched by the server."},
            "timestamps": {"type": "string", "enum": ["segment", "word"],
                           "description": "segment: the result carries segments with start and end (seconds); word: also each word's start and end (slower)."},
            "idempotency_key": idempotency_key()
        },
        "oneOf": [{"required": ["audio_base64"]}, {"required": ["audio_url"]}],
        "additionalProperties": false
    }))
}

pub fn transcribe_output() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "capture_id": {"type": "string", "description": "The capture that stores the transcript (list_captures)."},
            "text": {"type": "string"},
            "language": {"type": "string", "description": "ISO 639-1 code of the detected language."},
            "duration_ms": {"type": "integer"},
            "replayed": {"type": "boolean"},
            "segments": {"type": "array", "description": "With timestamps: {id, seek, start, end, text, tokens, temperature, avg_logprob, compression_ratio, no_speech_prob}, times in seconds.",
                         "items": {"type": "object", "properties": {"id": {"type": "integer"}, "start": {"type": "number"}, "end": {"type": "number"}, "text": {"type": "string"}}, "required": ["id", "start", "end", "text"]}},
            "words": {"type": "array", "description": "With timestamps word: each word's start and end in seconds.",
                      "items": {"type": "object", "properties": {"word": {"type": "string"}, "start": {"type": "number"}, "end": {"type": "number"}}, "required": ["word", "start", "end"]}}
        },
        "required": ["capture_id", "text", "language", "duration_ms", "replayed"]
    }))
}

fn voice() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "name": {"type": "string"}, "description": {"type": "string"},
            "language": {"type": "string"}, "voice_type": {"type": "string"},
            "default_engine": {"type": "string"}, "has_personality": {"type": "boolean"},
            "generation_count": {"type": "integer"}, "sample_count": {"type": "integer"},
            "created_at": {"type": "string"}, "updated_at": {"type": "string"}
        },
        "required": ["id", "name", "language", "voice_type", "default_engine"]
    })
}

pub fn voice_list() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {"data": {"type": "array", "items": voice()}, "total": {"type": "integer"}},
        "required": ["data", "total"]
    }))
}

fn capture() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"}, "source": {"type": "string", "enum": ["api", "app", "agent"]},
            "language": {"type": "string"}, "duration_ms": {"type": "integer"},
            "transcript_raw": {"type": "string"}, "transcript_refined": {"type": "string"},
            "created_at": {"type": "string"}
        },
        "required": ["id", "source", "language", "duration_ms", "transcript_raw", "transcript_refined", "created_at"]
    })
}

pub fn capture_list() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "data": {"type": "array", "items": capture()}, "total": {"type": "integer"},
            "limit": {"type": "integer"}, "offset": {"type": "integer"}
        },
        "required": ["data", "total", "limit", "offset"]
    }))
}

pub fn generation() -> Map<String, Value> {
    object(json!({
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "status": {"type": "string", "enum": ["generating", "completed", "failed"]},
            "profile": {"type": "string", "description": "Id of the voice profile."},
            "has_audio": {"type": "boolean"},
            "audio_url": {"type": "string", "description": "Signed link, valid about 15 minutes; present once completed."},
            "error": {"type": "string", "description": "Why it failed; present when failed."},
            "seed": {"type": "integer"}, "engine": {"type": "string"},
            "format": {"type": "string"}, "duration_ms": {"type": "integer"},
            "created_at": {"type": "string"}, "finished_at": {"type": "string"},
            "progress": {"type": "number", "minimum": 0, "maximum": 1, "description": "While generating: audio rendered over estimated, 0 while queued."},
            "queue_position": {"type": "integer", "minimum": 0, "description": "While queued: queued generations created before it (approximate)."}
        },
        "required": ["id", "status", "profile", "has_audio", "seed", "engine", "format", "created_at"]
    }))
}
