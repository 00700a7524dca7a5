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

    /// Engines that make a voice from reference audio, as each engine states it
    /// ([`crate::engines::EngineInfo::can_clone`]); `qwen_custom_voice` and `kokoro` only have
    /// presets, and `tada` exists on no deployment.
    pub fn can_clone(self) -> bool {
        crate::engines::info(self).can_clone
    }

    /// Whether the engine takes a temperature, as it states it (spec §2: only the chatterbox
    /// engines).
    pub fn accepts_temperature(self) -> bool {
        crate::engines::info(self).accepts_temperature
    }
}

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
