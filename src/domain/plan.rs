use std::fmt;
use std::str::FromStr;

/// Subscription state of an account (DECISIONS: pro and trial are paid-equivalent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    Pro,
    Trial,
    None,
}

impl Plan {
    pub fn as_str(self) -> &'static str {
        match self {
            Plan::Pro => "pro",
            Plan::Trial => "trial",
            Plan::None => "none",
        }
    }

    /// Whether the API may be used at all (spec §5.6).
    pub fn allows_api(self) -> bool {
        !matches!(self, Plan::None)
    }

    /// Generated audio included per calendar month (UTC), in seconds.
    pub fn monthly_allowance_secs(self) -> i64 {
        match self {
            Plan::Pro | Plan::Trial => 120 * 60,
            Plan::None => 0,
        }
    }

    /// The capabilities a new account on this plan gets.
    pub fn default_features(self) -> Vec<Feature> {
        match self {
            Plan::Pro | Plan::Trial => {
                vec![Feature::Speech, Feature::Transcription, Feature::Cloning]
            }
            Plan::None => vec![],
        }
    }
}

impl FromStr for Plan {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pro" => Ok(Plan::Pro),
            "trial" => Ok(Plan::Trial),
            "none" => Ok(Plan::None),
            _ => Err(format!("unknown plan {s:?} (expected pro, trial or none)")),
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A capability a plan may or may not include; a request for one outside the account's set is
/// refused with 403 `feature_not_enabled`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Feature {
    /// `POST /v1/speech` and `POST /v1/audio/speech`.
    Speech,
    /// `POST /v1/transcriptions`.
    Transcription,
    /// Cloned voices (the console's clone form, `voiced admin voice clone`): each costs a
    /// voice-print job on a generation worker, and counts against
    /// `max_cloned_voices_per_account`.
    Cloning,
}

impl Feature {
    pub const ALL: [Feature; 3] = [Feature::Speech, Feature::Transcription, Feature::Cloning];

    pub fn as_str(self) -> &'static str {
        match self {
            Feature::Speech => "speech",
            Feature::Transcription => "transcription",
            Feature::Cloning => "cloning",
        }
    }
}

impl FromStr for Feature {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Feature::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| {
                format!("unknown feature {s:?} (expected speech, transcription or cloning)")
            })
    }
}
