//! The talker's input rows, built on the host from the exported embedding tables as upstream
//! `Qwen3TTSForConditionalGeneration.generate` builds them in non-streaming mode. Every row is a
//! text-side embedding (`tp(id)`, the text embedding through the two-layer SiLU projection)
//! plus a codec-side one (a row of the talker's codec embedding, or a speaker vector):
//!
//! ```text
//! [tp(instruction tokens)]                                 1.7B CustomVoice with a prompt
//! tp(<|im_start|>) tp(assistant) tp(\n)
//! tp(pad)+codec(think) tp(pad)+codec(think_bos) tp(pad)+codec(lang) tp(pad)+codec(think_eos)
//!     (no language: codec(nothink), codec(think_bos), codec(think_eos))
//! tp(pad)+speaker                                          a speaker id's row, or an x-vector
//! tp(tts_bos)+codec(pad)
//! tp(t)+codec(pad) for t in [reference transcript ‖] text,  tp(tts_eos)+codec(pad)
//! tp(pad)+codec(bos)
//! [Σ_g codec_g(reference frame) + tp(pad) for each reference frame]     in-context clone
//! ```

use std::path::Path;

use super::config::QwenConfig;
use super::files;
use crate::engines::EngineError;
use crate::engines::npy::{self, Matrix};

/// The embedding tables of `embeddings/`.
pub struct Tables {
    text: Matrix,
    fc1_weight: Matrix,
    fc1_bias: Matrix,
    fc2_weight: Matrix,
    fc2_bias: Matrix,
    /// Talker codec embedding (code group 0, control ids, speaker ids).
    codec: Matrix,
    /// Code predictor embeddings of groups 1…15.
    groups: Vec<Matrix>,
    pub hidden: usize,
}

/// What conditions the voice besides the text.
#[derive(Clone, Copy)]
pub enum Speaker<'a> {
    /// A row of the talker codec embedding (CustomVoice's built-in speakers).
    Id(i64),
    /// A speaker-encoder x-vector (Base).
    Vector(&'a [f32]),
}

/// A reference clip as an in-context example: its transcript's tokens and its codes.
#[derive(Clone, Copy)]
pub struct Example<'a> {
    pub text_ids: &'a [u32],
    /// Frames of `groups` codes each, frame-major.
    pub codes: &'a [i64],
}

pub struct Prompt<'a> {
    pub instruction_ids: Option<&'a [u32]>,
    /// `<|im_start|>`, "assistant", "\n".
    pub role_ids: [u32; 3],
    pub language_id: Option<i64>,
    pub speaker: Speaker<'a>,
    pub text_ids: &'a [u32],
    pub example: Option<Example<'a>>,
}

impl Tables {
    pub fn load(dir: &Path, groups: usize) -> Result<Self, EngineError> {
        let read = |name: &str| npy::read(&files::embedding(dir, name));
        let tables = Self {
            text: read("text_embedding")?,
            fc1_weight: read("text_projection_fc1_weight")?,
            fc1_bias: read("text_projection_fc1_bias")?,
            fc2_weight: read("text_projection_fc2_weight")?,
            fc2_bias: read("text_projection_fc2_bias")?,
            codec: read("talker_codec_embedding")?,
            groups: (0..groups.saturating_sub(1))
                .map(|g| read(&format!("cp_codec_embedding_{g}")))
                .collect::<Result<_, _>>()?,
            hidden: 0,
        };
        let hidden = tables.codec.cols;
        let fits = tables.fc1_weight.cols == tables.text.cols
            && tables.fc1_bias.cols == tables.fc1_weight.rows
            && tables.fc2_weight.cols == tables.fc1_weight.rows
            && tables.fc2_weight.rows == hidden
            && tables.fc2_bias.cols == hidden
            && tables.groups.iter().all(|g| g.cols == hidden);
        if !fits {
            return Err(EngineError::NotInstalled(format!(
                "the tables in {}/{} do not fit together (text {}×{}, projection {}×{} and {}×{}, codec width {hidden})",
                dir.display(),
                files::EMBEDDINGS,
                tables.text.rows,
                tables.text.cols,
                tables.fc1_weight.rows,
                tables.fc1_weight.cols,
                tables.fc2_weight.rows,
                tables.fc2_weight.cols,
            )));
        }
        Ok(Self { hidden, ..tables })
    }

