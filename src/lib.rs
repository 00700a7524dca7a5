//! voiced: a hosted voice API. See README.md for the shape of the whole.

pub mod api;
pub mod app;
pub mod audio;
pub mod cli;
pub mod config;
pub mod console;
pub mod domain;
pub mod engines;
pub mod fetch;
pub mod http;
pub mod limits;
pub mod mcp;
pub mod models;
pub mod oauth;
pub mod service;
pub mod signing;
pub mod store;
pub mod telemetry;
pub mod worker;
