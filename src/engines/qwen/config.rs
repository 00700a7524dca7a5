//! `config.json` of the export (`export_embeddings.py` writes it from the upstream model's
//! config): special ids, code groups, speakers, languages and sampling defaults. Every field
//! falls back to the upstream Qwen3-TTS-12Hz value when absent.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::engines::EngineError;

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct QwenConfig {
    /// "base", "custom_voice" or "voice_design".
    pub tts_model_type: String,
    /// "0b6" or "1b7"; only the 1.7B CustomVoice model takes an instruction.
    pub tts_model_size: String,
    pub im_start_token_id: u32,
    pub im_end_token_id: u32,
    pub tts_pad_token_id: u32,
    pub tts_bos_token_id: u32,
    pub tts_eos_token_id: u32,
    pub codec_eos_token_id: i64,
    pub codec_think_id: i64,
    pub codec_nothink_id: i64,
    pub codec_think_bos_id: i64,
    pub codec_think_eos_id: i64,
    pub codec_pad_id: i64,
    pub codec_bos_id: i64,
    pub talker_vocab_size: usize,
    pub talker_num_code_groups: usize,
    pub cp_vocab_size: usize,
    /// CustomVoice speaker → row of the talker's codec embedding.
    pub spk_id: BTreeMap<String, i64>,
    /// CustomVoice speaker → `false` or the dialect whose language id replaces Chinese.
    pub spk_is_dialect: BTreeMap<String, serde_json::Value>,
    /// Language name ("english", …) → codec language id.
    pub codec_language_id: BTreeMap<String, i64>,
    pub generate_config: GenerateConfig,
}

/// Upstream `generate_config.json`: talker and sub-talker (code predictor) sampling.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(default)]
pub struct GenerateConfig {
    pub temperature: f64,
    pub top_k: usize,
    pub top_p: f64,
    pub repetition_penalty: f64,
    pub subtalker_temperature: f64,
    pub subtalker_top_k: usize,
    pub subtalker_top_p: f64,
    pub max_new_tokens: usize,
}

impl Default for GenerateConfig {
    fn default() -> Self {
        Self {
            temperature: 0.9,
            top_k: 50,
            top_p: 1.0,
            repetition_penalty: 1.05,
            subtalker_temperature: 0.9,
            subtalker_top_k: 50,
            subtalker_top_p: 1.0,
            max_new_tokens: 8192,
        }
    }
}

impl Default for QwenConfig {
    fn default() -> Self {
        let speakers = [
            ("vivian", 3065),
            ("serena", 3066),
            ("uncle_fu", 3010),
            ("ryan", 3061),
            ("aiden", 2861),
            ("ono_anna", 2873),
            ("sohee", 2864),
            ("eric", 2875),
            ("dylan", 2878),
        ];
        let dialects = [("eric", "sichuan_dialect"), ("dylan", "beijing_dialect")];
        let languages = [
            ("english", 2050),
            ("german", 2053),
            ("spanish", 2054),
            ("chinese", 2055),
            ("japanese", 2058),
            ("french", 2061),
            ("korean", 2064),
            ("russian", 2069),
            ("italian", 2070),
            ("portuguese", 2071),
        ];
        Self {
            tts_model_type: String::new(),
            tts_model_size: String::new(),
            im_start_token_id: 151_644,
            im_end_token_id: 151_645,
            tts_pad_token_id: 151_671,
            tts_bos_token_id: 151_672,
            tts_eos_token_id: 151_673,
            codec_eos_token_id: 2150,
            codec_think_id: 2154,
            codec_nothink_id: 2155,
            codec_think_bos_id: 2156,
            codec_think_eos_id: 2157,
            codec_pad_id: 2148,
            codec_bos_id: 2149,
            talker_vocab_size: 3072,
            talker_num_code_groups: 16,
            cp_vocab_size: 2048,
            spk_id: speakers.map(|(n, i)| (n.to_owned(), i)).into(),
            spk_is_dialect: dialects
                .map(|(n, d)| (n.to_owned(), serde_json::Value::from(d)))
                .into(),
            codec_language_id: languages.map(|(n, i)| (n.to_owned(), i)).into(),
            generate_config: GenerateConfig::default(),
        }
    }
}

impl QwenConfig {
    pub fn load(path: &Path) -> Result<Self, EngineError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", path.display())))
    }

    /// Whether the model reads an instruction (a voice's personality prompt): upstream passes
    /// one to the 1.7B CustomVoice model only (the 0.6B one ignores it; Base takes none).
    pub fn takes_instruction(&self) -> bool {
        self.tts_model_type == "custom_voice" && self.tts_model_size != "0b6"
    }

    /// The codec language id for a profile language ("en", "pt-BR", …), or `None` for
    /// upstream's "auto" (the model infers the language from the text): languages the model was
    /// not trained on are spoken in auto mode.
    pub fn language_id(&self, language: &str, speaker: Option<&str>) -> Option<i64> {
        let primary = language
            .split(['-', '_'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        let name = match primary.as_str() {
            "en" => "english",
            "zh" => "chinese",
            "ja" => "japanese",
            "ko" => "korean",
            "de" => "german",
            "es" => "spanish",
            "fr" => "french",
            "ru" => "russian",
            "it" => "italian",
            "pt" => "portuguese",
            _ => "auto",
        };
        // A dialect speaker speaking Chinese (or auto) uses its dialect's id (upstream).
        if let Some(dialect) = speaker
            .and_then(|s| self.spk_is_dialect.get(s))
            .and_then(|d| d.as_str())
            && matches!(name, "chinese" | "auto")
            && let Some(id) = self.codec_language_id.get(dialect)
        {
            return Some(*id);
        }
        self.codec_language_id.get(name).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_fields_take_upstream_values_and_languages_map() {
        let config: QwenConfig =
            serde_json::from_str(r#"{"tts_model_type": "custom_voice", "codec_pad_id": 7}"#)
                .unwrap();
        assert_eq!(config.codec_pad_id, 7);
        assert_eq!(config.codec_eos_token_id, 2150);
        assert_eq!(config.generate_config.top_k, 50);
        assert_eq!(config.language_id("en", None), Some(2050));
        assert_eq!(config.language_id("pt-BR", None), Some(2071));
        assert_eq!(config.language_id("nl", None), None);
        assert_eq!(config.spk_id["ryan"], 3061);
        assert!(config.takes_instruction());
        let small = QwenConfig {
            tts_model_size: "0b6".into(),
            ..config
        };
        assert!(!small.takes_instruction());
    }
}
