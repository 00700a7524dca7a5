//! `voiced admin …` (DECISIONS, "Accounts, plans, keys"). Human text by default, JSON with
//! `--json`. Wherever a command takes ACCOUNT, the account's id or its email works. The
//! read-only commands (`account list|show`, `key list`) are in [`inspect`].

mod inspect;
mod pronunciation;
mod webhooks;

use clap::{Args, Subcommand};
use serde_json::json;

use crate::app::Database;
use crate::config::Config;
use crate::domain::{CeilingMinutes, Email, EngineId, Feature, Plan, Scope, Seed, Temperature};
use crate::service::Core;

#[derive(Args)]
#[command(after_help = "Examples:
  voiced admin account create --email ada@example.com --plan pro
  voiced admin account list
  voiced admin --json account show ada@example.com
  voiced admin key create --account ada@example.com --scopes voice:read,voice:generate
  voiced admin voice presets
  voiced admin voice clone --account ada@example.com --name Ada --engine chatterbox --audio ada.wav")]
pub struct AdminArgs {
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: AdminCommand,
}

#[derive(Subcommand)]
enum AdminCommand {
    /// Accounts and their plans.
    #[command(
        subcommand,
        after_help = "Examples:\n  voiced admin account list --email-like example.com\n  \
                      voiced admin account show ada@example.com"
    )]
    Account(AccountCommand),
    /// API keys.
    #[command(
        subcommand,
        after_help = "Examples:\n  voiced admin key list --account ada@example.com\n  \
                      voiced admin key revoke key_0193…"
    )]
    Key(KeyCommand),
    /// Voice profiles.
    #[command(
        subcommand,
        after_help = "Examples:\n  voiced admin voice presets\n  \
                      voiced admin voice create --account ada@example.com --name Narrator \
                      --engine kokoro --preset jf_alpha\n  \
                      voiced admin voice clone --account ada@example.com --name Ada \
                      --engine chatterbox --audio ada.wav"
    )]
    Voice(VoiceCommand),
    /// Pronunciation rules: how the account's generations read a word.
    #[command(
        subcommand,
        after_help = "Examples:\n  voiced admin pronunciation list --account ada@example.com\n  \
                      voiced admin pronunciation create --account ada@example.com --text SQL \
                      --alias sequel"
    )]
    Pronunciation(pronunciation::PronunciationCommand),
    /// Webhook endpoints (docs/webhooks.md).
    #[command(
        subcommand,
        after_help = "Examples:\n  voiced admin webhook create --account ada@example.com \
                      --url https://hooks.example.com/voiced \
                      --events generation.completed,generation.failed\n  \
                      voiced admin webhook list --account ada@example.com"
    )]
    Webhook(webhooks::WebhookCommand),
}

#[derive(Subcommand)]
enum AccountCommand {
    /// Create an account; prints its id.
    #[command(
        after_help = "Example:\n  voiced admin --json account create --email ada@example.com --plan pro\n  \
                            {\"id\":\"acct_0193…\"}"
    )]
    Create {
        #[arg(long)]
        email: String,
        #[arg(long, default_value = "pro", value_parser = parse_plan)]
        plan: Plan,
        /// Read a password (first line of standard input) so the account can sign in to the
        /// console.
        #[arg(long)]
        password_stdin: bool,
    },
    /// Set an account's console password from the first line of standard input.
    #[command(
        after_help = "Example:\n  printf '%s\\n' 'a long passphrase' | voiced admin account set-password ada@example.com --password-stdin"
    )]
    SetPassword {
        /// The account's id or email.
        account: String,
        /// Required: the password is never taken as an argument (it would show in `ps`).
        #[arg(long, required = true)]
        password_stdin: bool,
    },
    /// List accounts (id, plan, email), oldest first.
    #[command(after_help = "Examples:\n  voiced admin account list\n  \
                            voiced admin --json account list --email-like %@example.com")]
    List {
        /// Only emails matching this pattern, case-insensitively: a plain text matches anywhere
        /// in the email; `%` (any run) and `_` (one character) make it an SQL LIKE pattern.
        #[arg(long, value_name = "PATTERN")]
        email_like: Option<String>,
    },
    /// Show an account: plan, features, this month's usage, keys and voice count.
    #[command(
        after_help = "Examples:\n  voiced admin account show ada@example.com\n  \
                            voiced admin --json account show acct_0193…"
    )]
    Show {
        /// The account's id or email.
        account: String,
    },
    /// Change an account's plan (resets its feature set to the plan's).
    #[command(
        after_help = "Example:\n  voiced admin account set-plan ada@example.com --plan trial"
    )]
    SetPlan {
        /// The account's id or email.
        account: String,
        #[arg(long, value_parser = parse_plan)]
        plan: Plan,
    },
    /// Set the capabilities an account's plan includes (comma-separated: speech,transcription).
    #[command(
        after_help = "Example:\n  voiced admin account set-features ada@example.com --features speech"
    )]
    SetFeatures {
        /// The account's id or email.
        account: String,
        #[arg(long, value_parser = parse_features)]
        features: FeatureList,
    },
}

