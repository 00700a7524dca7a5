//! Whisper's special tokens, decoder prompts and id → text decoding, from the model
//! package's `tokenizer.json`.

use std::path::Path;

use tokenizers::Tokenizer;

use super::AsrError;

pub const START_OF_TRANSCRIPT: &str = "<|startoftranscript|>";
pub const TRANSCRIBE: &str = "<|transcribe|>";
pub const TRANSLATE: &str = "<|translate|>";
pub const START_OF_PREVIOUS: &str = "<|startofprev|>";
/// At most this many tokens of an initial prompt are kept (faster-whisper: `max_length // 2 - 1`).
const MAX_PROMPT_TOKENS: usize = 223;

pub struct Vocabulary {
    tokenizer: Tokenizer,
    /// `<|endoftext|>`: ids from here on are special (language, task, timestamps).
    pub end_of_text: usize,
    /// `<|0.00|>`: the first timestamp token; each next one is 0.02 s later.
    pub timestamp_begin: usize,
}

impl Vocabulary {
    pub fn load(model_dir: &Path) -> Result<Self, AsrError> {
        let path = model_dir.join("tokenizer.json");
        let tokenizer = Tokenizer::from_file(&path).map_err(|e| AsrError::Load {
            dir: model_dir.to_owned(),
            message: format!("tokenizer.json: {e}"),
        })?;
        let id = |token: &str| {
            tokenizer
                .token_to_id(token)
                .map(|id| id as usize)
                .ok_or_else(|| AsrError::Load {
                    dir: model_dir.to_owned(),
                    message: format!("tokenizer.json has no {token}"),
                })
        };
        Ok(Self {
            end_of_text: id("<|endoftext|>")?,
            // tokenizer.json lists no timestamp tokens; they follow `<|notimestamps|>`.
            timestamp_begin: id("<|notimestamps|>")? + 1,
            tokenizer,
        })
    }

    /// The decoder's start sequence. English-only models take `<|startoftranscript|>` alone
    /// (as in faster-whisper); multilingual ones name the language and the task. Without
    /// `<|notimestamps|>` the model emits timestamp tokens, which the seek loop cuts at.
    pub fn prompt(&self, language: Option<&str>, translate: bool) -> Vec<String> {
        let mut prompt = vec![START_OF_TRANSCRIPT.to_owned()];
        if let Some(code) = language {
            prompt.push(format!("<|{code}|>"));
            prompt.push(if translate { TRANSLATE } else { TRANSCRIBE }.to_owned());
        }
        prompt
    }

    /// `<|startofprev|>` and the tokens of ` {text}` (its last 223), to put before the start
    /// sequence: faster-whisper's `initial_prompt`.
    pub fn previous_text(&self, text: &str) -> Result<Vec<String>, AsrError> {
        let encoding = self
            .tokenizer
            .encode(format!(" {}", text.trim()), false)
            .map_err(|e| AsrError::Inference(format!("encoding the prompt: {e}")))?;
        let tokens = encoding.get_tokens();
        let kept = &tokens[tokens.len().saturating_sub(MAX_PROMPT_TOKENS)..];
        let mut prompt = vec![START_OF_PREVIOUS.to_owned()];
        prompt.extend(kept.iter().cloned());
        Ok(prompt)
    }

    /// The ids of tokens given as strings (the start sequence, for alignment).
    pub fn ids(&self, tokens: &[String]) -> Result<Vec<usize>, AsrError> {
        tokens
            .iter()
            .map(|t| {
                self.tokenizer
                    .token_to_id(t)
                    .map(|id| id as usize)
                    .ok_or_else(|| AsrError::Inference(format!("no token {t}")))
            })
            .collect()
    }

    /// Whether the vocabulary has the language token `<|code|>`.
    pub fn knows_language(&self, code: &str) -> bool {
        self.tokenizer.token_to_id(&format!("<|{code}|>")).is_some()
    }

    /// Text of the ordinary (non-special) tokens among `ids`.
    pub fn decode(&self, ids: &[usize]) -> Result<String, AsrError> {
        let text: Vec<u32> = ids
            .iter()
            .filter(|&&id| id < self.end_of_text)
            .map(|&id| id as u32)
            .collect();
        self.tokenizer
            .decode(&text, false)
            .map_err(|e| AsrError::Inference(format!("decoding tokens: {e}")))
    }
}
