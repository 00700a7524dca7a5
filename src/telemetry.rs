//! Logging. Credentials never reach a log line: spans record no headers, and the auth layer
//! records only the account id.

use tracing_subscriber::EnvFilter;

use crate::config::LogFormat;

/// Logs to stderr. `VOICED_LOG` overrides the filter; without it services log at info and
/// one-shot commands (`admin`, `migrate`) only warnings, so that their output stays readable.
pub fn init(format: LogFormat) {
    // symphonia warns once per junk region of a hostile upload: a flood, not news.
    init_with_default(format, "info,sqlx=warn,tower_http=info,symphonia=error");
}

pub fn init_with_default(format: LogFormat, default_filter: &str) {
    let filter =
        EnvFilter::try_from_env("VOICED_LOG").unwrap_or_else(|_| EnvFilter::new(default_filter));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    // A second init (tests) keeps the first subscriber.
    let _ = match format {
        LogFormat::Text => builder.try_init(),
        LogFormat::Json => builder.json().try_init(),
    };
}
