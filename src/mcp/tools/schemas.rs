//! The tools' schemas (JSON Schema 2020-12, the MCP default). The input schemas are derived
//! from the argument structs that decode the calls (each bound, default and description sits on
//! the struct's field), so the schema a client reads and the arguments the server accepts are
//! one declaration. The output schemas are written out by hand so that they read like the
//! documentation; the structured results are built to match them, and the Python SDK's client
//! validates every result against them in CI (tests/mcp_python/).

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use crate::domain::MAX_KEY_CHARS;

/// Longest wait `speak` accepts, and its default.
pub const MAX_WAIT_SECONDS: i64 = 120;
pub const DEFAULT_WAIT_SECONDS: i64 = 20;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("schemas are objects"),
    }
}

/// The input schema of a tool whose arguments `T` decodes: one self-contained object (no
/// `$defs`, no `$schema`; the wrapper's title and doc comment are noise to a model).
pub fn input<T: JsonSchema>() -> Map<String, Value> {
    let mut settings = SchemaSettings::draft2020_12();
    settings.inline_subschemas = true;
    settings.meta_schema = None;
    let schema = settings.into_generator().into_root_schema_for::<T>();
    let mut schema = object(schema.to_value());
    schema.remove("title");
    schema.remove("description");
    schema
}

/// `{"type": "integer"}`: an argument decoded as `Field<i64>` or `Field<u64>`, without the
/// `int64`/`uint64` format schemars would add.
pub fn integer(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "integer"})
}

/// The optional `idempotency_key` of `speak` and `transcribe`: the rule of
/// [`crate::domain::IdempotencyKey`], shared with the REST `Idempotency-Key` header.
pub fn idempotency_key_schema(_: &mut SchemaGenerator) -> Schema {
    json_schema!({
        "type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS,
        "description": "Optional. The same key with the same request returns the first result instead of doing the work again (48 hours; shared with the REST Idempotency-Key header)."
    })
}