#[derive(Subcommand)]
enum KeyCommand {
    /// Create a key; prints the secret this once.
    #[command(
        after_help = "Example:\n  voiced admin key create --account ada@example.com \
                            --scopes voice:read,voice:generate --ceiling-minutes 30"
    )]
    Create {
        /// The account's id or email.
        #[arg(long)]
        account: String,
        /// Comma-separated: voice:read,voice:generate
        #[arg(long, value_parser = parse_scopes)]
        scopes: ScopeList,
        #[arg(long, default_value = "")]
        name: String,
        /// Monthly ceiling of generated audio, in whole minutes.
        #[arg(long)]
        ceiling_minutes: Option<u32>,
    },
    /// List an account's keys: prefix, scopes, ceiling, this month's usage, revoked or not.
    #[command(after_help = "Example:\n  voiced admin key list --account ada@example.com")]
    List {
        /// The account's id or email.
        #[arg(long)]
        account: String,
    },
    /// Revoke a key; it is refused from its next request on.
    #[command(after_help = "Example:\n  voiced admin key revoke key_0193…")]
    Revoke { key_id: String },
    /// Set a key's monthly ceiling in minutes, or remove it with `none`.
    #[command(
        after_help = "Examples:\n  voiced admin key set-ceiling key_0193… --minutes 60\n  \
                            voiced admin key set-ceiling key_0193… --minutes none"
    )]
    SetCeiling {
        key_id: String,
        #[arg(long, value_parser = parse_ceiling)]
        minutes: Ceiling,
    },
}

#[derive(Subcommand)]
enum VoiceCommand {
    /// Create a preset voice profile; prints its id.
    #[command(
        after_help = "Example:\n  voiced admin voice create --account ada@example.com --name Narrator \
                            --engine kokoro --preset jf_alpha --language en"
    )]
    Create {
        /// The account's id or email.
        #[arg(long)]
        account: String,
        #[arg(long)]
        name: String,
        #[arg(long, value_parser = parse_engine)]
        engine: EngineId,
        #[arg(long)]
        preset: String,
        /// ISO 639-1 code.
        #[arg(long, default_value = "en")]
        language: String,
        #[arg(long, default_value = "")]
        description: String,
        /// Pinned seed used when a request gives none.
        #[arg(long, value_parser = parse_seed)]
        seed: Option<Seed>,
        /// Pinned temperature (chatterbox engines only).
        #[arg(long, value_parser = parse_temperature)]
        temperature: Option<Temperature>,
        /// Personality prompt that directs the voice.
        #[arg(long)]
        personality: Option<String>,
    },
    /// Clone a voice from a reference recording (5 to 30 s of the speaker, any format voiced
    /// decodes); computes its voice print here, where the engine is installed. Only with the
    /// speaker's consent.
    #[command(
        after_help = "Example:\n  voiced admin voice clone --account ada@example.com --name Ada \
                            --engine chatterbox_turbo --audio ada.wav --transcript 'Hello, I am Ada.'"
    )]
    Clone {
        /// The account's id or email.
        #[arg(long)]
        account: String,
        #[arg(long)]
        name: String,
        /// An engine that clones: chatterbox, chatterbox_turbo, qwen, luxtts.
        #[arg(long, value_parser = parse_engine)]
        engine: EngineId,
        /// The reference recording (wav, mp3, flac, ogg or webm).
        #[arg(long, value_name = "FILE")]
        audio: std::path::PathBuf,
        /// What is said in the recording (engines that use one).
        #[arg(long)]
        transcript: Option<String>,
        /// ISO 639-1 code.
        #[arg(long, default_value = "en")]
        language: String,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List the presets each installed engine offers.
    #[command(
        after_help = "Examples:\n  voiced admin voice presets\n  voiced admin --json voice presets"
    )]
    Presets,
}

