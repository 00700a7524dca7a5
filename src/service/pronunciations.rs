//! An account's pronunciation rules (issue 26 item 3; docs/speech-text.md "Pronunciations"), for
//! every door: `GET|POST /v1/pronunciations`, `DELETE /v1/pronunciations/{id}`, the console's
//! Pronunciations page and `voiced admin pronunciation`. Speech admission writes the rules into
//! the text a generation speaks ([`spoken_text`]).

use crate::service::operations::Operation;
use sqlx::PgPool;

use super::core::Core;
use super::error::{ErrorCode, ServiceError};
use super::idempotency::{self, Claim, Keyed, Outcome, Ran};
use super::principal::Principal;
use super::voices::check_language;
use crate::domain::new_id;
use crate::engines::text::phonemize;
use crate::engines::text::pronounce::{self, MAX_PHONEMES_CHARS, MAX_WORD_CHARS, Rule, Say};
use crate::store;
use crate::store::pronunciations::NewPronunciation;
use crate::store::pronunciations::PronunciationRow;

/// The most rules one account keeps.
pub const MAX_RULES_PER_ACCOUNT: i64 = 500;
/// The longest alias, in characters.
pub const MAX_ALIAS_CHARS: usize = 200;

/// A rule as a door parsed it (strings as sent; empty `language`: every language).
#[derive(Debug, Clone, Copy)]
pub struct NewRule<'a> {
    pub text: &'a str,
    pub alias: Option<&'a str>,
    pub phonemes: Option<&'a str>,
    pub language: &'a str,
    pub case_sensitive: bool,
}

/// The account's rules, newest first.
pub async fn list(
    core: &Core,
    principal: &Principal,
) -> Result<Vec<PronunciationRow>, ServiceError> {
    Operation::ListPronunciations.check(principal)?;
    list_for(core, &principal.account_id).await
}

/// [`list`] for an account the door already knows (the console's session, the operator).
pub async fn list_for(
    core: &Core,
    account_id: &str,
) -> Result<Vec<PronunciationRow>, ServiceError> {
    let pool = &core.pool;
    Ok(store::pronunciations::list(pool, account_id).await?)
}

/// Adds a rule to the account (400 `invalid_request` naming the member at fault, or beyond
/// [`MAX_RULES_PER_ACCOUNT`]), once per `Idempotency-Key`: the rule, and whether it is a replay
/// (the rule as the key's first request added it).
pub async fn create(
    core: &Core,
    principal: &Principal,
    rule: NewRule<'_>,
    keyed: Keyed,
) -> Result<(PronunciationRow, bool), ServiceError> {
    Operation::CreatePronunciation.check(principal)?;
    let ran = idempotency::run(core, principal, keyed, |claim| async move {
        insert(&core.pool, &principal.account_id, rule, claim.as_ref()).await
    })
    .await?;
    match ran {
        Ran::Fresh(row) => Ok((row, false)),
        Ran::Replayed(Outcome::PronunciationCreated(row)) => Ok((*row, true)),
        Ran::Replayed(other) => Err(ServiceError::internal(format!(
            "pronunciation key holds another outcome: {other:?}"
        ))),
    }
}

/// [`create`] for an account a door already knows without a key (the console's session, the
/// operator's `voiced admin pronunciation create`).
pub async fn create_for(
    core: &Core,
    account_id: &str,
    rule: NewRule<'_>,
) -> Result<PronunciationRow, ServiceError> {
    let pool = &core.pool;
    insert(pool, account_id, rule, None).await
}

async fn insert(
    pool: &PgPool,
    account_id: &str,
    rule: NewRule<'_>,
    claim: Option<&Claim>,
) -> Result<PronunciationRow, ServiceError> {
    let checked = check(rule)?;
    let id = new_id("pron");
    let mut tx = pool.begin().await?;
    let stored = store::pronunciations::insert_within(
        &mut tx,
        NewPronunciation {
            id: &id,
            account_id,
            text: &checked.text,
            alias: checked.alias.as_deref(),
            phonemes: checked.phonemes.as_deref(),
            language: checked.language.as_deref(),
            case_sensitive: rule.case_sensitive,
        },
        MAX_RULES_PER_ACCOUNT,
    )
    .await?;
    if !stored {
        return Err(ServiceError::new(
            ErrorCode::InvalidRequest,
            format!(
                "The account has {MAX_RULES_PER_ACCOUNT} pronunciation rules, the most it may keep; delete one first."
            ),
        ));
    }
    let row = store::pronunciations::find_in(&mut tx, account_id, &id)
        .await?
        .ok_or_else(|| ServiceError::internal("a stored pronunciation vanished"))?;
    if let Some(claim) = claim {
        claim
            .complete_in(
                &mut tx,
                &Outcome::PronunciationCreated(Box::new(row.clone())),
            )
            .await?;
    }
    tx.commit().await?;
    Ok(row)
}