/// `{"type": "number"}`, without the `double` format schemars would add.
pub fn number(_: &mut SchemaGenerator) -> Schema {
    json_schema!({"type": "number"})
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

#[cfg(test)]
mod tests {
    use super::super::{reads, speak, transcribe};
    use super::*;
    use crate::domain::{MAX_ID_CHARS, MAX_SEED, MAX_TEXT_CHARS, Page};
    use crate::http::json::fields_of;

    // The input schemas as they were written by hand before they were derived, pasted
    // unchanged: the derived ones must say the same.

    fn idempotency_key() -> Value {
        json!({
            "type": "string", "minLength": 1, "maxLength": MAX_KEY_CHARS,
            "description": "Optional. The same key with the same request returns the first result instead of doing the work again (48 hours; shared with the REST Idempotency-Key header)."
        })
    }

    fn no_arguments() -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn list_captures_input() -> Value {
        json!({
            "type": "object",
            "properties": {
                "limit": {"type": "integer", "minimum": Page::LIMIT.min, "maximum": Page::LIMIT.max, "default": Page::LIMIT.default,
                          "description": "Captures per page."},
                "offset": {"type": "integer", "minimum": Page::OFFSET.min, "maximum": Page::OFFSET.max, "default": Page::OFFSET.default,
                           "description": "Captures to skip."}
            },
            "additionalProperties": false
        })
    }

    fn get_generation_input() -> Value {
        json!({
            "type": "object",
            "properties": {
                "generation_id": {"type": "string", "minLength": 1, "maxLength": MAX_ID_CHARS,
                                  "description": "The id speak returned."}
            },
            "required": ["generation_id"],
            "additionalProperties": false
        })
    }

    fn speak_input() -> Value {
        json!({
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
        })
    }

    fn transcribe_input() -> Value {
        json!({
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
        })
    }

    /// A tool's derived input schema, its hand-written one, and the members its struct decodes.
    struct Case {
        tool: &'static str,
        derived: Map<String, Value>,
        expected: Value,
        decoded: &'static [&'static str],
    }

    fn case<T: JsonSchema + serde::de::DeserializeOwned>(
        tool: &'static str,
        expected: Value,
    ) -> Case {
        Case {
            tool,
            derived: input::<T>(),
            expected,
            decoded: fields_of::<T>(),
        }
    }

    fn cases() -> [Case; 5] {
        [
            case::<reads::NoArguments>("list_voices", no_arguments()),
            case::<reads::ListCapturesArguments>("list_captures", list_captures_input()),
            case::<reads::GenerationArguments>("get_generation", get_generation_input()),
            case::<speak::SpeakArguments>("speak", speak_input()),
            case::<transcribe::TranscribeArguments>("transcribe", transcribe_input()),
        ]
    }

    /// `derived` says what `expected` says: the same keywords with the same values, numbers
    /// compared by value (a bound of `2` and of `2.0` is one bound), `required` as a set.
    fn assert_same(path: &str, derived: &Value, expected: &Value) {
        match (derived, expected) {
            (Value::Object(derived), Value::Object(expected)) => {
                let (mut got, mut want): (Vec<_>, Vec<_>) =
                    (derived.keys().collect(), expected.keys().collect());
                got.sort();
                want.sort();
                assert_eq!(got, want, "keywords at {path}");
                for (key, value) in expected {
                    let Some(got) = derived.get(key) else {
                        continue;
                    };
                    let path = format!("{path}/{key}");
                    match key.as_str() {
                        "required" => {
                            let set = |v: &Value| {
                                let mut names: Vec<String> = v
                                    .as_array()
                                    .unwrap()
                                    .iter()
                                    .map(|n| n.as_str().unwrap().to_owned())
                                    .collect();
                                names.sort();
                                names
                            };
                            assert_eq!(set(got), set(value), "{path}");
                        }
                        _ => assert_same(&path, got, value),
                    }
                }
            }
            (Value::Array(derived), Value::Array(expected)) => {
                assert_eq!(derived.len(), expected.len(), "{path}");
                for (i, (got, value)) in derived.iter().zip(expected).enumerate() {
                    assert_same(&format!("{path}/{i}"), got, value);
                }
            }
            (Value::Number(derived), Value::Number(expected)) => {
                assert_eq!(derived.as_f64(), expected.as_f64(), "{path}");
            }
            _ => assert_eq!(derived, expected, "{path}"),
        }
    }

    #[test]
    fn the_derived_input_schemas_say_what_the_hand_written_ones_said() {
        for Case {
            tool,
            derived,
            expected,
            ..
        } in cases()
        {
            assert_same(tool, &Value::Object(derived), &expected);
        }
    }

    /// The members a call may send are the members the schema lists, and every name the
    /// schema requires (alone or in a `oneOf`) is one of them.
    #[test]
    fn each_schema_lists_exactly_the_arguments_its_struct_decodes() {
        for Case {
            tool,
            derived: schema,
            decoded,
            ..
        } in cases()
        {
            let mut documented: Vec<&str> = schema
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let mut decoded = decoded.to_vec();
            documented.sort_unstable();
            decoded.sort_unstable();
            assert_eq!(documented, decoded, "{tool}");
            assert_eq!(schema["additionalProperties"], false, "{tool}");
            let alternatives = schema.get("oneOf").and_then(Value::as_array);
            let required = std::iter::once(schema.get("required"))
                .chain(
                    alternatives
                        .into_iter()
                        .flatten()
                        .map(|a| a.get("required")),
                )
                .flatten()
                .flat_map(|names| names.as_array().unwrap());
            for name in required {
                assert!(decoded.contains(&name.as_str().unwrap()), "{tool}: {name}");
            }
            assert!(schema.get("$defs").is_none() && schema.get("$schema").is_none());
        }
    }

    /// The `format` enum is the server's list of formats.
    #[test]
    fn speak_offers_exactly_the_audio_formats() {
        let schema = input::<speak::SpeakArguments>();
        let offered: Vec<String> = crate::audio::AudioFormat::ALL
            .iter()
            .map(|f| f.to_string())
            .collect();
        assert_eq!(schema["properties"]["format"]["enum"], json!(offered));
    }
}
