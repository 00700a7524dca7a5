//! Who is calling, as every transport resolves it, and what an operation requires of them.

use super::error::ServiceError;
use crate::domain::{Feature, Plan, Scope};

/// The caller: the credential and its account, as of this request. One type for every
/// transport (REST, the agent interface) and both kinds of credential.
#[derive(Debug, Clone)]
pub struct Principal {
    pub account_id: String,
    /// The key's scopes, or the access token's.
    pub scopes: Vec<Scope>,
    pub plan: Plan,
    pub features: Vec<Feature>,
    pub credential: Credential,
}

impl Principal {
    /// The principal of a stored credential (a key row or an access token's): scopes and
    /// features the server does not know (any more) are dropped; a plan it does not know is an
    /// internal error.
    pub fn from_row(
        account_id: &str,
        scopes: &[String],
        plan: &str,
        features: &[String],
        credential: Credential,
    ) -> Result<Principal, crate::service::ServiceError> {
        Ok(Principal {
            account_id: account_id.to_owned(),
            scopes: scopes.iter().filter_map(|s| s.parse().ok()).collect(),
            plan: plan
                .parse()
                .map_err(crate::service::ServiceError::internal)?,
            features: features.iter().filter_map(|f| f.parse().ok()).collect(),
            credential,
        })
    }
}

/// What authenticated the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credential {
    /// An API key (`vk_…`) and its monthly ceiling of generated audio in whole minutes.
    ApiKey {
        key_id: String,
        ceiling_minutes: Option<i32>,
    },
    /// An OAuth access token (`vat_…`) of this authorization (one consent: the token family)
    /// given to this client.
    OAuth {
        authorization_id: String,
        client_id: String,
    },
    /// The developer console's signed-in session (its playground): the account's owner, with
    /// every scope; `rate_key` is what its requests count against (`console:<account id>`);
    /// `free_allowance_ms` the app's free allowance, for an account without a plan.
    Console {
        rate_key: String,
        free_allowance_ms: i64,
        free_transcription_ms: i64,
    },
}

/// The app's free use of an account without a plan, per calendar month (UTC):
/// `app_free_minutes` of generated speech and `app_free_transcription_minutes` of transcribed
/// audio, in the console's playground only.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeAllowance {
    pub speech_minutes: u32,
    pub transcription_minutes: u32,
}

impl Principal {
    /// The API key, when a key authenticated the request (generations and captures record it).
    pub fn api_key_id(&self) -> Option<&str> {
        match &self.credential {
            Credential::ApiKey { key_id, .. } => Some(key_id),
            Credential::OAuth { .. } | Credential::Console { .. } => None,
        }
    }

    /// The key's spend ceiling; tokens have none (the plan allowance still applies).
    pub fn ceiling_minutes(&self) -> Option<i32> {
        match &self.credential {
            Credential::ApiKey {
                ceiling_minutes, ..
            } => *ceiling_minutes,
            Credential::OAuth { .. } | Credential::Console { .. } => None,
        }
    }

    /// What request rate limits count against: the key, or the authorization for tokens (so
    /// that refreshing a token does not reset them).
    pub fn rate_limit_key(&self) -> &str {
        match &self.credential {
            Credential::ApiKey { key_id, .. } => key_id,
            Credential::OAuth {
                authorization_id, ..
            } => authorization_id,
            Credential::Console { rate_key, .. } => rate_key,
        }
    }

    /// The principal of the console's signed-in owner of `account_id`: every scope, the
    /// account's plan and features, no key (so no key ceiling). An account without a plan may
    /// speak and transcribe here within `free_minutes` a month (the app's free allowance; 0:
    /// not at all), and nowhere else.
    pub fn console(
        account_id: &str,
        plan: &str,
        features: &[String],
        free: FreeAllowance,
    ) -> Result<Principal, crate::service::ServiceError> {
        let free_minutes = free.speech_minutes;
        let mut principal = Principal::from_row(
            account_id,
            &Scope::ALL.map(|s| s.as_str().to_owned()),
            plan,
            features,
            Credential::Console {
                rate_key: format!("console:{account_id}"),
                free_allowance_ms: i64::from(free_minutes) * 60_000,
                free_transcription_ms: i64::from(free.transcription_minutes) * 60_000,
            },
        )?;
        if !principal.plan.allows_api() && free_minutes > 0 {
            principal.features = vec![Feature::Speech, Feature::Transcription];
        }
        Ok(principal)
    }

    /// Milliseconds of generated audio the account may make this month: the plan's allowance,
    /// or in the console the app's free allowance of an account without a plan.
    pub fn monthly_allowance_ms(&self) -> i64 {
        match &self.credential {
            Credential::Console {
                free_allowance_ms, ..
            } if !self.plan.allows_api() => *free_allowance_ms,
            _ => self.plan.monthly_allowance_secs() * 1000,
        }
    }

    /// Milliseconds of audio the app's free use may transcribe this month (0 for everyone else).
    pub fn free_transcription_ms(&self) -> i64 {
        match &self.credential {
            Credential::Console {
                free_transcription_ms,
                ..
            } if self.on_free_allowance() => *free_transcription_ms,
            _ => 0,
        }
    }

