//! The states a generation and a voice profile are stored in, decoded once in the store rows so
//! that nothing above `store/` compares their text.

use std::fmt;
use std::str::FromStr;

/// `generations.status` (migration 0001's CHECK): a generation is made `generating` and ends
/// `completed` (audio stored, charged) or `failed` (nothing charged; a cancelled one is a
/// failed one with a cancel reason, see `store::generations`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GenerationStatus {
    Generating,
    Completed,
    Failed,
}

/// A generating generation's progress: 0 while queued, else the audio rendered over the audio
/// estimated at admission, kept below 1 (an estimate that was short must not show "done" before
/// the generation is). Rounded to three decimals.
pub fn progress(queued: bool, rendered_ms: i64, estimated_ms: i64) -> f64 {
    if queued || estimated_ms <= 0 || rendered_ms <= 0 {
        return 0.0;
    }
    let ratio = (rendered_ms as f64 / estimated_ms as f64).min(0.99);
    (ratio * 1000.0).round() / 1000.0
}

impl GenerationStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            GenerationStatus::Generating => "generating",
            GenerationStatus::Completed => "completed",
            GenerationStatus::Failed => "failed",
        }
    }

    /// Completed or failed: nothing more will happen to it.
    pub fn is_finished(self) -> bool {
        self != GenerationStatus::Generating
    }
}

impl FromStr for GenerationStatus {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "generating" => Ok(GenerationStatus::Generating),
            "completed" => Ok(GenerationStatus::Completed),
            "failed" => Ok(GenerationStatus::Failed),
            other => Err(format!("unknown generation status {other:?}")),
        }
    }
}

impl fmt::Display for GenerationStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `voice_profiles.voice_type` (migration 0001's CHECK): an engine's preset, or a voice cloned
/// from reference audio (it carries a voice print).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VoiceKind {
    Preset,
    Cloned,
}

impl VoiceKind {
    pub fn as_str(self) -> &'static str {
        match self {
            VoiceKind::Preset => "preset",
            VoiceKind::Cloned => "cloned",
        }
    }
}

impl FromStr for VoiceKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "preset" => Ok(VoiceKind::Preset),
            "cloned" => Ok(VoiceKind::Cloned),
            other => Err(format!("unknown voice type {other:?}")),
        }
    }
}

impl fmt::Display for VoiceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why a generation was cancelled: its synchronous caller went away or gave up. Stored in
/// `generations.cancel_reason` where the cancellation happens (`store::queue::cancel`); a
/// cancelled generation is a failed one whose `error` is this text (spec: `error` starts with
/// `cancelled:`), and "was it cancelled" is read from that column, never from the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    /// The client disconnected.
    Disconnected,
    /// The request ran past the server's time limit.
    TimeLimit,
    /// The server shut down.
    Shutdown,
    /// The account asked for it (`POST /v1/generations/{id}/cancel`, MCP `cancel_generation`).
    Request,
    /// The account deleted the voice (console) before the generation finished.
    VoiceDeleted,
    /// The account was deleted.
    AccountDeleted,
}

impl CancelReason {
    /// The generation's `error` once it has failed.
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::Disconnected => "cancelled: the client disconnected",
            CancelReason::TimeLimit => "cancelled: the request ran past the time limit",
            CancelReason::Shutdown => "cancelled: the server shut down",
            CancelReason::Request => "cancelled: by request",
            CancelReason::VoiceDeleted => "cancelled: the voice was deleted",
            CancelReason::AccountDeleted => "cancelled: the account was deleted",
        }
    }
}

impl fmt::Display for CancelReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl serde::Serialize for VoiceKind {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for VoiceKind {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_round_trip() {
        for status in [
            GenerationStatus::Generating,
            GenerationStatus::Completed,
            GenerationStatus::Failed,
        ] {
            assert_eq!(status.as_str().parse::<GenerationStatus>(), Ok(status));
        }
        assert!("cancelled".parse::<GenerationStatus>().is_err());
        for kind in [VoiceKind::Preset, VoiceKind::Cloned] {
            assert_eq!(kind.as_str().parse::<VoiceKind>(), Ok(kind));
        }
        assert!("Preset".parse::<VoiceKind>().is_err());
    }
}

#[cfg(test)]
mod progress_tests {
    use super::progress;

    #[test]
    fn progress_is_rendered_over_estimated_below_one() {
        assert_eq!(progress(true, 5_000, 10_000), 0.0);
        assert_eq!(progress(false, 0, 10_000), 0.0);
        assert_eq!(progress(false, 2_500, 10_000), 0.25);
        assert_eq!(progress(false, 12_000, 10_000), 0.99);
        assert_eq!(progress(false, 1_000, 0), 0.0);
        assert_eq!(progress(false, 1, 3), 0.333);
    }
}
