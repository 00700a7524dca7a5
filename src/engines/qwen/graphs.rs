//! The four generation graphs and the generation loop: `talker_prefill` once over the prompt,
//! then per 80 ms frame one talker draw for code group 0 and fifteen `code_predictor` draws for
//! groups 1…15, the frame fed back through `talker_decode` with its stacked KV cache; at the
//! stop id, `vocoder` turns the frames into 24 kHz audio.

use std::path::Path;

use ort::environment::Environment;
use ort::memory::Allocator;
use ort::session::{Session, SessionOutputs};
use ort::value::{DynTensor, DynValue, Tensor, TensorElementType, ValueType};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

use super::files;
use super::prompt::Tables;
use super::sampling::{self, Warp};
use crate::engines::lm::{Inputs, run_cached};
use crate::engines::onnx::{self, inference};
use crate::engines::{EngineError, SynthesisInput};

/// The stacked caches of `talker_decode` and `code_predictor` ([layers, 1, heads, T, head_dim]
/// each): past input, present output.
const STACKED_KV: [(&str, &str); 2] = [
    ("past_keys", "present_keys"),
    ("past_values", "present_values"),
];

/// What one generation loop settles on besides the prompt.
pub struct LoopSettings {
    pub talker: Warp,
    pub predictor: Warp,
    pub eos: i64,
    pub groups: usize,
    pub max_frames: usize,
}

/// The draws and codes of one loop (for the differential test and diagnostics).
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// One uniform per talker step, the stop step included.
    pub talker_uniforms: Vec<f64>,
    /// Fifteen per frame, in order.
    pub predictor_uniforms: Vec<f64>,
    /// `groups` codes per frame, frame-major.
    pub codes: Vec<i64>,
    /// Whether the stop id was drawn (else the frame limit ended it).
    pub stopped: bool,
}

pub struct Graphs {
    prefill: Session,
    decode: Session,
    predictor: Session,
    vocoder: Session,
    talker_layers: usize,
    /// `[layers, 1, heads, 0, head_dim]`: the code predictor's empty cache.
    predictor_cache: [usize; 5],
}

impl Graphs {
    pub fn load(env: &Environment, dir: &Path, intra_threads: usize) -> Result<Self, EngineError> {
        let precision = files::precision(dir).ok_or_else(|| {
            EngineError::NotInstalled(format!("no precision directory in {}", dir.display()))
        })?;
        let open = |name: &str| onnx::session(env, &dir.join(precision).join(name), intra_threads);
        let prefill = open(files::TALKER_PREFILL)?;
        let decode = open(files::TALKER_DECODE)?;
        let predictor = open(files::CODE_PREDICTOR)?;
        let vocoder = open(files::VOCODER)?;
        expect_io(
            &prefill,
            files::TALKER_PREFILL,
            &["inputs_embeds", "attention_mask", "position_ids"],
            &[
                "logits",
                "hidden_states",
                "present_key_0",
                "present_value_0",
            ],
        )?;
        let kv = ["past_keys", "past_values"];
        let kv_out = ["present_keys", "present_values"];
        expect_io(
            &decode,
            files::TALKER_DECODE,
            &[
                "inputs_embeds",
                "attention_mask",
                "position_ids",
                kv[0],
                kv[1],
            ],
            &["logits", "hidden_states", kv_out[0], kv_out[1]],
        )?;
        expect_io(
            &predictor,
            files::CODE_PREDICTOR,
            &["inputs_embeds", "generation_steps", kv[0], kv[1]],
            &["logits", kv_out[0], kv_out[1]],
        )?;
        expect_io(&vocoder, files::VOCODER, &["codes"], &["waveform"])?;
        let talker_layers = prefill
            .outputs()
            .iter()
            .filter(|o| o.name().starts_with("present_key_"))
            .count();
        let predictor_cache = cache_shape(&predictor)?;
        Ok(Self {
            prefill,
            decode,
            predictor,
            vocoder,
            talker_layers,
            predictor_cache,
        })
    }

