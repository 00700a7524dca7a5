//! The in-process suites: one binary (one link of the crate) for every test that drives the app
//! through `TestApp` on a port-0 listener, its routers without a socket, and the test database
//! helper. Each suite is a module; run one with `cargo test --test api -- SUITE::`.

#[path = "../asr/mod.rs"]
mod asr;
#[path = "../common/mod.rs"]
mod common;

mod api_core;
mod cartesia;
mod concurrency;
mod console;
mod console_live;
mod db;
mod door_parity;
mod elevenlabs;
mod embedded;
mod idempotency;
mod lifecycle;
mod listen;
mod mcp;
mod oauth;
mod openai_speech;
mod openai_transcriptions;
mod playground;
mod pronunciations;
mod realtime;
mod roundtrip;
mod security;
mod speech;
mod speech_admission;
mod tenants;
mod transcriptions;
mod voices;
mod webhooks;
mod word_timestamps;
mod your_data;