    /// Whether this is the console's free use by an account without a plan.
    pub fn on_free_allowance(&self) -> bool {
        matches!(
            &self.credential,
            Credential::Console { free_allowance_ms, .. } if !self.plan.allows_api() && *free_allowance_ms > 0
        )
    }

    pub fn is_oauth(&self) -> bool {
        matches!(self.credential, Credential::OAuth { .. })
    }
}

/// What an operation needs beyond a valid credential.
#[derive(Debug, Clone, Copy)]
pub struct Requirement {
    pub scope: Scope,
    pub feature: Option<Feature>,
}

impl Requirement {
    pub const fn read() -> Self {
        Self {
            scope: Scope::VoiceRead,
            feature: None,
        }
    }

    /// A scope and no plan feature.
    pub const fn scope(scope: Scope) -> Self {
        Self {
            scope,
            feature: None,
        }
    }

    pub const fn generate(feature: Feature) -> Self {
        Self {
            scope: Scope::VoiceGenerate,
            feature: Some(feature),
        }
    }
}

/// The plan rule: what needs a paid plan (`pro` or `trial`) refuses an account without one
/// with 403 `pro_plan_required`. The API's requirement ([`Principal::authorize`]) and the
/// operations of an account's owner that need a plan (webhook endpoints) apply this one.
pub fn require_paid_plan(plan: Plan) -> Result<(), ServiceError> {
    if plan.allows_api() {
        Ok(())
    } else {
        Err(ServiceError::pro_plan_required())
    }
}

impl Principal {
    /// Plan, then scope, then feature (docs/api.md, "Order of checks").
    ///
    /// The plan rule governs the API's credentials (keys, OAuth tokens). The console's owner
    /// reaches the account's own data on any plan (reads, deletions, cancelling, pronunciation
    /// rules: requirements without a feature); what generates needs the plan or, in the
    /// console, the app's free allowance.
    pub fn authorize(&self, requirement: Requirement) -> Result<(), ServiceError> {
        let owner_on_any_plan =
            matches!(self.credential, Credential::Console { .. }) && requirement.feature.is_none();
        if !self.on_free_allowance() && !owner_on_any_plan {
            require_paid_plan(self.plan)?;
        }
        if !self.scopes.contains(&requirement.scope) {
            return Err(ServiceError::insufficient_scope(requirement.scope));
        }
        if let Some(feature) = requirement.feature
            && !self.features.contains(&feature)
        {
            return Err(ServiceError::feature_not_enabled(feature));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::service::error::{ErrorCode, SettingsPage};

    #[test]
    fn the_console_gives_an_account_without_a_plan_its_free_minutes_only_there() {
        let free = Principal::console("acct_1", "none", &[], allowance(10)).unwrap();
        assert!(free.on_free_allowance());
        assert!(
            free.authorize(Requirement::generate(Feature::Speech))
                .is_ok()
        );
        assert!(
            free.authorize(Requirement::generate(Feature::Transcription))
                .is_ok()
        );
        assert_eq!(free.monthly_allowance_ms(), 600_000);
        assert_eq!(free.free_transcription_ms(), 1_800_000);
        assert_eq!(free.api_key_id(), None);
        assert_eq!(free.rate_limit_key(), "console:acct_1");
        let off = Principal::console("acct_1", "none", &[], allowance(0)).unwrap();
        let refused = off
            .authorize(Requirement::generate(Feature::Speech))
            .unwrap_err();
        assert_eq!(refused.code, ErrorCode::ProPlanRequired);
        // A plan's own allowance wins in the console too.
        let pro = Principal::console("acct_1", "pro", &["speech".into()], allowance(10)).unwrap();
        assert!(!pro.on_free_allowance());
        assert_eq!(
            pro.monthly_allowance_ms(),
            Plan::Pro.monthly_allowance_secs() * 1000
        );
    }

    fn allowance(speech_minutes: u32) -> FreeAllowance {
        FreeAllowance {
            speech_minutes,
            transcription_minutes: 30,
        }
    }

    fn principal(plan: Plan, scopes: Vec<Scope>, features: Vec<Feature>) -> Principal {
        Principal {
            account_id: "acct_1".into(),
            scopes,
            plan,
            features,
            credential: Credential::ApiKey {
                key_id: "key_1".into(),
                ceiling_minutes: None,
            },
        }
    }

    #[test]
    fn plan_then_scope_then_feature() {
        let none = principal(Plan::None, vec![], vec![]);
        let err = none.authorize(Requirement::read()).unwrap_err();
        assert_eq!(err.code, ErrorCode::ProPlanRequired);
        assert_eq!(err.settings, Some(SettingsPage::Billing));

        let reader = principal(Plan::Pro, vec![Scope::VoiceRead], vec![Feature::Speech]);
        assert!(reader.authorize(Requirement::read()).is_ok());
        let err = reader
            .authorize(Requirement::generate(Feature::Speech))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InsufficientScope);
        assert_eq!(err.required_scope, Some(Scope::VoiceGenerate));

        let narrow = principal(Plan::Trial, Scope::ALL.to_vec(), vec![Feature::Speech]);
        assert!(
            narrow
                .authorize(Requirement::generate(Feature::Speech))
                .is_ok()
        );
        let err = narrow
            .authorize(Requirement::generate(Feature::Transcription))
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::FeatureNotEnabled);
    }
}