    /// `tp(id)`: fc2 · SiLU(fc1 · e + b1) + b2 (torch `[out, in]` weights).
    pub fn project(&self, id: u32) -> Result<Vec<f32>, EngineError> {
        let e = self
            .text
            .row(id as usize)
            .ok_or_else(|| EngineError::InvalidInput(format!("text token {id} is out of range")))?;
        let inner: Vec<f32> = (0..self.fc1_weight.rows)
            .map(|r| {
                let w = self.fc1_weight.row(r).expect("in range");
                let x = dot(w, e) + self.fc1_bias.data[r];
                x / (1.0 + (-x).exp())
            })
            .collect();
        Ok((0..self.hidden)
            .map(|r| dot(self.fc2_weight.row(r).expect("in range"), &inner) + self.fc2_bias.data[r])
            .collect())
    }

    /// A row of the talker's codec embedding.
    pub fn codec(&self, id: i64) -> Result<&[f32], EngineError> {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.codec.row(i))
            .ok_or_else(|| EngineError::Inference(format!("codec id {id} is out of range")))
    }

    /// The embedding of `code` in group `group` (0: the talker's, 1…15: the code predictor's).
    pub fn code(&self, group: usize, code: i64) -> Result<&[f32], EngineError> {
        if group == 0 {
            return self.codec(code);
        }
        usize::try_from(code)
            .ok()
            .and_then(|i| self.groups.get(group - 1)?.row(i))
            .ok_or_else(|| {
                EngineError::Inference(format!("code {code} of group {group} is out of range"))
            })
    }

    /// The sum of a frame's code embeddings plus `tp(pad)`: a generated (or reference)
    /// frame fed back to the talker.
    pub fn frame(&self, codes: &[i64], pad: &[f32]) -> Result<Vec<f32>, EngineError> {
        let mut row = pad.to_vec();
        for (group, &code) in codes.iter().enumerate() {
            add(&mut row, self.code(group, code)?);
        }
        Ok(row)
    }

    /// The prompt rows, `rows × hidden` values.
    pub fn prompt(
        &self,
        config: &QwenConfig,
        prompt: &Prompt<'_>,
    ) -> Result<(usize, Vec<f32>), EngineError> {
        let mut rows: Vec<Vec<f32>> = Vec::new();
        let pad = self.project(config.tts_pad_token_id)?;
        let with = |mut a: Vec<f32>, b: &[f32]| {
            add(&mut a, b);
            a
        };
        for &id in prompt.instruction_ids.unwrap_or_default() {
            rows.push(self.project(id)?);
        }
        for id in prompt.role_ids {
            rows.push(self.project(id)?);
        }
        let codec_prefix = match prompt.language_id {
            Some(language) => vec![
                config.codec_think_id,
                config.codec_think_bos_id,
                language,
                config.codec_think_eos_id,
            ],
            None => vec![
                config.codec_nothink_id,
                config.codec_think_bos_id,
                config.codec_think_eos_id,
            ],
        };
        for id in codec_prefix {
            rows.push(with(pad.clone(), self.codec(id)?));
        }
        let speaker = match prompt.speaker {
            Speaker::Id(id) => self.codec(id)?,
            Speaker::Vector(v) => v,
        };
        if speaker.len() != self.hidden {
            return Err(EngineError::InvalidInput(format!(
                "the voice print's speaker vector has {} values, this model {}: clone the voice again for this model",
                speaker.len(),
                self.hidden
            )));
        }
        rows.push(with(pad.clone(), speaker));
        let codec_pad = self.codec(config.codec_pad_id)?;
        rows.push(with(self.project(config.tts_bos_token_id)?, codec_pad));
        let example_ids = prompt.example.as_ref().map_or(&[][..], |e| e.text_ids);
        for &id in example_ids.iter().chain(prompt.text_ids) {
            rows.push(with(self.project(id)?, codec_pad));
        }
        rows.push(with(self.project(config.tts_eos_token_id)?, codec_pad));
        rows.push(with(pad.clone(), self.codec(config.codec_bos_id)?));
        if let Some(example) = &prompt.example {
            let groups = self.groups.len() + 1;
            for frame in example.codes.chunks(groups) {
                rows.push(self.frame(frame, &pad)?);
            }
        }
        let count = rows.len();
        Ok((count, rows.concat()))
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn add(a: &mut [f32], b: &[f32]) {
    for (x, y) in a.iter_mut().zip(b) {
        *x += y;
    }
}