#[derive(Clone)]
struct ScopeList(Vec<Scope>);
#[derive(Clone)]
struct FeatureList(Vec<Feature>);
#[derive(Clone, Copy)]
struct Ceiling(Option<CeilingMinutes>);

fn parse_plan(s: &str) -> Result<Plan, String> {
    s.parse()
}
fn parse_engine(s: &str) -> Result<EngineId, String> {
    s.parse()
}
fn parse_scopes(s: &str) -> Result<ScopeList, String> {
    Scope::parse_list(s).map(ScopeList)
}
fn parse_features(s: &str) -> Result<FeatureList, String> {
    s.split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::parse)
        .collect::<Result<Vec<_>, _>>()
        .map(FeatureList)
}
fn parse_ceiling(s: &str) -> Result<Ceiling, String> {
    if s == "none" {
        return Ok(Ceiling(None));
    }
    s.parse::<CeilingMinutes>()
        .map(|m| Ceiling(Some(m)))
        .map_err(|_| "expected whole minutes (0 or more) or none".to_string())
}
fn parse_seed(s: &str) -> Result<Seed, String> {
    s.parse::<u64>()
        .map_err(|_| "expected a non-negative integer".to_string())
        .and_then(Seed::new)
}
fn parse_temperature(s: &str) -> Result<Temperature, String> {
    s.parse::<f64>()
        .map_err(|_| "expected a number from 0.05 to 2".to_string())
        .and_then(Temperature::new)
}

/// Prints `human` or, with `--json`, the JSON value.
fn emit(json_output: bool, value: serde_json::Value, human: String) {
    if json_output {
        println!("{value}");
    } else {
        println!("{human}");
    }
}

pub async fn run(config: &Config, args: AdminArgs) -> anyhow::Result<()> {
    if let AdminCommand::Voice(VoiceCommand::Presets) = &args.command {
        return presets(config, args.json);
    }
    let database = Database::open(config, 2).await?;
    // The operator's commands are the core's operations, with the console's validation.
    let core = crate::app::operator_core(config, database.pool.clone()).await?;
    let limits = Limits {
        clones: crate::service::cloning::CloneLimits {
            max_voices: config.max_cloned_voices_per_account,
            max_per_month: config.max_clones_per_account_per_month,
        },
        max_keys: config.max_keys_per_account,
    };
    let result = match args.command {
        AdminCommand::Webhook(command) => webhooks::run(&core, args.json, command).await,
        command => {
            let args = AdminArgs {
                json: args.json,
                command,
            };
            execute(&core, limits, args).await
        }
    };
    database.close(false).await?;
    result
}

/// The id of the account named by its id or email, or the operator's error.
async fn resolve_account(core: &Core, account: &str) -> anyhow::Result<String> {
    crate::service::operator::find_account(core, account)
        .await
        .map_err(|e| anyhow::anyhow!("{}", e.detail))?
        .ok_or_else(|| anyhow::anyhow!("no account {account} (see `voiced admin account list`)"))
}

/// The settings that bound what an operator's command may do for an account.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// `max_cloned_voices_per_account` and `max_clones_per_account_per_month`.
    clones: crate::service::cloning::CloneLimits,
    /// `max_keys_per_account`.
    max_keys: u32,
}

