//! The one table of what each operation requires of the principal that asks for it: scope,
//! plan feature, and the plan rule ([`Principal::authorize`]). The REST route layer, the MCP
//! gate and the console read it to refuse before a body is read; the operation checks it again
//! itself, so that a door that forgot would still be refused.

use crate::domain::{Feature, Scope};
use crate::service::ServiceError;
use crate::service::principal::{Principal, Requirement};

/// The operations a door performs on an account's behalf with a principal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    ListVoices,
    ListPresets,
    ListCaptures,
    GetCapture,
    GetCaptions,
    GetGeneration,
    ListGenerations,
    GetGenerationCaptions,
    ListPronunciations,
    /// Speech on any door: native, OpenAI's dialect, the console's playground, MCP `speak`.
    CreateSpeech,
    /// Adding a preset voice: `voice:generate` and no feature (it generates nothing).
    CreateVoice,
    CancelGeneration,
    CreatePronunciation,
    DeletePronunciation,
    DeleteCapture,
    DeleteGenerationAudio,
    /// Transcription or translation on any door.
    Transcribe,
}

impl Operation {
    pub const ALL: [Operation; 17] = [
        Operation::ListVoices,
        Operation::ListPresets,
        Operation::ListCaptures,
        Operation::GetCapture,
        Operation::GetCaptions,
        Operation::GetGeneration,
        Operation::ListGenerations,
        Operation::GetGenerationCaptions,
        Operation::ListPronunciations,
        Operation::CreateSpeech,
        Operation::CreateVoice,
        Operation::CancelGeneration,
        Operation::CreatePronunciation,
        Operation::DeletePronunciation,
        Operation::DeleteCapture,
        Operation::DeleteGenerationAudio,
        Operation::Transcribe,
    ];

    /// The table.
    pub const fn requirement(self) -> Requirement {
        match self {
            Operation::ListVoices
            | Operation::ListPresets
            | Operation::ListCaptures
            | Operation::GetCapture
            | Operation::GetCaptions
            | Operation::GetGeneration
            | Operation::ListGenerations
            | Operation::GetGenerationCaptions
            | Operation::ListPronunciations => Requirement::scope(Scope::VoiceRead),
            Operation::CreateSpeech => Requirement::generate(Feature::Speech),
            Operation::Transcribe => Requirement::generate(Feature::Transcription),
            Operation::CreateVoice
            | Operation::CancelGeneration
            | Operation::CreatePronunciation
            | Operation::DeletePronunciation
            | Operation::DeleteCapture
            | Operation::DeleteGenerationAudio => Requirement::scope(Scope::VoiceGenerate),
        }
    }

    /// Refuses `principal` unless it meets this operation's requirement (plan, then scope,
    /// then feature).
    pub fn check(self, principal: &Principal) -> Result<(), ServiceError> {
        principal.authorize(self.requirement())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::domain::Plan;
    use crate::service::ErrorCode;
    use crate::service::principal::{Credential, FreeAllowance};

    fn key(plan: Plan, scopes: &[Scope], features: &[Feature]) -> Principal {
        Principal {
            account_id: "acct_1".into(),
            scopes: scopes.to_vec(),
            plan,
            features: features.to_vec(),
            credential: Credential::ApiKey {
                key_id: "key_1".into(),
                ceiling_minutes: None,
            },
        }
    }

    fn refusal(operation: Operation, principal: &Principal) -> Option<ErrorCode> {
        operation.check(principal).err().map(|e| e.code)
    }

    #[test]
    fn every_operation_needs_a_plan_through_a_key() {
        let free = key(
            Plan::None,
            &Scope::ALL,
            &[Feature::Speech, Feature::Transcription],
        );
        for operation in Operation::ALL {
            assert_eq!(
                refusal(operation, &free),
                Some(ErrorCode::ProPlanRequired),
                "{operation:?}"
            );
        }
    }

    #[test]
    fn reads_need_voice_read_and_writes_voice_generate() {
        let reader = key(Plan::Pro, &[Scope::VoiceRead], &[Feature::Speech]);
        let writer = key(Plan::Pro, &[Scope::VoiceGenerate], &[Feature::Speech]);
        for operation in Operation::ALL {
            let scope = operation.requirement().scope;
            let (allowed, refused) = match scope {
                Scope::VoiceRead => (&reader, &writer),
                _ => (&writer, &reader),
            };
            assert_eq!(
                refusal(operation, refused),
                Some(ErrorCode::InsufficientScope),
                "{operation:?}"
            );
            if operation != Operation::Transcribe {
                assert_eq!(refusal(operation, allowed), None, "{operation:?}");
            }
        }
        assert_eq!(
            refusal(Operation::Transcribe, &writer),
            Some(ErrorCode::FeatureNotEnabled)
        );
    }

    #[test]
    fn the_console_owner_reaches_the_account_on_any_plan_but_generates_only_within_the_free_allowance()
     {
        let spent = FreeAllowance {
            speech_minutes: 0,
            transcription_minutes: 0,
        };
        let owner = Principal::console("acct_1", "none", &[], spent).unwrap();
        for operation in Operation::ALL {
            let expected = match operation {
                Operation::CreateSpeech | Operation::Transcribe => Some(ErrorCode::ProPlanRequired),
                _ => None,
            };
            assert_eq!(refusal(operation, &owner), expected, "{operation:?}");
        }
        let free = FreeAllowance {
            speech_minutes: 10,
            transcription_minutes: 30,
        };
        let owner = Principal::console("acct_1", "none", &[], free).unwrap();
        for operation in Operation::ALL {
            assert_eq!(refusal(operation, &owner), None, "{operation:?}");
        }
    }
}
