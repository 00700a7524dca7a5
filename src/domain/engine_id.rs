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

    /// What the engine can do: the one statement of its capabilities, which the engine
    /// itself (its `reference_rate`), the engine registry and the two methods below read.
    pub const fn info(self) -> &'static EngineInfo {
        match self {
            EngineId::Qwen => &EngineInfo {
                id: EngineId::Qwen,
                can_clone: true,
                accepts_temperature: false,
                phonemizes: false,
                available: true,
            },
            EngineId::QwenCustomVoice => &EngineInfo {
                id: EngineId::QwenCustomVoice,
                can_clone: false,
                accepts_temperature: false,
                phonemizes: false,
                available: true,
            },
            EngineId::Luxtts => &EngineInfo {
                id: EngineId::Luxtts,
                can_clone: true,
                accepts_temperature: false,
                phonemizes: true,
                available: true,
            },
            EngineId::Chatterbox => &EngineInfo {
                id: EngineId::Chatterbox,
                can_clone: true,
                accepts_temperature: true,
                phonemizes: false,
                available: true,
            },
            EngineId::ChatterboxTurbo => &EngineInfo {
                id: EngineId::ChatterboxTurbo,
                can_clone: true,
                accepts_temperature: true,
                phonemizes: false,
                available: true,
            },
            EngineId::Tada => &EngineInfo {
                id: EngineId::Tada,
                can_clone: false,
                accepts_temperature: false,
                phonemizes: false,
                available: false,
            },
            EngineId::Kokoro => &EngineInfo {
                id: EngineId::Kokoro,
                can_clone: false,
                accepts_temperature: false,
                phonemizes: true,
                available: true,
            },
        }
    }

    /// Engines that make a voice from reference audio ([`EngineInfo::can_clone`]);
    /// `qwen_custom_voice` and `kokoro` only have presets, and `tada` exists on no deployment.
    pub fn can_clone(self) -> bool {
        self.info().can_clone
    }

    /// Only Kokoro reports when each word is said (its graph outputs the predicted durations);
    /// LuxTTS phonemizes but has no durations, and forced alignment is not built.
    pub fn reports_word_timings(self) -> bool {
        self == EngineId::Kokoro
    }

    /// Kokoro and LuxTTS speak from phonemes ([`EngineInfo::phonemizes`]).
    pub fn phonemizes(self) -> bool {
        self.info().phonemizes
    }

    /// Only the chatterbox engines take a temperature (spec §2).
    pub fn accepts_temperature(self) -> bool {
        self.info().accepts_temperature
    }
}

/// One engine's capabilities ([`EngineId::info`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineInfo {
    pub id: EngineId,
    /// Makes a voice from reference audio: the engine implements `reference_rate` and
    /// `voice_print` (it answers `reference_rate` from this).
    pub can_clone: bool,
    /// Reads the synthesis input's temperature (spec §2: the chatterbox engines).
    pub accepts_temperature: bool,
    /// Can exist on a deployment at all (tada has no ONNX export, docs/engines.md).
    pub available: bool,
    /// Speaks from phonemes (espeak-ng's), so a pronunciation given as IPA reaches it; the other
    /// engines read letters and say an IPA rule's word as written (docs/speech-text.md).
    pub phonemizes: bool,
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

impl serde::Serialize for EngineId {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> serde::Deserialize<'de> for EngineId {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kokoro_reports_word_timings_though_luxtts_phonemizes_too() {
        let timed: Vec<EngineId> = EngineId::ALL
            .into_iter()
            .filter(|e| e.reports_word_timings())
            .collect();
        assert_eq!(timed, [EngineId::Kokoro]);
        assert!(EngineId::Luxtts.phonemizes());
    }

    #[test]
    fn every_id_has_its_own_info_with_the_spec_capabilities() {
        let having = |f: fn(&EngineInfo) -> bool| -> Vec<EngineId> {
            EngineId::ALL.into_iter().filter(|e| f(e.info())).collect()
        };
        assert!(EngineId::ALL.into_iter().all(|e| e.info().id == e));
        assert_eq!(
            having(|i| i.can_clone),
            [
                EngineId::Qwen,
                EngineId::Luxtts,
                EngineId::Chatterbox,
                EngineId::ChatterboxTurbo
            ]
        );
        assert_eq!(
            having(|i| i.accepts_temperature),
            [EngineId::Chatterbox, EngineId::ChatterboxTurbo]
        );
        assert_eq!(having(|i| !i.available), [EngineId::Tada]);
        assert!(EngineId::Chatterbox.can_clone() && EngineId::Chatterbox.accepts_temperature());
        assert!(!EngineId::Kokoro.can_clone() && !EngineId::Qwen.accepts_temperature());
    }
}
