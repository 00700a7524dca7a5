//! The engines on real and tiny generated models: each pipeline against its Python reference
//! loop, Kokoro, the admission estimate, the recogniser, and the engines end to end through the
//! API. Run one with `cargo test --test engines -- SUITE::`.

#[path = "../asr/mod.rs"]
mod asr;
#[path = "../common/mod.rs"]
mod common;
#[path = "../corpus/mod.rs"]
mod corpus;
#[path = "../tiny/mod.rs"]
mod tiny;

mod engines;
mod engines_qwen;
mod estimate;
mod kokoro;
mod recognizer;
mod vad;