    /// The loop for one piece: prefill over `rows` prompt rows, then frames until the stop id.
    pub fn generate(
        &mut self,
        tables: &Tables,
        prompt: (usize, Vec<f32>),
        pad: &[f32],
        settings: &LoopSettings,
        rng: &mut ChaCha8Rng,
        input: &SynthesisInput<'_>,
    ) -> Result<Generated, EngineError> {
        let hidden_size = tables.hidden;
        let (rows, embeds) = prompt;
        let positions: Vec<i64> = (0..3).flat_map(|_| 0..rows as i64).collect();
        let outputs = self
            .prefill
            .run(ort::inputs! {
                "inputs_embeds" => Tensor::from_array(([1, rows, hidden_size], embeds)).map_err(inference)?,
                "attention_mask" => Tensor::from_array(([1, rows], vec![1i64; rows])).map_err(inference)?,
                "position_ids" => Tensor::from_array(([3, 1, rows], positions)).map_err(inference)?,
            })
            .map_err(inference)?;
        let mut logits = last_row(&outputs, "logits")?;
        let mut hidden = last_row(&outputs, "hidden_states")?;
        let (keys, values) = stack_prefill_cache(&outputs, self.talker_layers)?;
        drop(outputs);
        let mut cache = vec![keys, values];

        let vocab = logits.len();
        let control = vocab.saturating_sub(1024);
        let eos = usize::try_from(settings.eos).unwrap_or(usize::MAX);
        let mut generated = Generated::default();
        let mut group0 = Vec::new();
        for step in 0..settings.max_frames {
            if input.is_cancelled() {
                return Err(EngineError::Cancelled);
            }
            let uniform: f64 = rng.random();
            generated.talker_uniforms.push(uniform);
            // Control ids are never spoken; the stop id not before two frames (upstream).
            let suppressed = |i: usize| (i >= control && i != eos) || (step < 2 && i == eos);
            let code =
                sampling::sample(&logits, &group0, suppressed, settings.talker, uniform) as i64;
            if code == settings.eos {
                generated.stopped = true;
                break;
            }
            group0.push(code);
            let frame = self.predict(tables, &hidden, code, settings, rng, &mut generated)?;
            let next = tables.frame(&frame, pad)?;
            generated.codes.extend(frame);
            let total = rows + step + 1;
            let inputs: Inputs<'_> = vec![
                (
                    "inputs_embeds".into(),
                    Tensor::from_array(([1, 1, hidden_size], next))
                        .map_err(inference)?
                        .into(),
                ),
                (
                    "attention_mask".into(),
                    Tensor::from_array(([1, total], vec![1i64; total]))
                        .map_err(inference)?
                        .into(),
                ),
                (
                    "position_ids".into(),
                    Tensor::from_array(([3, 1, 1], vec![(total - 1) as i64; 3]))
                        .map_err(inference)?
                        .into(),
                ),
            ];
            let outputs = run_cached(
                &mut self.decode,
                files::TALKER_DECODE,
                inputs,
                &mut cache,
                &STACKED_KV,
            )?;
            logits = last_row(&outputs, "logits")?;
            hidden = last_row(&outputs, "hidden_states")?;
        }
        Ok(generated)
    }

    /// Groups 1…15 of one frame from the talker's last hidden state and group 0's code.
    fn predict(
        &mut self,
        tables: &Tables,
        hidden: &[f32],
        code: i64,
        settings: &LoopSettings,
        rng: &mut ChaCha8Rng,
        generated: &mut Generated,
    ) -> Result<Vec<i64>, EngineError> {
        let width = tables.hidden;
        let mut frame = vec![code];
        let mut embeds = [hidden, tables.code(0, code)?].concat();
        let mut cache = vec![self.empty_predictor_cache()?, self.empty_predictor_cache()?];
        for group in 1..settings.groups {
            let rows = embeds.len() / width;
            let inputs: Inputs<'_> = vec![
                (
                    "inputs_embeds".into(),
                    Tensor::from_array(([1, rows, width], embeds))
                        .map_err(inference)?
                        .into(),
                ),
                (
                    "generation_steps".into(),
                    Tensor::from_array(([1], vec![(group - 1) as i64]))
                        .map_err(inference)?
                        .into(),
                ),
            ];
            let outputs = run_cached(
                &mut self.predictor,
                files::CODE_PREDICTOR,
                inputs,
                &mut cache,
                &STACKED_KV,
            )?;
            let logits = last_row(&outputs, "logits")?;
            let uniform: f64 = rng.random();
            generated.predictor_uniforms.push(uniform);
            let code =
                sampling::sample(&logits, &[], |_| false, settings.predictor, uniform) as i64;
            frame.push(code);
            embeds = tables.code(group, code)?.to_vec();
        }
        Ok(frame)
    }

    /// The vocoder on frame-major codes: mono samples.
    pub fn vocode(&mut self, codes: &[i64], groups: usize) -> Result<Vec<f32>, EngineError> {
        let frames = codes.len() / groups;
        let mut by_group = Vec::with_capacity(codes.len());
        for g in 0..groups {
            by_group.extend((0..frames).map(|t| codes[t * groups + g]));
        }
        let outputs = self
            .vocoder
            .run(ort::inputs! {
                "codes" => Tensor::from_array(([1, groups, frames], by_group)).map_err(inference)?,
            })
            .map_err(inference)?;
        let (_, waveform) = outputs
            .get("waveform")
            .ok_or_else(|| inference("vocoder has no output waveform"))?
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        Ok(waveform.to_vec())
    }

    fn empty_predictor_cache(&self) -> Result<DynValue, EngineError> {
        Ok(DynTensor::new(
            &Allocator::default(),
            TensorElementType::Float32,
            self.predictor_cache,
        )
        .map_err(inference)?
        .into_dyn())
    }
}