async fn execute(core: &Core, limits: Limits, args: AdminArgs) -> anyhow::Result<()> {
    let as_json = args.json;
    match args.command {
        AdminCommand::Webhook(_) => unreachable!("`run` handles webhook commands"),
        AdminCommand::Account(AccountCommand::List { email_like }) => {
            inspect::account_list(core, as_json, email_like.as_deref()).await?;
        }
        AdminCommand::Account(AccountCommand::Show { account }) => {
            let id = resolve_account(core, &account).await?;
            inspect::account_show(core, as_json, &id).await?;
        }
        AdminCommand::Key(KeyCommand::List { account }) => {
            let id = resolve_account(core, &account).await?;
            inspect::key_list(core, as_json, &id).await?;
        }
        AdminCommand::Account(AccountCommand::Create {
            email,
            plan,
            password_stdin,
        }) => {
            // The console's rule, so the CLI never makes an account the console would refuse.
            let email = Email::parse(&email).map_err(|m| anyhow::anyhow!("--email: {m}"))?;
            let password = password_stdin.then(read_password_stdin).transpose()?;
            let gate = crate::service::accounts::PasswordGate::new(1, 0);
            let id = crate::service::accounts::create(core, &gate, email.as_str(), password, plan)
                .await
                .map_err(|e| match e.param.as_deref() {
                    Some("email") => anyhow::anyhow!("an account with that email already exists"),
                    _ => anyhow::anyhow!("{}", e.detail),
                })?;
            emit(
                as_json,
                json!({ "id": id }),
                format!("account {id} ({plan})"),
            );
        }
        AdminCommand::Account(AccountCommand::SetPassword { account, .. }) => {
            let account = resolve_account(core, &account).await?;
            let password = read_password_stdin()?;
            anyhow::ensure!(
                crate::service::accounts::set_password(core, &account, password)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}", e.detail))?,
                "no account {account}"
            );
            emit(
                as_json,
                json!({ "id": account, "password_set": true }),
                format!("account {account}: password set"),
            );
        }
        AdminCommand::Account(AccountCommand::SetPlan { account, plan }) => {
            let account = resolve_account(core, &account).await?;
            anyhow::ensure!(
                crate::service::operator::set_plan(core, &account, plan)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}", e.detail))?,
                "no account {account}"
            );
            emit(
                as_json,
                json!({ "id": account, "plan": plan.as_str() }),
                format!("account {account} is now on plan {plan}"),
            );
        }
        AdminCommand::Account(AccountCommand::SetFeatures { account, features }) => {
            let account = resolve_account(core, &account).await?;
            anyhow::ensure!(
                crate::service::operator::set_features(core, &account, &features.0)
                    .await
                    .map_err(|e| anyhow::anyhow!("{}", e.detail))?,
                "no account {account}"
            );
            let names: Vec<&str> = features.0.iter().map(|f| f.as_str()).collect();
            emit(
                as_json,
                json!({ "id": account, "features": names }),
                format!("account {account} features: {}", names.join(",")),
            );
        }
        AdminCommand::Key(KeyCommand::Create {
            account,
            scopes,
            name,
            ceiling_minutes,
        }) => {
            let account = resolve_account(core, &account).await?;
            let ceiling = ceiling_minutes
                .map(CeilingMinutes::new)
                .transpose()
                .map_err(|_| anyhow::anyhow!("The ceiling is too large."))?;
            let key = crate::service::keys::create(
                core,
                limits.max_keys,
                &account,
                &name,
                &scopes.0,
                ceiling,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.detail))?;
            emit(
                as_json,
                json!({ "id": key.id, "key": key.secret.expose(), "prefix": key.prefix }),
                format!(
                    "key {} ({}) for account {account}\nsecret (shown only now): {}",
                    key.id,
                    key.scopes.join(","),
                    key.secret.expose()
                ),
            );
        }
        AdminCommand::Key(KeyCommand::Revoke { key_id }) => {
            crate::service::keys::revoke_any(core, &key_id)
                .await
                .map_err(|e| not_found_as(e, &format!("no key {key_id}")))?;
            emit(
                as_json,
                json!({ "id": key_id, "revoked": true }),
                format!("key {key_id} revoked"),
            );
        }
        AdminCommand::Key(KeyCommand::SetCeiling { key_id, minutes }) => {
            crate::service::keys::set_ceiling_any(core, &key_id, minutes.0)
                .await
                .map_err(|e| not_found_as(e, &format!("no key {key_id}")))?;
            let minutes = minutes.0.map(CeilingMinutes::get);
            let human = match minutes {
                Some(m) => format!("key {key_id} ceiling: {m} minutes per month"),
                None => format!("key {key_id} has no ceiling"),
            };
            emit(
                as_json,
                json!({ "id": key_id, "ceiling_minutes": minutes }),
                human,
            );
        }
        AdminCommand::Voice(VoiceCommand::Create {
            account,
            name,
            engine,
            preset,
            language,
            description,
            seed,
            temperature,
            personality,
        }) => {
            let account = resolve_account(core, &account).await?;
            let id = crate::service::voices::create_preset(
                core,
                &account,
                crate::service::voices::NewPresetVoice {
                    name: &name,
                    description: &description,
                    language: &language,
                    engine,
                    preset: &preset,
                    seed,
                    temperature,
                    personality: personality.as_deref(),
                },
                None,
            )
            .await
            .map_err(|e| anyhow::anyhow!("{}", e.detail))?
            .id;
            let name = name.trim();
            emit(
                as_json,
                json!({ "id": id }),
                format!("voice {id} ({name}: {engine}/{preset})"),
            );
        }
        AdminCommand::Voice(VoiceCommand::Clone {
            account,
            name,
            engine,
            audio,
            transcript,
            language,
            description,
        }) => {
            let account = resolve_account(core, &account).await?;
            let bytes = std::fs::read(&audio)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", audio.display()))?;
            let voice = crate::service::cloning::clone_now(
                core,
                &account,
                limits.clones,
                crate::service::cloning::NewClone {
                    name: &name,
                    description: &description,
                    language: &language,
                    engine,
                    audio: &bytes,
                    transcript: transcript.as_deref(),
                },
            )
            .await
            .map_err(|e| match e.param {
                Some(param) => anyhow::anyhow!("--{param}: {}", e.detail),
                None => anyhow::anyhow!("{}", e.detail),
            })?;
            emit(
                as_json,
                json!({
                    "id": voice.id,
                    "name": voice.name,
                    "engine": voice.engine.as_str(),
                    "voice_type": voice.voice_type.as_str(),
                    "sample_count": voice.sample_count,
                }),
                format!(
                    "voice {} ({}: {engine}, cloned from {}; voice print computed)",
                    voice.id,
                    voice.name,
                    audio.display()
                ),
            );
        }
        AdminCommand::Voice(VoiceCommand::Presets) => unreachable!("handled without a database"),
        AdminCommand::Pronunciation(command) => {
            pronunciation::run(core, as_json, command).await?;
        }
    }
    Ok(())
}