/// Deletes the account's rule `id`; 404 `not_found` when it has none by that id (another
/// account's included).
pub async fn delete(core: &Core, principal: &Principal, id: &str) -> Result<(), ServiceError> {
    Operation::DeletePronunciation.check(principal)?;
    delete_for(core, &principal.account_id, id).await
}

/// [`delete`] for an account named by the operator.
pub async fn delete_for(core: &Core, account_id: &str, id: &str) -> Result<(), ServiceError> {
    let pool = &core.pool;
    if store::pronunciations::delete(pool, account_id, id).await? {
        Ok(())
    } else {
        Err(ServiceError::not_found())
    }
}

/// A rule's members after checking.
struct Checked {
    text: String,
    alias: Option<String>,
    phonemes: Option<String>,
    language: Option<String>,
}

fn check(rule: NewRule<'_>) -> Result<Checked, ServiceError> {
    let text = rule.text.trim();
    let chars = text.chars().count();
    if chars == 0 || chars > MAX_WORD_CHARS {
        return Err(ServiceError::invalid(
            "text",
            format!("text is the word or phrase to pronounce: 1 to {MAX_WORD_CHARS} characters."),
        ));
    }
    if !text.chars().any(char::is_alphanumeric)
        || text
            .chars()
            .any(|c| c.is_control() || matches!(c, '[' | ']'))
    {
        return Err(ServiceError::invalid(
            "text",
            "text must contain a letter or digit, and no brackets or control characters.",
        ));
    }
    let language = check_language(rule.language)?;
    let language = (!language.is_empty()).then_some(language);
    let (alias, phonemes) = match (rule.alias, rule.phonemes) {
        (Some(_), Some(_)) => {
            return Err(ServiceError::invalid(
                "phonemes",
                "Give either alias (other words to read) or phonemes (IPA), not both.",
            ));
        }
        (None, None) => {
            return Err(ServiceError::invalid(
                "alias",
                "A rule says how to read its text: give alias (other words) or phonemes (IPA).",
            ));
        }
        (Some(alias), None) => (Some(check_alias(alias)?), None),
        (None, Some(ipa)) => (None, Some(check_phonemes(ipa, language.as_deref())?)),
    };
    Ok(Checked {
        text: text.to_owned(),
        alias,
        phonemes,
        language,
    })
}

fn check_alias(alias: &str) -> Result<String, ServiceError> {
    let alias = alias.trim();
    let chars = alias.chars().count();
    if chars == 0 || chars > MAX_ALIAS_CHARS || alias.chars().any(char::is_control) {
        return Err(ServiceError::invalid(
            "alias",
            format!(
                "alias is the words to read instead: 1 to {MAX_ALIAS_CHARS} characters, no control characters."
            ),
        ));
    }
    Ok(alias.to_owned())
}

/// The espeak voice a rule's (or a voice's) language phonemises with; English by default.
fn espeak_voice(language: Option<&str>) -> String {
    phonemize::espeak_voice(language.unwrap_or("en"), "").unwrap_or_else(|_| "en-us".into())
}

fn check_phonemes(ipa: &str, language: Option<&str>) -> Result<String, ServiceError> {
    let ipa = ipa.trim();
    let chars = ipa.chars().count();
    if chars == 0 || chars > MAX_PHONEMES_CHARS {
        return Err(ServiceError::invalid(
            "phonemes",
            format!("phonemes is IPA, 1 to {MAX_PHONEMES_CHARS} characters."),
        ));
    }
    if let Some(reason) = phonemize::unspeakable(ipa, &espeak_voice(language)) {
        return Err(ServiceError::invalid(
            "phonemes",
            format!(
                "phonemes {ipa:?} cannot be spoken: {reason}. Write IPA (docs/speech-text.md lists the symbols)."
            ),
        ));
    }
    Ok(ipa.to_owned())
}

/// Whether a rule limited to `rule` applies to a voice of `voice` language: the same language,
/// and the same region when the rule names one (`en` applies to `en-gb`; `en-gb` not to `en-us`).
fn applies(rule: Option<&str>, voice: &str) -> bool {
    let Some(rule) = rule else { return true };
    let voice = voice.trim().to_ascii_lowercase().replace('_', "-");
    let (rule_primary, rule_region) = rule.split_once('-').unwrap_or((rule, ""));
    let (voice_primary, voice_region) = voice.split_once('-').unwrap_or((&voice, ""));
    rule_primary == voice_primary && (rule_region.is_empty() || rule_region == voice_region)
}

/// The longest text a generation may speak once the account's rules are written in, in
/// characters: twice the longest request text. Rules multiply a text (a 200-character alias for
/// a one-letter word), and everything after them (the overrides' check, normalisation,
/// phonemisation, the estimate) costs in proportion to what they wrote.
pub const MAX_SPOKEN_CHARS: usize = 2 * crate::domain::MAX_TEXT_CHARS;

