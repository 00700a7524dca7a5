//! The suites that drive `voiced` as child processes (`voiced serve`, `voiced worker`,
//! `voiced admin`, `voiced models`): crashes, restarts, scale-out, hostile uploads measured by a
//! process's memory, the command line. Run one with `cargo test --test process -- SUITE::`.

#[path = "../asr/mod.rs"]
mod asr;
#[path = "../common/mod.rs"]
mod common;

mod cli;
mod faults;
mod hostile_audio;
mod relay;
mod scale;
mod whisper_fetch;
mod worker_crash;