/// Lists the presets of each installed engine (no model is loaded).
fn presets(config: &Config, as_json: bool) -> anyhow::Result<()> {
    let all = crate::app::engines(config).presets();
    if as_json {
        let engines: Vec<serde_json::Value> = all
            .iter()
            .map(|(engine, presets)| {
                let presets: Vec<serde_json::Value> = presets
                    .iter()
                    .map(|p| json!({ "name": p.name, "language": p.language, "description": p.description }))
                    .collect();
                json!({ "engine": engine.as_str(), "presets": presets })
            })
            .collect();
        println!("{}", json!({ "engines": engines }));
        return Ok(());
    }
    if all.is_empty() {
        println!("no engine is installed (run `voiced models fetch kokoro`)");
    }
    for (engine, presets) in all {
        println!("{engine}:");
        for preset in presets {
            println!(
                "  {:<16} {:<6} {}",
                preset.name, preset.language, preset.description
            );
        }
    }
    Ok(())
}

/// The first line of standard input, without its line ending.
fn read_password_stdin() -> anyhow::Result<String> {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line)?;
    let password = line.trim_end_matches(['\n', '\r']).to_owned();
    anyhow::ensure!(!password.is_empty(), "no password on standard input");
    Ok(password)
}

/// A core refusal as the operator's message: `not_found` says `missing`, anything else its
/// detail.
fn not_found_as(err: crate::service::ServiceError, missing: &str) -> anyhow::Error {
    match err.code {
        crate::service::ErrorCode::NotFound => anyhow::anyhow!("{missing}"),
        _ => anyhow::anyhow!("{}", err.detail),
    }
}
