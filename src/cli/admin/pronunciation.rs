//! `voiced admin pronunciation create|list|delete`: an account's pronunciation rules, through
//! the core's rules (`service::pronunciations`), as the API and the console manage them.

use clap::Subcommand;
use serde_json::{Value, json};

use super::{emit, resolve_account};
use crate::service::Core;
use crate::service::pronunciations::{self, NewRule};
use crate::service::views::PronunciationRow;
use crate::service::{ErrorCode, ServiceError};

#[derive(Subcommand)]
pub(super) enum PronunciationCommand {
    /// Add a rule: each whole-word occurrence of TEXT is read as ALIAS, or spoken as PHONEMES
    /// (IPA); prints the rule.
    #[command(
        after_help = "Examples:\n  voiced admin pronunciation create --account ada@example.com \
                            --text Kokoro --phonemes ˈkoʊkəɹoʊ\n  \
                            voiced admin pronunciation create --account ada@example.com \
                            --text SQL --alias sequel --language en"
    )]
    Create {
        /// The account's id or email.
        #[arg(long)]
        account: String,
        /// The word or phrase (1 to 100 characters).
        #[arg(long)]
        text: String,
        /// Words to read instead (1 to 200 characters).
        #[arg(
            long,
            conflicts_with = "phonemes",
            required_unless_present = "phonemes"
        )]
        alias: Option<String>,
        /// IPA to speak instead (1 to 200 characters).
        #[arg(long)]
        phonemes: Option<String>,
        /// Only voices of this language (ISO 639-1, optionally with a region).
        #[arg(long, default_value = "")]
        language: String,
        /// Match the text's case exactly.
        #[arg(long)]
        case_sensitive: bool,
    },
    /// The account's rules, newest first.
    #[command(after_help = "Example:\n  voiced admin pronunciation list --account ada@example.com")]
    List {
        /// The account's id or email.
        #[arg(long)]
        account: String,
    },
    /// Delete one of the account's rules.
    #[command(
        after_help = "Example:\n  voiced admin pronunciation delete --account ada@example.com \
                            pron_0193…"
    )]
    Delete {
        /// The account's id or email.
        #[arg(long)]
        account: String,
        /// The rule's id (pron_…).
        id: String,
    },
}

fn refused(e: ServiceError) -> anyhow::Error {
    match e.param {
        Some(param) => anyhow::anyhow!("--{}: {}", param.replace('_', "-"), e.detail),
        None => anyhow::anyhow!("{}", e.detail),
    }
}

fn as_json(row: &PronunciationRow) -> Value {
    let mut value = json!({
        "id": row.id,
        "text": row.text,
        "language": row.language,
        "case_sensitive": row.case_sensitive,
        "created_at": row.created_at,
    });
    if let Some(alias) = &row.alias {
        value["alias"] = json!(alias);
    }
    if let Some(phonemes) = &row.phonemes {
        value["phonemes"] = json!(phonemes);
    }
    value
}

fn as_line(row: &PronunciationRow) -> String {
    let says = match (&row.alias, &row.phonemes) {
        (Some(alias), _) => format!("read as {alias:?}"),
        (None, Some(ipa)) => format!("spoken /{ipa}/"),
        (None, None) => String::new(),
    };
    let language = row.language.as_deref().unwrap_or("every language");
    let case = if row.case_sensitive {
        ", case-sensitive"
    } else {
        ""
    };
    format!("{}  {:?} {says} ({language}{case})", row.id, row.text)
}

pub(super) async fn run(
    core: &Core,
    json_output: bool,
    command: PronunciationCommand,
) -> anyhow::Result<()> {
    match command {
        PronunciationCommand::Create {
            account,
            text,
            alias,
            phonemes,
            language,
            case_sensitive,
        } => {
            let account = resolve_account(core, &account).await?;
            let rule = NewRule {
                text: &text,
                alias: alias.as_deref(),
                phonemes: phonemes.as_deref(),
                language: &language,
                case_sensitive,
            };
            let row = pronunciations::create_for(core, &account, rule)
                .await
                .map_err(refused)?;
            emit(json_output, as_json(&row), as_line(&row));
        }
        PronunciationCommand::List { account } => {
            let account = resolve_account(core, &account).await?;
            let rows = pronunciations::list_for(core, &account)
                .await
                .map_err(refused)?;
            if json_output {
                let data: Vec<Value> = rows.iter().map(as_json).collect();
                println!("{}", json!({ "data": data, "total": rows.len() }));
            } else if rows.is_empty() {
                println!("no pronunciation rules");
            } else {
                for row in &rows {
                    println!("{}", as_line(row));
                }
            }
        }
        PronunciationCommand::Delete { account, id } => {
            let account = resolve_account(core, &account).await?;
            pronunciations::delete_for(core, &account, id.trim())
                .await
                .map_err(|e| match e.code {
                    ErrorCode::NotFound => {
                        anyhow::anyhow!("the account has no pronunciation rule {id}")
                    }
                    _ => refused(e),
                })?;
            emit(
                json_output,
                json!({ "id": id, "deleted": true }),
                format!("pronunciation {id} deleted"),
            );
        }
    }
    Ok(())
}
