//! The key/value-cache step of the autoregressive graphs: each step feeds the cache's past
//! values with the step's own inputs and keeps the graph's present values as the next past.
//! [`run_cached`] is the step for any graph (qwen's talker and code predictor use it with their
//! stacked caches); [`LanguageModel`] is the Hugging Face decoder export both chatterbox
//! engines run (`inputs_embeds`, `attention_mask`, optional `position_ids`,
//! `past_key_values.N.{key,value}` → `logits`, `present.N.{key,value}`), batched for
//! chatterbox's classifier-free guidance.

use std::borrow::Cow;

use ort::memory::Allocator;
use ort::session::{Session, SessionInputValue, SessionOutputs};
use ort::value::{DynTensor, DynValue, Tensor, TensorElementType, ValueType};

use crate::engines::EngineError;
use crate::engines::onnx::inference;

/// Inputs of one run, by name.
pub type Inputs<'v> = Vec<(Cow<'v, str>, SessionInputValue<'v>)>;

/// Runs `graph` on `inputs` plus the `past` values, each under its name in `names` (past input,
/// present output); `past` becomes the run's present values, in the same order.
pub fn run_cached<'s>(
    session: &'s mut Session,
    graph: &str,
    mut inputs: Inputs<'_>,
    past: &mut Vec<DynValue>,
    names: &[(&str, &str)],
) -> Result<SessionOutputs<'s>, EngineError> {
    for (&(name, _), value) in names.iter().zip(past.drain(..)) {
        inputs.push((Cow::Owned(name.to_owned()), value.into()));
    }
    let mut outputs = session.run(inputs).map_err(inference)?;
    for &(_, present) in names {
        past.push(
            outputs
                .remove(present)
                .ok_or_else(|| inference(format!("{graph} has no output {present}")))?,
        );
    }
    Ok(outputs)
}

struct KvInput {
    past: String,
    present: String,
    ty: TensorElementType,
    heads: i64,
    head_dim: i64,
}

/// A decoder-only language model with a KV cache (the chatterbox exports).
pub struct LanguageModel {
    session: Session,
    kv: Vec<KvInput>,
    takes_positions: bool,
}

/// One generation's cache: the past values and how many rows they hold.
pub struct KvCache {
    past: Vec<DynValue>,
    batch: usize,
    rows: usize,
}

impl LanguageModel {
    /// The cache inputs `past_key_values.N.{key,value}`, each paired by name with its output
    /// `present.N.{key,value}`; head count and head size come from the graph's declared shape
    /// [batch, heads, past, head_dim], and the element type from the graph (f16 for the fp16
    /// and q4f16 variants).
    pub fn new(session: Session) -> Result<Self, EngineError> {
        let outputs: Vec<&str> = session.outputs().iter().map(|o| o.name()).collect();
        let mut kv = Vec::new();
        for input in session.inputs() {
            let Some(rest) = input.name().strip_prefix("past_key_values") else {
                continue;
            };
            let present = format!("present{rest}");
            if !outputs.contains(&present.as_str()) {
                return Err(EngineError::NotInstalled(format!(
                    "language model: {} has no matching output {present}",
                    input.name()
                )));
            }
            let (ty, shape) = match input.dtype() {
                ValueType::Tensor { ty, shape, .. } => (*ty, shape.clone()),
                _ => return Err(inference(format!("{} is not a tensor", input.name()))),
            };
            if shape.len() != 4 || shape[1] <= 0 || shape[3] <= 0 {
                return Err(EngineError::NotInstalled(format!(
                    "language model: {} has shape {:?}, expected [batch, heads, past, head_dim]",
                    input.name(),
                    &shape[..]
                )));
            }
            kv.push(KvInput {
                past: input.name().to_owned(),
                present,
                ty,
                heads: shape[1],
                head_dim: shape[3],
            });
        }
        if kv.is_empty() {
            return Err(EngineError::NotInstalled(
                "language model has no past_key_values inputs".into(),
            ));
        }
        let takes_positions = session.inputs().iter().any(|i| i.name() == "position_ids");
        Ok(Self {
            session,
            kv,
            takes_positions,
        })
    }

    /// An empty cache for `batch` rows of generation: entries [batch, heads, 0, head_dim] of
    /// the graph's element type.
    pub fn start(&self, batch: usize) -> Result<KvCache, EngineError> {
        let past = self
            .kv
            .iter()
            .map(|kv| {
                let shape = [batch, kv.heads as usize, 0, kv.head_dim as usize];
                let tensor =
                    DynTensor::new(&Allocator::default(), kv.ty, shape).map_err(inference)?;
                Ok(tensor.into_dyn())
            })
            .collect::<Result<_, EngineError>>()?;
        Ok(KvCache {
            past,
            batch,
            rows: 0,
        })
    }

    /// One step over `embeds` [batch, rows, width] after what `cache` holds (all rows attended,
    /// positions counted on from the cache's length): the last row of logits of each batch
    /// entry, in order, `vocab` each.
    pub fn step(
        &mut self,
        cache: &mut KvCache,
        embeds: Vec<f32>,
        rows: usize,
        width: usize,
    ) -> Result<Vec<Vec<f32>>, EngineError> {
        let batch = cache.batch;
        let total = cache.rows + rows;
        let mut inputs: Inputs<'_> = vec![
            (
                "inputs_embeds".into(),
                Tensor::from_array(([batch, rows, width], embeds))
                    .map_err(inference)?
                    .into(),
            ),
            (
                "attention_mask".into(),
                Tensor::from_array(([batch, total], vec![1i64; batch * total]))
                    .map_err(inference)?
                    .into(),
            ),
        ];
        if self.takes_positions {
            let first = cache.rows as i64;
            let positions: Vec<i64> = (0..batch)
                .flat_map(|_| (0..rows as i64).map(|p| first + p))
                .collect();
            inputs.push((
                "position_ids".into(),
                Tensor::from_array(([batch, rows], positions))
                    .map_err(inference)?
                    .into(),
            ));
        }
        let names: Vec<(&str, &str)> = self
            .kv
            .iter()
            .map(|kv| (kv.past.as_str(), kv.present.as_str()))
            .collect();
        let outputs = run_cached(
            &mut self.session,
            "language model",
            inputs,
            &mut cache.past,
            &names,
        )?;
        cache.rows = total;
        let (shape, logits) = outputs
            .get("logits")
            .ok_or_else(|| inference("language model has no output logits"))?
            .try_extract_tensor::<f32>()
            .map_err(inference)?;
        let vocab = *shape.last().unwrap_or(&0) as usize;
        if shape.first() != Some(&(batch as i64)) || vocab == 0 || logits.len() < batch * vocab {
            return Err(inference(format!(
                "language model returned logits of shape {shape:?} for a batch of {batch}"
            )));
        }
        // Each batch entry's rows are contiguous; its last row ends its share of the data.
        let share = logits.len() / batch;
        Ok((1..=batch)
            .map(|b| logits[b * share - vocab..b * share].to_vec())
            .collect())
    }
}
