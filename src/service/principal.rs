//! Who is calling, as every transport resolves it, and what an operation requires of them.

use super::error::{ErrorCode, ServiceError, SettingsPage};
use crate::domain::{Feature, Plan, Scope};

/// The caller: the key and its account, as of this request.
#[derive(Debug, Clone)]
pub struct Principal {
    pub key_id: String,
    pub account_id: String,
    pub scopes: Vec<Scope>,
    pub plan: Plan,
    pub features: Vec<Feature>,
    /// Monthly ceiling of generated audio for this key, in whole minutes.
    pub ceiling_minutes: Option<i32>,
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

impl Principal {
    /// Plan, then scope, then feature (docs/api.md, "Order of checks").
    pub fn authorize(&self, requirement: Requirement) -> Result<(), ServiceError> {
        if !self.plan.allows_api() {
            return Err(ServiceError::pro_plan_required());
        }
        if !self.scopes.contains(&requirement.scope) {
            return Err(ServiceError::insufficient_scope(requirement.scope));
        }
        if let Some(feature) = requirement.feature
            && !self.features.contains(&feature)
        {
            return Err(ServiceError::new(
                ErrorCode::FeatureNotEnabled,
                format!(
                    "This account's plan does not include {}; upgrading the plan enables it.",
                    feature.as_str()
                ),
            )
            .with_settings(SettingsPage::Billing));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn principal(plan: Plan, scopes: Vec<Scope>, features: Vec<Feature>) -> Principal {
        Principal {
            key_id: "key_1".into(),
            account_id: "acct_1".into(),
            scopes,
            plan,
            features,
            ceiling_minutes: None,
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