/// The text a generation of the account speaks with a voice of `language`: its rules for that
/// language written in (`None` when none applied), each inline override's IPA checked. A bad
/// override, or rules that make the text longer than [`MAX_SPOKEN_CHARS`], is 400
/// `invalid_request` naming `field` (the request's text), refused before anything phonemises
/// it. The rules are applied and the overrides checked on the blocking pool (they run
/// espeak-ng), never on the async workers.
pub async fn spoken_text(
    pool: &PgPool,
    account_id: &str,
    language: &str,
    text: &str,
    field: &'static str,
) -> Result<Option<String>, ServiceError> {
    let rules: Vec<Rule> = store::pronunciations::list(pool, account_id)
        .await?
        .into_iter()
        .filter(|r| applies(r.language.as_deref(), language))
        .filter_map(|r| {
            let say = match (r.alias, r.phonemes) {
                (Some(alias), _) => Say::Alias(alias),
                (None, Some(ipa)) => Say::Phonemes(ipa),
                (None, None) => return None,
            };
            Some(Rule {
                text: r.text,
                say,
                case_sensitive: r.case_sensitive,
            })
        })
        .collect();
    if rules.is_empty() && pronounce::overrides(text).is_empty() {
        return Ok(None); // nothing to write in or check: no trip to the blocking pool
    }
    let (text, language) = (text.to_owned(), language.to_owned());
    tokio::task::spawn_blocking(move || write_rules(&text, &rules, &language, field))
        .await
        .map_err(ServiceError::internal)?
}

fn write_rules(
    text: &str,
    rules: &[Rule],
    language: &str,
    field: &'static str,
) -> Result<Option<String>, ServiceError> {
    let Some(spoken) = pronounce::apply_within(text, rules, MAX_SPOKEN_CHARS) else {
        return Err(ServiceError::invalid(
            field,
            format!(
                "With this account's pronunciation rules the text would be longer than {MAX_SPOKEN_CHARS} characters (each alias replaces the word it matches). Send a shorter text, or shorten the aliases that match it."
            ),
        ));
    };
    let voice = espeak_voice(Some(language));
    for o in pronounce::overrides(&spoken) {
        if let Some(reason) = phonemize::unspeakable(o.phonemes, &voice) {
            return Err(ServiceError::invalid(
                field,
                format!(
                    "The pronunciation [{}](/{}/) cannot be spoken: {reason}. Write IPA between the slashes (docs/speech-text.md).",
                    o.word, o.phonemes
                ),
            ));
        }
    }
    Ok((spoken != text).then_some(spoken))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule<'a>(text: &'a str, alias: Option<&'a str>, phonemes: Option<&'a str>) -> NewRule<'a> {
        NewRule {
            text,
            alias,
            phonemes,
            language: "",
            case_sensitive: false,
        }
    }

    fn param(result: Result<Checked, ServiceError>) -> Option<String> {
        result.err().and_then(|e| e.param)
    }

    #[test]
    fn rules_are_checked_member_by_member() {
        assert!(check(rule("Kokoro", None, Some("kˈOkəɹO"))).is_ok());
        assert!(check(rule("Kokoro", None, Some("ˈkoʊkəɹoʊ"))).is_ok());
        assert!(check(rule("SQL", Some("sequel"), None)).is_ok());
        assert_eq!(
            param(check(rule("", Some("x"), None))).as_deref(),
            Some("text")
        );
        assert_eq!(
            param(check(rule("a]b", Some("x"), None))).as_deref(),
            Some("text")
        );
        assert_eq!(
            param(check(rule("--", Some("x"), None))).as_deref(),
            Some("text")
        );
        let long = "x".repeat(101);
        assert_eq!(
            param(check(rule(&long, Some("x"), None))).as_deref(),
            Some("text")
        );
        assert_eq!(
            param(check(rule("SQL", None, None))).as_deref(),
            Some("alias")
        );
        assert_eq!(
            param(check(rule("SQL", Some("a"), Some("ɛs")))).as_deref(),
            Some("phonemes")
        );
        assert_eq!(
            param(check(rule("SQL", Some(" "), None))).as_deref(),
            Some("alias")
        );
        // Symbols no voice knows, a slash (the inline syntax's delimiter), digits.
        for bad in ["k☃k", "a/b", "ɛs2", "ˈˌ", "q\u{0329}"] {
            assert_eq!(
                param(check(rule("SQL", None, Some(bad)))).as_deref(),
                Some("phonemes"),
                "{bad}"
            );
        }
        let mut regional = rule("tomato", None, Some("təmˈɑːtəʊ"));
        regional.language = "EN-GB";
        assert_eq!(check(regional).unwrap().language.as_deref(), Some("en-gb"));
        regional.language = "english";
        assert_eq!(param(check(regional)).as_deref(), Some("language"));
    }

    #[test]
    fn a_rules_language_is_a_voices_language_or_its_family() {
        assert!(applies(None, "ja"));
        assert!(applies(Some("en"), "en-gb"));
        assert!(applies(Some("en"), "en"));
        assert!(applies(Some("en-gb"), "en-GB"));
        assert!(!applies(Some("en-gb"), "en-us"));
        assert!(!applies(Some("en-gb"), "en"));
        assert!(!applies(Some("fr"), "en"));
    }
}
