//! The one engine both Chatterbox variants are: the four graphs and the tokenizer loaded the
//! same way, the voice (a stored print, or a preset's through the speech encoder), the text
//! split into pieces and each piece spoken from one seeded RNG. A [`Variant`] says what
//! differs: its prompt, its sampling, and its language-model loop.

use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use ort::session::Session;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use tokenizers::Tokenizer;

use super::{Array, PieceTrace, Presets, SAMPLE_RATE, Trace, VoicePrint, files};
use crate::domain::EngineInfo;
use crate::engines::lm::LanguageModel;
use crate::engines::onnx;
use crate::engines::pieces;
use crate::engines::text::split;
use crate::engines::{Engine, EngineError, Pcm, SynthesisInput};

/// What one Chatterbox variant adds to the shared engine.
pub trait Variant {
    /// The engine id, and the directory under the models dir.
    const DIR: &'static str;
    /// Its capabilities ([`crate::domain::EngineId::info`]).
    const INFO: &'static EngineInfo;
    /// Text tokens per piece; longer text is split at sentences, clauses, words.
    const MAX_TEXT_TOKENS: usize;
    /// What the variant keeps besides the graphs (loaded and checked with them).
    type State: Send;
    /// How the variant samples speech tokens.
    type Sampling: Copy;

    fn load(dir: &Path, embed: &Session, tokenizer: &Tokenizer)
    -> Result<Self::State, EngineError>;
    /// Checks that the variant can read `text` in `input`'s voice; its sampling settings and the
    /// language the prompt is prepared for.
    fn settings(
        dir: &Path,
        input: &SynthesisInput<'_>,
        text: &str,
    ) -> Result<(Self::Sampling, &'static str), EngineError>;
    /// The language model's prompt ids for one piece of text.
    fn prompt(
        state: &Self::State,
        tokenizer: &Tokenizer,
        text: &str,
        language: &str,
    ) -> Result<Vec<i64>, EngineError>;
    /// One piece: the language model's loop, then the decoder.
    fn speak(
        graphs: &mut Graphs,
        print: &VoicePrint,
        ids: &[i64],
        sampling: Self::Sampling,
        rng: &mut ChaCha8Rng,
        input: &SynthesisInput<'_>,
    ) -> Result<PieceTrace, EngineError>;
}

/// Where a variant's files are and how its graphs run.
#[derive(Debug, Clone)]
pub struct Config<V> {
    /// `<models_dir>/<V::DIR>`.
    pub dir: PathBuf,
    pub ort_library: PathBuf,
    pub intra_threads: usize,
    pub variant: PhantomData<V>,
}

impl<V: Variant> Config<V> {
    pub fn from_models_dir(models_dir: &Path) -> Self {
        Self {
            dir: models_dir.join(V::DIR),
            ort_library: onnx::library_path(models_dir),
            intra_threads: 1,
            variant: PhantomData,
        }
    }
}

/// The graphs and tokenizer every variant loads, and the preset voices encoded so far.
pub struct Graphs {
    dir: PathBuf,
    encoder: Session,
    pub(crate) embed: Session,
    pub(crate) lm: LanguageModel,
    pub(crate) decoder: Session,
    tokenizer: Tokenizer,
    pub(crate) noise_channels: usize,
    voices: Presets,
}

/// A Chatterbox engine of variant `V`.
pub struct Chatterbox<V: Variant> {
    graphs: Graphs,
    state: V::State,
}

impl<V: Variant> Chatterbox<V> {
    pub fn load(config: &Config<V>) -> Result<Self, EngineError> {
        let problems = files::problems(&config.dir, V::DIR);
        if !problems.is_empty() {
            return Err(EngineError::NotInstalled(format!(
                "{} in {}: {}",
                V::DIR,
                config.dir.display(),
                problems.join("; ")
            )));
        }
        let env = onnx::environment(&config.ort_library)?;
        let graph = |name| files::graph(&config.dir, name).expect("checked above");
        let open = |path: &Path| onnx::session(&env, path, config.intra_threads);
        let decoder_path = files::verify_seeded(&graph(files::CONDITIONAL_DECODER), V::DIR)
            .map_err(EngineError::NotInstalled)?;
        let encoder = open(&graph(files::SPEECH_ENCODER))?;
        let embed = open(&graph(files::EMBED_TOKENS))?;
        let lm = LanguageModel::new(open(&graph(files::LANGUAGE_MODEL))?)?;
        let decoder = open(&decoder_path)?;
        let tokenizer = Tokenizer::from_file(config.dir.join(files::TOKENIZER))
            .map_err(|e| EngineError::NotInstalled(format!("{}: {e}", files::TOKENIZER)))?;
        let state = V::load(&config.dir, &embed, &tokenizer)?;
        let noise_channels = super::noise_channels(&decoder, V::DIR)?;
        Ok(Self {
            graphs: Graphs {
                dir: config.dir.clone(),
                encoder,
                embed,
                lm,
                decoder,
                tokenizer,
                noise_channels,
                voices: Presets::default(),
            },
            state,
        })
    }

