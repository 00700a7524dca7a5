//! Configuration: `config/default.toml` (compiled in), then the file named by `VOICED_CONFIG`,
//! then `VOICED_*` environment variables. Keys are flat so that each maps to one variable.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::domain::Plan;

const DEFAULTS: &str = include_str!("../config/default.toml");

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("setting {setting}: {message}")]
    Invalid { setting: String, message: String },
    #[error("config file {path}: {message}")]
    File { path: String, message: String },
}

impl ConfigError {
    fn invalid(setting: impl Into<String>, message: impl Into<String>) -> Self {
        Self::Invalid {
            setting: setting.into(),
            message: message.into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    bind: String,
    database_url: String,
    data_dir: String,
    models_dir: String,
    public_base_url: String,
    errors_url: String,
    billing_url: String,
    console_url: String,
    signup: bool,
    signup_plan: String,
    billing_contact: String,
    signing_secret: String,
    workers: u32,
    engine_threads: u32,
    generation_timeout_secs: u64,
    lease_secs: u64,
    whisper_model: String,
    asr_threads: u32,
    asr_queue: u32,
    max_pending_per_account: u32,
    rate_limit_writes_per_hour: u32,
    rate_limit_reads_per_minute: u32,
    redis_url: String,
    blob_store: String,
    blob_redirect: bool,
    metrics_bind: String,
    request_timeout_secs: u64,
    header_read_timeout_secs: u64,
    shutdown_grace_secs: u64,
    log_format: String,
    oauth_registrations_per_hour: u32,
    oauth_allow_loopback_fetch: bool,
    max_transcriptions_per_account: u32,
    // Anonymous doors and client addresses (issue 23 items 4 and 5).
    trusted_proxies: String,
    signup_per_address_per_hour: u32,
    signup_per_hour: u32,
    password_hashes_in_flight: u32,
    password_hash_queue: u32,
    oauth_registrations_per_address_per_day: u32,
    oauth_registrations_per_day: u32,
    oauth_metadata_fetches_in_flight: u32,
    oauth_metadata_fetches_per_address_per_hour: u32,
    // Fair and bounded voice work, and bounded connections (issue 23).
    max_cloned_voices_per_account: u32,
    app_free_minutes: u32,
    app_free_transcription_minutes: u32,
    body_read_timeout_secs: u64,
    max_connections: u32,
    download_connections: u32,
    downloads_per_link: u32,
    max_audio_per_request_secs: u64,
    // Webhooks (issue 27 item 1).
    webhooks_allow_private_addresses: bool,
    webhooks_retry_base_ms: u64,
    webhooks_deliveries_in_flight: u32,
    // Sessions and limits (issue 36 items 5 and 8).
    ipv6_rate_limit_prefix: u32,
    max_keys_per_account: u32,
    max_clones_per_account_per_month: u32,
    // Live transcription (issue 38 item 2).
    max_live_sessions: u32,
    live_max_session_secs: u64,
    live_idle_timeout_secs: u64,
    live_interim_interval_ms: u64,
    // Live speech (issue 39 item 1).
    max_speech_sockets: u32,
    max_speech_sockets_per_account: u32,
    speech_socket_max_session_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

/// Validated configuration. Built only through [`Config::load`] or [`Config::from_table`].
#[derive(Debug, Clone)]
pub struct Config {
    pub bind: SocketAddr,
    pub database_url: Option<String>,
    pub data_dir: PathBuf,
    pub models_dir: PathBuf,
    pub public_base_url: String,
    pub errors_url: String,
    pub billing_url: String,
    pub console_url: String,
    /// Whether `/console/sign-up` creates accounts.
    pub signup: bool,
    /// The plan of accounts created at `/console/sign-up`.
    pub signup_plan: Plan,
    /// How to get a plan here, shown on `/console/billing` (free text; may be empty).
    pub billing_contact: String,
    /// Empty when the secret is to be read from (or created in) the data dir.
    pub signing_secret: Option<String>,
    pub workers: u32,
    pub engine_threads: u32,
    pub generation_timeout_secs: u64,
    pub lease_secs: u64,
    pub whisper_model: String,
    pub asr_threads: u32,
    pub asr_queue: u32,
    pub max_pending_per_account: u32,
    pub rate_limit_writes_per_hour: u32,
    pub rate_limit_reads_per_minute: u32,
    /// Shared rate limits in this Redis; `None`: each process counts alone.
    pub redis_url: Option<String>,
    /// `s3://bucket/prefix`: new audio in S3 (the `AWS_*` variables); `None`: in PostgreSQL.
    pub blob_store: Option<String>,
    /// Signed downloads of audio in S3 redirect to a presigned URL instead of streaming.
    pub blob_redirect: bool,
    /// Prometheus metrics listener (`GET /metrics`); `None`: off. Never the public port.
    pub metrics_bind: Option<SocketAddr>,
    pub request_timeout_secs: u64,
    pub header_read_timeout_secs: u64,
    pub shutdown_grace_secs: u64,
    pub log_format: LogFormat,
    /// Dynamic client registrations (`POST /oauth/register`) per client address per hour.
    pub oauth_registrations_per_hour: u32,
    /// Test allowance of `service::fetch`: `http` and loopback addresses for the URLs clients
    /// name (OAuth client metadata documents, `transcribe`'s `audio_url`). Never in production.
    pub oauth_allow_loopback_fetch: bool,
    /// Transcriptions one account may have in flight in one process (REST and `/mcp` alike);
    /// the next is refused with 429 `rate_limit_exceeded` before its upload is read.
    pub max_transcriptions_per_account: u32,
    /// Proxies whose `X-Forwarded-For` / `Forwarded` is believed (`domain::trusted_proxies`).
    pub trusted_proxies: crate::domain::TrustedProxies,
    /// Console sign-ups per client address per hour, and from everyone per hour.
    pub signup_per_address_per_hour: u32,
    pub signup_per_hour: u32,
    /// Argon2 hashes and verifications running at once, and how many may wait for one.
    pub password_hashes_in_flight: u32,
    pub password_hash_queue: u32,
    /// Dynamic client registrations per client address per day, and from everyone per day.
    pub oauth_registrations_per_address_per_day: u32,
    pub oauth_registrations_per_day: u32,
    /// Client metadata document fetches running at once, and per client address per hour.
    pub oauth_metadata_fetches_in_flight: u32,
    pub oauth_metadata_fetches_per_address_per_hour: u32,
    /// Cloned voices one account may have (each costs a voice-print job).
    pub max_cloned_voices_per_account: u32,
    /// Monthly minutes of generated audio an account without a plan may make in the console's
    /// playground (0: none); the API and `/mcp` still refuse such an account.
    pub app_free_minutes: u32,
    /// Monthly minutes of audio an account without a plan may transcribe in the console's
    /// playground (0: none).
    pub app_free_transcription_minutes: u32,
    /// A request's whole body must arrive within this many seconds of its head (408 otherwise).
    pub body_read_timeout_secs: u64,
    /// Connections served at once; more wait in the listen backlog.
    pub max_connections: u32,
    /// Size of the connection pool that serves audio downloads from PostgreSQL.
    pub download_connections: u32,
    /// Downloads of one generation's audio in flight at once; more get 429.
    pub downloads_per_link: u32,
    /// The most audio one speech request may produce, in seconds: a text whose admission
    /// estimate alone is longer is refused with 400 before anything is queued.
    pub max_audio_per_request_secs: u64,
    /// Webhook endpoints may be `http` and any address, private and loopback included (tests,
    /// private deployments). Never on a public service.
    pub webhooks_allow_private_addresses: bool,
    /// The first retry delay of a webhook delivery; each next one is 4 times longer (capped at
    /// 6 hours). A test/ops knob.
    pub webhooks_retry_base_ms: u64,
    /// Webhook deliveries one process sends at once.
    pub webhooks_deliveries_in_flight: u32,
    /// Leading bits of an IPv6 client address that the anonymous limits key on.
    pub ipv6_rate_limit_prefix: crate::domain::Ipv6RatePrefix,
    /// Live (unrevoked) API keys one account may hold.
    pub max_keys_per_account: u32,
    /// Voice clones one account may make per calendar month (UTC), deleted ones included.
    pub max_clones_per_account_per_month: u32,
    /// Live transcription sessions open at once in this process.
    pub max_live_sessions: u32,
    /// The longest live transcription session (wall clock, and audio).
    pub live_max_session_secs: u64,
    /// A live session without audio or keep-alive this long ends.
    pub live_idle_timeout_secs: u64,
    /// At most one interim hypothesis per this much new audio of an utterance.
    pub live_interim_interval_ms: u64,
    /// Speech sockets (`/v1/text-to-speech/{voice}/stream-input`, `…/multi-stream-input`)
    /// open at once in this process.
    pub max_speech_sockets: u32,
    /// Speech sockets one account may hold open at once in one process.
    pub max_speech_sockets_per_account: u32,
    /// The longest a speech socket stays open.
    pub speech_socket_max_session_secs: u64,
}

impl Config {
    /// Defaults, then `VOICED_CONFIG`, then the process environment.
    pub fn load() -> Result<Self, ConfigError> {
        let env: Vec<(String, String)> = std::env::vars().collect();
        Self::from_sources(&env)
    }

    /// Same as [`Config::load`] with an explicit environment (tests).
    pub fn from_sources(env: &[(String, String)]) -> Result<Self, ConfigError> {
        let mut table: toml::Table = DEFAULTS.parse().map_err(|e| ConfigError::File {
            path: "config/default.toml".into(),
            message: format!("{e}"),
        })?;
        if let Some((_, path)) = env.iter().find(|(k, _)| k == "VOICED_CONFIG") {
            let text = std::fs::read_to_string(path).map_err(|e| ConfigError::File {
                path: path.clone(),
                message: e.to_string(),
            })?;
            let file: toml::Table = text.parse().map_err(|e| ConfigError::File {
                path: path.clone(),
                message: format!("{e}"),
            })?;
            for (key, value) in file {
                if !table.contains_key(&key) {
                    return Err(ConfigError::File {
                        path: path.clone(),
                        message: format!("unknown setting {key}"),
                    });
                }
                table.insert(key, value);
            }
        }
        let database_url_set = env.iter().any(|(k, _)| k == "VOICED_DATABASE_URL");
        for (name, value) in env {
            let key = match name.strip_prefix("VOICED_") {
                Some(key) => key.to_ascii_lowercase(),
                None if name == "DATABASE_URL" && !database_url_set => "database_url".into(),
                None => continue,
            };
            // VOICED_* variables that are not settings (VOICED_CONFIG, test knobs) are not ours here.
            let Some(default) = table.get(&key) else {
                continue;
            };
            let parsed = match default {
                toml::Value::Boolean(_) => match value.trim() {
                    "true" | "1" => toml::Value::Boolean(true),
                    "false" | "0" => toml::Value::Boolean(false),
                    _ => return Err(ConfigError::invalid(name, "expected true or false")),
                },
                toml::Value::Integer(_) => value
                    .trim()
                    .parse::<i64>()
                    .map(toml::Value::Integer)
                    .map_err(|_| ConfigError::invalid(name, "expected a whole number"))?,
                _ => toml::Value::String(value.clone()),
            };
            table.insert(key, parsed);
        }
        Self::from_table(table)
    }

    fn from_table(table: toml::Table) -> Result<Self, ConfigError> {
        // The path of the failing field names the setting (e.g. a negative `workers`).
        let raw: Raw =
            serde_path_to_error::deserialize(toml::Value::Table(table)).map_err(|e| {
                let setting = e.path().to_string();
                ConfigError::invalid(setting, e.into_inner().message().to_string())
            })?;
        let bind = raw
            .bind
            .parse()
            .map_err(|_| ConfigError::invalid("bind", "expected host:port, e.g. 127.0.0.1:8080"))?;
        let blob_store = match raw.blob_store.trim() {
            "" => None,
            value if value.len() > "s3://".len() && value.starts_with("s3://") => {
                Some(value.to_owned())
            }
            _ => {
                return Err(ConfigError::invalid(
                    "blob_store",
                    "expected s3://bucket/prefix, or empty for PostgreSQL",
                ));
            }
        };
        if raw.blob_redirect && blob_store.is_none() {
            return Err(ConfigError::invalid(
                "blob_redirect",
                "needs blob_store (s3://bucket/prefix): audio in PostgreSQL is always streamed",
            ));
        }
        let metrics_bind = match raw.metrics_bind.trim() {
            "" => None,
            value => Some(value.parse().map_err(|_| {
                ConfigError::invalid(
                    "metrics_bind",
                    "expected host:port, e.g. 127.0.0.1:9090, or empty",
                )
            })?),
        };
        if metrics_bind.is_some() && metrics_bind == Some(bind) {
            return Err(ConfigError::invalid(
                "metrics_bind",
                "must differ from bind: metrics are never served on the public port",
            ));
        }
        let public_base_url = url_setting("public_base_url", &raw.public_base_url)?;
        // Empty links point at the pages this binary serves.
        let derived = |setting: &str, value: &str, path: &str| {
            if value.trim().is_empty() {
                Ok(format!("{public_base_url}{path}"))
            } else {
                url_setting(setting, value)
            }
        };
        let errors_url = derived("errors_url", &raw.errors_url, "/errors")?;
        let billing_url = derived("billing_url", &raw.billing_url, "/console/billing")?;
        let console_url = derived("console_url", &raw.console_url, "/console/keys")?;
        let signup_plan: Plan = raw
            .signup_plan
            .parse()
            .map_err(|e: String| ConfigError::invalid("signup_plan", e))?;
        let signing_secret = match raw.signing_secret.as_str() {
            "" => None,
            s if s.len() < 32 => {
                return Err(ConfigError::invalid(
                    "signing_secret",
                    "must be at least 32 characters",
                ));
            }
            s => Some(s.to_owned()),
        };
        let log_format = match raw.log_format.as_str() {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            _ => return Err(ConfigError::invalid("log_format", "expected text or json")),
        };
        if !matches!(
            raw.whisper_model.as_str(),
            "whisper-base" | "whisper-tiny.en"
        ) {
            return Err(ConfigError::invalid(
                "whisper_model",
                "expected whisper-base or whisper-tiny.en",
            ));
        }
        positive("engine_threads", raw.engine_threads.into())?;
        positive("asr_threads", raw.asr_threads.into())?;
        positive("generation_timeout_secs", raw.generation_timeout_secs)?;
        positive("lease_secs", raw.lease_secs)?;
        positive("request_timeout_secs", raw.request_timeout_secs)?;
        positive(
            "max_pending_per_account",
            raw.max_pending_per_account.into(),
        )?;
        positive(
            "rate_limit_writes_per_hour",
            raw.rate_limit_writes_per_hour.into(),
        )?;
        positive(
            "rate_limit_reads_per_minute",
            raw.rate_limit_reads_per_minute.into(),
        )?;
        positive(
            "oauth_registrations_per_hour",
            raw.oauth_registrations_per_hour.into(),
        )?;
        positive(
            "max_transcriptions_per_account",
            raw.max_transcriptions_per_account.into(),
        )?;
        let trusted_proxies = crate::domain::TrustedProxies::parse(&raw.trusted_proxies)
            .map_err(|e| ConfigError::invalid("trusted_proxies", e))?;
        for (setting, value) in [
            (
                "signup_per_address_per_hour",
                raw.signup_per_address_per_hour,
            ),
            ("signup_per_hour", raw.signup_per_hour),
            ("password_hashes_in_flight", raw.password_hashes_in_flight),
            (
                "oauth_registrations_per_address_per_day",
                raw.oauth_registrations_per_address_per_day,
            ),
            (
                "oauth_registrations_per_day",
                raw.oauth_registrations_per_day,
            ),
            (
                "oauth_metadata_fetches_in_flight",
                raw.oauth_metadata_fetches_in_flight,
            ),
            (
                "oauth_metadata_fetches_per_address_per_hour",
                raw.oauth_metadata_fetches_per_address_per_hour,
            ),
        ] {
            positive(setting, value.into())?;
        }
        positive(
            "max_cloned_voices_per_account",
            raw.max_cloned_voices_per_account.into(),
        )?;
        positive("body_read_timeout_secs", raw.body_read_timeout_secs)?;
        positive("max_connections", raw.max_connections.into())?;
        positive("download_connections", raw.download_connections.into())?;
        positive("downloads_per_link", raw.downloads_per_link.into())?;
        positive("max_audio_per_request_secs", raw.max_audio_per_request_secs)?;
        positive("webhooks_retry_base_ms", raw.webhooks_retry_base_ms)?;
        positive(
            "webhooks_deliveries_in_flight",
            raw.webhooks_deliveries_in_flight.into(),
        )?;
        let ipv6_rate_limit_prefix = crate::domain::Ipv6RatePrefix::new(raw.ipv6_rate_limit_prefix)
            .map_err(|e| ConfigError::invalid("ipv6_rate_limit_prefix", e))?;
        positive("max_keys_per_account", raw.max_keys_per_account.into())?;
        positive(
            "max_clones_per_account_per_month",
            raw.max_clones_per_account_per_month.into(),
        )?;
        positive("max_live_sessions", raw.max_live_sessions.into())?;
        positive("live_max_session_secs", raw.live_max_session_secs)?;
        positive("live_idle_timeout_secs", raw.live_idle_timeout_secs)?;
        positive("live_interim_interval_ms", raw.live_interim_interval_ms)?;
        positive("max_speech_sockets", raw.max_speech_sockets.into())?;
        positive(
            "max_speech_sockets_per_account",
            raw.max_speech_sockets_per_account.into(),
        )?;
        positive(
            "speech_socket_max_session_secs",
            raw.speech_socket_max_session_secs,
        )?;
        Ok(Self {
            bind,
            database_url: Some(raw.database_url).filter(|u| !u.trim().is_empty()),
            data_dir: expand_home(&raw.data_dir),
            models_dir: expand_home(&raw.models_dir),
            public_base_url,
            errors_url,
            billing_url,
            console_url,
            signup: raw.signup,
            signup_plan,
            billing_contact: raw.billing_contact.trim().to_owned(),
            signing_secret,
            workers: raw.workers,
            engine_threads: raw.engine_threads,
            generation_timeout_secs: raw.generation_timeout_secs,
            lease_secs: raw.lease_secs,
            whisper_model: raw.whisper_model,
            asr_threads: raw.asr_threads,
            asr_queue: raw.asr_queue,
            max_pending_per_account: raw.max_pending_per_account,
            rate_limit_writes_per_hour: raw.rate_limit_writes_per_hour,
            rate_limit_reads_per_minute: raw.rate_limit_reads_per_minute,
            redis_url: Some(raw.redis_url).filter(|u| !u.trim().is_empty()),
            metrics_bind,
            blob_store,
            blob_redirect: raw.blob_redirect,
            request_timeout_secs: raw.request_timeout_secs,
            header_read_timeout_secs: raw.header_read_timeout_secs,
            shutdown_grace_secs: raw.shutdown_grace_secs,
            log_format,
            oauth_registrations_per_hour: raw.oauth_registrations_per_hour,
            oauth_allow_loopback_fetch: raw.oauth_allow_loopback_fetch,
            max_transcriptions_per_account: raw.max_transcriptions_per_account,
            trusted_proxies,
            signup_per_address_per_hour: raw.signup_per_address_per_hour,
            signup_per_hour: raw.signup_per_hour,
            password_hashes_in_flight: raw.password_hashes_in_flight,
            password_hash_queue: raw.password_hash_queue,
            oauth_registrations_per_address_per_day: raw.oauth_registrations_per_address_per_day,
            oauth_registrations_per_day: raw.oauth_registrations_per_day,
            oauth_metadata_fetches_in_flight: raw.oauth_metadata_fetches_in_flight,
            oauth_metadata_fetches_per_address_per_hour: raw
                .oauth_metadata_fetches_per_address_per_hour,
            max_cloned_voices_per_account: raw.max_cloned_voices_per_account,
            app_free_minutes: raw.app_free_minutes,
            app_free_transcription_minutes: raw.app_free_transcription_minutes,
            body_read_timeout_secs: raw.body_read_timeout_secs,
            max_connections: raw.max_connections,
            download_connections: raw.download_connections,
            downloads_per_link: raw.downloads_per_link,
            max_audio_per_request_secs: raw.max_audio_per_request_secs,
            webhooks_allow_private_addresses: raw.webhooks_allow_private_addresses,
            webhooks_retry_base_ms: raw.webhooks_retry_base_ms,
            webhooks_deliveries_in_flight: raw.webhooks_deliveries_in_flight,
            ipv6_rate_limit_prefix,
            max_keys_per_account: raw.max_keys_per_account,
            max_clones_per_account_per_month: raw.max_clones_per_account_per_month,
            max_live_sessions: raw.max_live_sessions,
            live_max_session_secs: raw.live_max_session_secs,
            live_idle_timeout_secs: raw.live_idle_timeout_secs,
            live_interim_interval_ms: raw.live_interim_interval_ms,
            max_speech_sockets: raw.max_speech_sockets,
            max_speech_sockets_per_account: raw.max_speech_sockets_per_account,
            speech_socket_max_session_secs: raw.speech_socket_max_session_secs,
        })
    }
}

fn positive(setting: &str, value: u64) -> Result<(), ConfigError> {
    if value == 0 {
        return Err(ConfigError::invalid(setting, "must be greater than 0"));
    }
    Ok(())
}

/// An http(s) URL without a trailing slash, so that `{url}/<path>` joins cleanly.
fn url_setting(setting: &str, value: &str) -> Result<String, ConfigError> {
    let trimmed = value.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("https://")
        .or_else(|| trimmed.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(char::is_whitespace) => {
            Ok(trimmed.to_owned())
        }
        _ => Err(ConfigError::invalid(
            setting,
            "expected an http:// or https:// URL",
        )),
    }
}

fn expand_home(path: &str) -> PathBuf {
    match (path.strip_prefix("~/"), std::env::var_os("HOME")) {
        (Some(rest), Some(home)) => Path::new(&home).join(rest),
        _ => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_load() {
        let config = Config::from_sources(&[]).expect("defaults are valid");
        assert_eq!(config.bind.port(), 8080);
        assert!(config.database_url.is_none());
        assert_eq!(config.workers, 1);
        assert_eq!(config.errors_url, "http://127.0.0.1:8080/errors");
        assert_eq!(config.billing_url, "http://127.0.0.1:8080/console/billing");
        assert_eq!(config.console_url, "http://127.0.0.1:8080/console/keys");
        assert!(config.signup);
        assert_eq!(config.signup_plan, Plan::None);
    }

    #[test]
    fn webhook_settings_default_safe_and_are_checked() {
        let config = Config::from_sources(&[]).unwrap();
        assert!(!config.webhooks_allow_private_addresses);
        assert_eq!(config.webhooks_retry_base_ms, 30_000);
        assert_eq!(config.webhooks_deliveries_in_flight, 16);
        let config = Config::from_sources(&env(&[
            ("VOICED_WEBHOOKS_ALLOW_PRIVATE_ADDRESSES", "true"),
            ("VOICED_WEBHOOKS_RETRY_BASE_MS", "200"),
        ]))
        .unwrap();
        assert!(config.webhooks_allow_private_addresses);
        assert_eq!(config.webhooks_retry_base_ms, 200);
        for setting in [
            "VOICED_WEBHOOKS_RETRY_BASE_MS",
            "VOICED_WEBHOOKS_DELIVERIES_IN_FLIGHT",
        ] {
            let err = Config::from_sources(&env(&[(setting, "0")])).unwrap_err();
            assert!(err.to_string().contains("webhooks_"), "{err}");
        }
    }

    #[test]
    fn anonymous_door_settings_are_checked() {
        let config = Config::from_sources(&[]).unwrap();
        assert!(config.trusted_proxies.is_empty());
        assert_eq!(config.signup_per_address_per_hour, 10);
        assert_eq!(config.password_hashes_in_flight, 2);
        let config = Config::from_sources(&env(&[(
            "VOICED_TRUSTED_PROXIES",
            "172.28.0.10/32, 10.0.0.0/8",
        )]))
        .unwrap();
        assert!(config.trusted_proxies.contains("10.9.9.9".parse().unwrap()));
        let err = Config::from_sources(&env(&[("VOICED_TRUSTED_PROXIES", "nginx")])).unwrap_err();
        assert!(err.to_string().contains("trusted_proxies"), "{err}");
        for setting in [
            "VOICED_SIGNUP_PER_HOUR",
            "VOICED_PASSWORD_HASHES_IN_FLIGHT",
            "VOICED_OAUTH_METADATA_FETCHES_IN_FLIGHT",
        ] {
            let err = Config::from_sources(&env(&[(setting, "0")])).unwrap_err();
            let name = setting.trim_start_matches("VOICED_").to_lowercase();
            assert!(err.to_string().contains(&name), "{err}");
        }
    }

    #[test]
    fn issue_36_limits_are_checked() {
        let config = Config::from_sources(&[]).unwrap();
        assert_eq!(config.ipv6_rate_limit_prefix.bits(), 64);
        assert_eq!(config.max_keys_per_account, 50);
        assert_eq!(config.max_clones_per_account_per_month, 20);
        assert_eq!(config.max_live_sessions, 2);
        assert_eq!(config.live_max_session_secs, 3600);
        assert_eq!(config.live_idle_timeout_secs, 10);
        assert_eq!(config.live_interim_interval_ms, 1000);
        assert_eq!(config.max_speech_sockets, 32);
        assert_eq!(config.max_speech_sockets_per_account, 4);
        assert_eq!(config.speech_socket_max_session_secs, 3600);
        let config =
            Config::from_sources(&env(&[("VOICED_IPV6_RATE_LIMIT_PREFIX", "56")])).unwrap();
        assert_eq!(config.ipv6_rate_limit_prefix.bits(), 56);
        for (setting, value) in [
            ("VOICED_IPV6_RATE_LIMIT_PREFIX", "16"),
            ("VOICED_IPV6_RATE_LIMIT_PREFIX", "129"),
            ("VOICED_MAX_KEYS_PER_ACCOUNT", "0"),
            ("VOICED_MAX_CLONES_PER_ACCOUNT_PER_MONTH", "0"),
        ] {
            let err = Config::from_sources(&env(&[(setting, value)])).unwrap_err();
            let name = setting.trim_start_matches("VOICED_").to_lowercase();
            assert!(err.to_string().contains(&name), "{err}");
        }
    }

    #[test]
    fn links_follow_the_public_base_url_unless_set() {
        let config = Config::from_sources(&env(&[
            ("VOICED_PUBLIC_BASE_URL", "https://voice.example.com/"),
            ("VOICED_ERRORS_URL", "https://docs.example.com/errors/"),
            ("VOICED_SIGNUP", "false"),
            ("VOICED_SIGNUP_PLAN", "trial"),
        ]))
        .expect("valid");
        assert_eq!(config.errors_url, "https://docs.example.com/errors");
        assert_eq!(config.console_url, "https://voice.example.com/console/keys");
        assert!(!config.signup);
        assert_eq!(config.signup_plan, Plan::Trial);
        assert!(!Config::from_sources(&[]).unwrap().blob_redirect);
        let config = Config::from_sources(&env(&[
            ("VOICED_BLOB_REDIRECT", "1"),
            ("VOICED_BLOB_STORE", "s3://audio/prefix"),
        ]))
        .unwrap();
        assert!(config.blob_redirect);
        let err = Config::from_sources(&env(&[("VOICED_BLOB_REDIRECT", "true")])).unwrap_err();
        assert!(err.to_string().contains("blob_redirect"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_BLOB_REDIRECT", "yes")])).unwrap_err();
        assert!(err.to_string().contains("VOICED_BLOB_REDIRECT"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_SIGNUP", "maybe")])).unwrap_err();
        assert!(err.to_string().contains("VOICED_SIGNUP"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_SIGNUP_PLAN", "gold")])).unwrap_err();
        assert!(err.to_string().contains("signup_plan"), "{err}");
    }

    #[test]
    fn environment_overrides_and_database_url_fallback() {
        let config = Config::from_sources(&env(&[
            ("VOICED_BIND", "0.0.0.0:9000"),
            ("DATABASE_URL", "postgres://x/y"),
            ("VOICED_WORKERS", "3"),
        ]))
        .expect("valid");
        assert_eq!(config.bind.port(), 9000);
        assert_eq!(config.database_url.as_deref(), Some("postgres://x/y"));
        assert_eq!(config.workers, 3);
        let config = Config::from_sources(&env(&[
            ("DATABASE_URL", "postgres://x/y"),
            ("VOICED_DATABASE_URL", "postgres://a/b"),
        ]))
        .expect("valid");
        assert_eq!(config.database_url.as_deref(), Some("postgres://a/b"));
    }

    #[test]
    fn bad_values_name_the_setting() {
        let err = Config::from_sources(&env(&[("VOICED_WORKERS", "many")])).unwrap_err();
        assert!(err.to_string().contains("VOICED_WORKERS"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_BIND", "nope")])).unwrap_err();
        assert!(err.to_string().contains("bind"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_SIGNING_SECRET", "short")])).unwrap_err();
        assert!(err.to_string().contains("signing_secret"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_ERRORS_URL", "ftp://x")])).unwrap_err();
        assert!(err.to_string().contains("errors_url"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_WORKERS", "-1")])).unwrap_err();
        assert!(err.to_string().starts_with("setting workers:"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_ASR_QUEUE", "99999999999")])).unwrap_err();
        assert!(err.to_string().starts_with("setting asr_queue:"), "{err}");
        let err =
            Config::from_sources(&env(&[("VOICED_MAX_PENDING_PER_ACCOUNT", "0")])).unwrap_err();
        assert!(err.to_string().contains("max_pending_per_account"), "{err}");
        let err = Config::from_sources(&env(&[("VOICED_MAX_TRANSCRIPTIONS_PER_ACCOUNT", "0")]))
            .unwrap_err();
        assert!(
            err.to_string().contains("max_transcriptions_per_account"),
            "{err}"
        );
        for setting in [
            "VOICED_MAX_CLONED_VOICES_PER_ACCOUNT",
            "VOICED_BODY_READ_TIMEOUT_SECS",
            "VOICED_MAX_CONNECTIONS",
            "VOICED_DOWNLOAD_CONNECTIONS",
            "VOICED_DOWNLOADS_PER_LINK",
        ] {
            let err = Config::from_sources(&env(&[(setting, "0")])).unwrap_err();
            let name = setting
                .strip_prefix("VOICED_")
                .unwrap()
                .to_ascii_lowercase();
            assert!(err.to_string().contains(&name), "{err}");
        }
        let config = Config::from_sources(&[]).unwrap();
        assert_eq!(config.max_cloned_voices_per_account, 20);
        assert_eq!(config.app_free_minutes, 10);
        assert_eq!(config.app_free_transcription_minutes, 30);
        assert_eq!(config.body_read_timeout_secs, 120);
        assert_eq!(config.max_connections, 4096);
    }
}