/// `present_key_{i}`/`present_value_{i}` [1, heads, T, head_dim] stacked into the decode
/// graph's `[layers, 1, heads, T, head_dim]` caches.
fn stack_prefill_cache(
    outputs: &SessionOutputs<'_>,
    layers: usize,
) -> Result<(DynValue, DynValue), EngineError> {
    let mut stacked = Vec::new();
    for kind in ["key", "value"] {
        let mut data = Vec::new();
        let mut shape = Vec::new();
        for layer in 0..layers {
            let name = format!("present_{kind}_{layer}");
            let (s, d) = outputs
                .get(&name)
                .ok_or_else(|| inference(format!("talker prefill has no output {name}")))?
                .try_extract_tensor::<f32>()
                .map_err(inference)?;
            shape = s.iter().map(|&x| x as usize).collect();
            data.extend_from_slice(d);
        }
        shape.insert(0, layers);
        stacked.push(
            Tensor::from_array((shape, data))
                .map_err(inference)?
                .into_dyn(),
        );
    }
    let values = stacked.pop().expect("two");
    Ok((stacked.pop().expect("two"), values))
}

/// The last row of a float output [1, rows, width].
fn last_row(outputs: &SessionOutputs<'_>, name: &str) -> Result<Vec<f32>, EngineError> {
    let (shape, data) = outputs
        .get(name)
        .ok_or_else(|| inference(format!("no output {name}")))?
        .try_extract_tensor::<f32>()
        .map_err(inference)?;
    let width = *shape.last().unwrap_or(&0) as usize;
    if width == 0 || data.len() < width {
        return Err(inference(format!("output {name} is empty")));
    }
    Ok(data[data.len() - width..].to_vec())
}

/// The graph has these inputs and outputs, with float (not float16) key/value caches.
pub fn expect_io(
    session: &Session,
    file: &str,
    inputs: &[&str],
    outputs: &[&str],
) -> Result<(), EngineError> {
    for name in inputs {
        let Some(input) = session.inputs().iter().find(|i| i.name() == *name) else {
            return Err(EngineError::NotInstalled(format!(
                "{file} has no input {name}: not the expected export"
            )));
        };
        if name.starts_with("past_")
            && !matches!(
                input.dtype(),
                ValueType::Tensor {
                    ty: TensorElementType::Float32,
                    ..
                }
            )
        {
            return Err(EngineError::NotInstalled(format!(
                "{file}: {name} is not float32 (exports with float16 caches are not supported; keep the I/O types float32)"
            )));
        }
    }
    for name in outputs {
        if !session.outputs().iter().any(|o| o.name() == *name) {
            return Err(EngineError::NotInstalled(format!(
                "{file} has no output {name}: not the expected export"
            )));
        }
    }
    Ok(())
}

/// The code predictor's cache shape with no past: `[layers, 1, heads, 0, head_dim]`, read from
/// the graph (its layer count, heads and head size are static there).
fn cache_shape(predictor: &Session) -> Result<[usize; 5], EngineError> {
    let input = predictor
        .inputs()
        .iter()
        .find(|i| i.name() == "past_keys")
        .ok_or_else(|| EngineError::NotInstalled("code_predictor has no past_keys".into()))?;
    let dims: Vec<i64> = match input.dtype() {
        ValueType::Tensor { shape, .. } => shape.iter().copied().collect(),
        _ => Vec::new(),
    };
    match dims[..] {
        [layers, _, heads, _, head_dim] if layers > 0 && heads > 0 && head_dim > 0 => {
            Ok([layers as usize, 1, heads as usize, 0, head_dim as usize])
        }
        _ => Err(EngineError::NotInstalled(format!(
            "code_predictor past_keys has shape {dims:?}, expected [layers, batch, heads, past, head_dim] with static layers, heads and head_dim"
        ))),
    }
}