    /// Runs the speech encoder on a 24 kHz mono clip: the voice print of a cloned profile.
    pub fn print_of(&mut self, reference: &[f32]) -> Result<VoicePrint, EngineError> {
        super::encode(&mut self.graphs.encoder, reference)
    }

    /// [`Engine::synthesize`], also returning what each piece went through.
    pub fn synthesize_traced(
        &mut self,
        input: &SynthesisInput<'_>,
    ) -> Result<(Pcm, Trace), EngineError> {
        if let Some(stored) = input.voice_print {
            let print = VoicePrint::stored(stored)?;
            return self.synthesize_with_print(input, &print);
        }
        let graphs = &mut self.graphs;
        let voice = graphs
            .voices
            .get(&graphs.dir, input.preset, &mut graphs.encoder)?;
        let (print, reference) = (voice.print.clone(), voice.reference.clone());
        let (pcm, mut trace) = self.synthesize_with_print(input, &print)?;
        trace.reference = reference;
        Ok((pcm, trace))
    }

    /// Synthesis in the voice of `print` (a cloned profile's, stored): the speech encoder does
    /// not run. `input.preset` and `input.voice_print` are not looked at.
    pub fn synthesize_with_print(
        &mut self,
        input: &SynthesisInput<'_>,
        print: &VoicePrint,
    ) -> Result<(Pcm, Trace), EngineError> {
        let text = input.text.trim();
        if text.is_empty() {
            return Err(EngineError::InvalidInput("the text is empty".into()));
        }
        let (sampling, language) = V::settings(&self.graphs.dir, input, text)?;
        let pieces = pieces::some(self.pieces(text, language)?)?;
        let mut rng = ChaCha8Rng::seed_from_u64(input.seed);
        let graphs = &mut self.graphs;
        let (pcm, pieces) = pieces::render(&pieces, input, SAMPLE_RATE, |_, piece| {
            V::speak(graphs, print, &piece.tokens, sampling, &mut rng, input)
        })?;
        Ok((
            pcm,
            Trace {
                pieces,
                ..Trace::default()
            },
        ))
    }

    fn pieces(&self, text: &str, language: &str) -> Result<Vec<split::Piece>, EngineError> {
        let (state, tokenizer) = (&self.state, &self.graphs.tokenizer);
        let mut tokenize = |texts: &[&str]| -> Result<Vec<Vec<i64>>, EngineError> {
            texts
                .iter()
                .map(|t| V::prompt(state, tokenizer, t, language))
                .collect()
        };
        split::split(text, V::MAX_TEXT_TOKENS, &mut tokenize)
    }
}

impl<V: Variant> Engine for Chatterbox<V> {
    fn synthesize(&mut self, input: &SynthesisInput<'_>) -> Result<Pcm, EngineError> {
        self.synthesize_traced(input).map(|(pcm, _)| pcm)
    }

    fn reference_rate(&self) -> Option<u32> {
        V::INFO.can_clone.then_some(SAMPLE_RATE)
    }

    /// The speech encoder's four outputs, as [`VoicePrint::to_bytes`]; the transcript and the
    /// language play no part (the multilingual print speaks every language).
    fn voice_print(
        &mut self,
        reference: &[f32],
        _transcript: Option<&str>,
        _language: &str,
    ) -> Result<Vec<u8>, EngineError> {
        Ok(self.print_of(reference)?.to_bytes())
    }
}

/// The token embeddings `embed_tokens` returned.
pub(crate) fn embeddings(outputs: &ort::session::SessionOutputs<'_>) -> Result<Array, EngineError> {
    let (shape, data) = outputs
        .get("inputs_embeds")
        .ok_or_else(|| onnx::inference("embed_tokens has no output inputs_embeds"))?
        .try_extract_tensor::<f32>()
        .map_err(onnx::inference)?;
    Ok(Array {
        shape: shape.iter().map(|d| *d as usize).collect(),
        data: data.to_vec(),
    })
}
