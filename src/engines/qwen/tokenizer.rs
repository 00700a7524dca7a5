//! Qwen2's byte-level BPE from `tokenizer/vocab.json` + `merges.txt`: NFC, the Qwen2
//! pre-tokenisation pattern (digits one by one), byte-level symbols, merges by rank. The text a
//! client sends is encoded as plain text: chat markers in it (`<|im_start|>`) are just bytes.

use std::path::Path;

use tokenizers::Tokenizer;
use tokenizers::models::bpe::BPE;
use tokenizers::normalizers::unicode::NFC;
use tokenizers::pre_tokenizers::byte_level::ByteLevel;
use tokenizers::pre_tokenizers::sequence::Sequence;
use tokenizers::pre_tokenizers::split::{Split, SplitPattern};
use tokenizers::tokenizer::SplitDelimiterBehavior;

use crate::engines::EngineError;

/// The pre-tokenizer pattern of Qwen2's `tokenizer.json`.
const PATTERN: &str = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";

pub struct TextTokenizer {
    inner: Tokenizer,
}

impl TextTokenizer {
    pub fn load(vocab: &Path, merges: &Path) -> Result<Self, EngineError> {
        let broken = |e: &dyn std::fmt::Display| {
            EngineError::NotInstalled(format!("tokenizer in {}: {e}", vocab.display()))
        };
        let bpe = BPE::from_file(&vocab.to_string_lossy(), &merges.to_string_lossy())
            .build()
            .map_err(|e| broken(&e))?;
        let split = Split::new(
            SplitPattern::Regex(PATTERN.into()),
            SplitDelimiterBehavior::Isolated,
            false,
        )
        .map_err(|e| broken(&e))?;
        let mut inner = Tokenizer::new(bpe);
        inner
            .with_normalizer(Some(NFC))
            .with_pre_tokenizer(Some(Sequence::new(vec![
                split.into(),
                ByteLevel::new(false, false, false).into(),
            ])));
        Ok(Self { inner })
    }

    pub fn encode(&self, text: &str) -> Result<Vec<u32>, EngineError> {
        Ok(self
            .inner
            .encode(text, false)
            .map_err(|e| EngineError::InvalidInput(e.to_string()))?
            .get_ids()
            .to_vec())
    }

    /// The id of a text that must be a single token (the chat template's "assistant", "\n").
    pub fn single(&self, text: &str) -> Result<u32, EngineError> {
        match self.encode(text)?[..] {
            [id] => Ok(id),
            ref ids => Err(EngineError::NotInstalled(format!(
                "the tokenizer splits {text:?} into {} tokens: not Qwen2's vocabulary",
                ids.len()
            ))),
        }
    }
}
