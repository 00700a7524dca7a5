//! The members of a speech request every door reads the same way (`POST /v1/speech`,
//! `POST /v1/audio/speech`, the agent's `speak`): the value's rule is its domain type's, the
//! refusal names the member as the door calls it.

use crate::audio::AudioFormat;
use crate::domain::{Seed, SpeechText, Temperature};
use crate::http::error::ApiError;
use crate::http::json::Field;

pub fn parse_seed(seed: Field<u64>) -> Result<Option<Seed>, ApiError> {
    let invalid = |m: String| ApiError::invalid("seed", m);
    seed.optional(|| invalid(Seed::REFUSAL.to_owned()))?
        .map(|n| Seed::new(n).map_err(invalid))
        .transpose()
}

pub fn parse_temperature(temperature: Field<f64>) -> Result<Option<Temperature>, ApiError> {
    let invalid = |m: String| ApiError::invalid("temperature", m);
    temperature
        .optional(|| invalid(Temperature::REFUSAL.to_owned()))?
        .map(|n| Temperature::new(n).map_err(invalid))
        .transpose()
}

pub fn parse_format(format: Field<String>, field: &str) -> Result<AudioFormat, ApiError> {
    let invalid = || ApiError::invalid(field, format!("{field} must be one of mp3, opus, wav"));
    match format.optional(invalid)? {
        None => Ok(AudioFormat::Mp3),
        Some(s) => s.parse().map_err(|_| invalid()),
    }
}

/// `timestamps` of a speech request: `"word"`, or `"none"`/absent (REST's and the agent's).
pub fn parse_word_timestamps(field: Field<String>) -> Result<bool, ApiError> {
    let refused = || ApiError::invalid("timestamps", "timestamps must be \"word\" or \"none\"");
    match field.optional(refused)?.as_deref() {
        None | Some("none") => Ok(false),
        Some("word") => Ok(true),
        Some(_) => Err(refused()),
    }
}

pub fn parse_text(text: Field<String>, field: &str) -> Result<SpeechText, ApiError> {
    SpeechText::new(&text.required(field)?)
        .map_err(|m| ApiError::invalid(field, format!("{field} {m}")))
}
