//! `voiced admin webhook create|list|delete|rotate-secret` (docs/webhooks.md): the operator's
//! door to an account's webhook endpoints. The rules are `service::webhooks`'.

use clap::Subcommand;
use serde_json::json;

use super::{emit, resolve_account};
use crate::service::Core;
use crate::service::webhooks::{self, Endpoint, NewEndpoint};

#[derive(Subcommand)]
pub enum WebhookCommand {
    /// Register an endpoint; prints it and its signing secret (shown only now).
    #[command(after_help = "Examples:
  voiced admin webhook create --account ada@example.com --url https://hooks.example.com/voiced \\
    --events generation.completed,generation.failed
  voiced admin --json webhook create --account ada@example.com --url https://hooks.example.com/v \\
    --events capture.created --description 'Transcripts to the CRM'")]
    Create {
        /// The account's id or email.
        #[arg(long)]
        account: String,
        /// Where deliveries are POSTed: an https URL of a public address.
        #[arg(long)]
        url: String,
        /// Comma-separated: generation.completed,generation.failed,capture.created
        #[arg(long, value_delimiter = ',', required = true)]
        events: Vec<String>,
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List an account's endpoints (id, enabled, events, URL).
    #[command(after_help = "Example:\n  voiced admin webhook list --account ada@example.com")]
    List {
        /// The account's id or email.
        #[arg(long)]
        account: String,
    },
    /// Delete an endpoint and its pending deliveries.
    #[command(
        after_help = "Example:\n  voiced admin webhook delete whep_0193… --account ada@example.com"
    )]
    Delete {
        endpoint_id: String,
        /// The account's id or email.
        #[arg(long)]
        account: String,
    },
    /// Give an endpoint a new secret (printed only now); the old one keeps signing for 24 hours.
    #[command(
        after_help = "Example:\n  voiced admin webhook rotate-secret whep_0193… --account ada@example.com"
    )]
    RotateSecret {
        endpoint_id: String,
        /// The account's id or email.
        #[arg(long)]
        account: String,
    },
}

fn describe(endpoint: &Endpoint) -> String {
    let state = match (&endpoint.enabled, endpoint.disabled_reason.as_deref()) {
        (true, _) => "enabled".to_owned(),
        (false, Some(reason)) => format!("disabled ({reason})"),
        (false, None) => "disabled".to_owned(),
    };
    format!(
        "{}  {state}  {}  {}{}",
        endpoint.id,
        endpoint.events.join(","),
        endpoint.url,
        if endpoint.description.is_empty() {
            String::new()
        } else {
            format!("  {}", endpoint.description)
        }
    )
}

fn refused(err: crate::service::ServiceError) -> anyhow::Error {
    match err.code {
        crate::service::ErrorCode::NotFound => anyhow::anyhow!("no such webhook endpoint"),
        _ => anyhow::anyhow!("{}", err.detail),
    }
}

pub async fn run(core: &Core, as_json: bool, command: WebhookCommand) -> anyhow::Result<()> {
    match command {
        WebhookCommand::Create {
            account,
            url,
            events,
            description,
        } => {
            let account = resolve_account(core, &account).await?;
            let (endpoint, secret) = webhooks::create(
                core,
                &account,
                NewEndpoint {
                    url: &url,
                    events: &events,
                    description: &description,
                },
            )
            .await
            .map_err(refused)?;
            let mut value = serde_json::to_value(&endpoint)?;
            value["secret"] = json!(secret);
            emit(
                as_json,
                value,
                format!(
                    "endpoint {}\nsecret (shown only now): {secret}",
                    describe(&endpoint)
                ),
            );
        }
        WebhookCommand::List { account } => {
            let account = resolve_account(core, &account).await?;
            let endpoints = webhooks::list(core, &account).await.map_err(refused)?;
            let human = if endpoints.is_empty() {
                format!("account {account} has no webhook endpoints")
            } else {
                endpoints
                    .iter()
                    .map(describe)
                    .collect::<Vec<_>>()
                    .join("\n")
            };
            emit(as_json, serde_json::to_value(&endpoints)?, human);
        }
        WebhookCommand::Delete {
            endpoint_id,
            account,
        } => {
            let account = resolve_account(core, &account).await?;
            webhooks::delete(core, &account, &endpoint_id)
                .await
                .map_err(refused)?;
            emit(
                as_json,
                json!({ "id": endpoint_id, "deleted": true }),
                format!("endpoint {endpoint_id} deleted"),
            );
        }
        WebhookCommand::RotateSecret {
            endpoint_id,
            account,
        } => {
            let account = resolve_account(core, &account).await?;
            let secret = webhooks::rotate_secret(core, &account, &endpoint_id)
                .await
                .map_err(refused)?;
            emit(
                as_json,
                json!({ "id": endpoint_id, "secret": secret }),
                format!(
                    "endpoint {endpoint_id}: new secret (shown only now): {secret}\n\
                     the previous secret keeps signing for 24 hours"
                ),
            );
        }
    }
    Ok(())
}
