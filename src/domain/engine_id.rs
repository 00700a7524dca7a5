use std::fmt;
use std::str::FromStr;

/// Engine ids of spec §2. Every id is known; whether one is installed is the engine registry's
/// business (a voice on an engine that is not installed fails its generations, DECISIONS).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EngineId {
    Qwen,
    QwenCustomVoice,
    Luxtts,
    Chatterbox,
    ChatterboxTurbo,
    Tada,
    Kokoro,
}

impl EngineId {
    pub const ALL: [EngineId; 7] = [
        EngineId::Qwen,
        EngineId::QwenCustomVoice,
        EngineId::Luxtts,
        EngineId::Chatterbox,
        EngineId::ChatterboxTurbo,
        EngineId::Tada,
        EngineId::Kokoro,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            EngineId::Qwen => "qwen",
            EngineId::QwenCustomVoice => "qwen_custom_voice",
            EngineId::Luxtts => "luxtts",
            EngineId::Chatterbox => "chatterbox",
            EngineId::ChatterboxTurbo => "chatterbox_turbo",
            EngineId::Tada => "tada",
            EngineId::Kokoro => "kokoro",
        }
    }

    /// Estimated audio for `text`, in milliseconds: what admission reserves against the
    /// allowance and the key's ceiling until the generation's measured duration replaces it.
    /// Linear in the characters, calibrated per engine from measured generations (see
    /// docs/api.md, "Reservations"); engines not calibrated yet use Kokoro's rate.
    pub fn estimated_audio_ms(self, text: &str) -> i64 {
        let chars = text.trim().chars().count() as i64;
        let (base_ms, per_char_ms) = match self {
            EngineId::Kokoro => KOKORO_ESTIMATE,
            // Not measured yet (no weights on this deployment): Kokoro's speaking rate.
            EngineId::Qwen
            | EngineId::QwenCustomVoice
            | EngineId::Luxtts
            | EngineId::Chatterbox
            | EngineId::ChatterboxTurbo
            | EngineId::Tada => KOKORO_ESTIMATE,
        };
        base_ms + per_char_ms * chars
    }

    /// Engines that make a voice from reference audio (their [`crate::engines::Engine`]
    /// implements `reference_rate` and `voice_print`); `qwen_custom_voice` and `kokoro` only
    /// have presets, and `tada` exists on no deployment.
    pub fn can_clone(self) -> bool {
        matches!(
            self,
            EngineId::Qwen | EngineId::Luxtts | EngineId::Chatterbox | EngineId::ChatterboxTurbo
        )
    }

    /// Only the chatterbox engines take a temperature (spec §2).
    pub fn accepts_temperature(self) -> bool {
        matches!(self, EngineId::Chatterbox | EngineId::ChatterboxTurbo)
    }
}

/// (fixed ms, ms per character): the least-squares fit of 16 Kokoro v1.0 generations of 6 to 304
/// characters (`cargo run --example calibrate_estimate`: 607 + 73.8 × chars, 2026-11-23).
const KOKORO_ESTIMATE: (i64, i64) = (600, 74);

impl FromStr for EngineId {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        EngineId::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                let known: Vec<&str> = EngineId::ALL.iter().map(|e| e.as_str()).collect();
                format!("unknown engine {s:?} (known: {})", known.join(", "))
            })
    }
}

impl fmt::Display for EngineId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
