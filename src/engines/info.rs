//! What each engine can do, stated once, by the engine's own module (`INFO`; qwen's per
//! variant): the registry and [`EngineId`]'s capability methods read it from here.

use crate::domain::EngineId;
use crate::engines::{chatterbox, chatterbox_turbo, kokoro, luxtts, qwen};

/// One engine's capabilities.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EngineInfo {
    pub id: EngineId,
    /// Makes a voice from reference audio: its [`crate::engines::Engine`] implements
    /// `reference_rate` and `voice_print`.
    pub can_clone: bool,
    /// Reads [`crate::engines::SynthesisInput::temperature`] (spec §2: the chatterbox engines).
    pub accepts_temperature: bool,
    /// Can exist on a deployment at all (tada has no ONNX export, docs/engines.md).
    pub available: bool,
    /// Its folder under the models dir.
    pub dir: &'static str,
}

/// tada: an engine id of the spec with no engine behind it.
pub const TADA: EngineInfo = EngineInfo {
    id: EngineId::Tada,
    can_clone: false,
    accepts_temperature: false,
    available: false,
    dir: "tada",
};

/// The capabilities of `engine`.
pub fn info(engine: EngineId) -> &'static EngineInfo {
    match engine {
        EngineId::Qwen => &qwen::INFO_BASE,
        EngineId::QwenCustomVoice => &qwen::INFO_CUSTOM_VOICE,
        EngineId::Luxtts => &luxtts::INFO,
        EngineId::Chatterbox => &chatterbox::INFO,
        EngineId::ChatterboxTurbo => &chatterbox_turbo::INFO,
        EngineId::Tada => &TADA,
        EngineId::Kokoro => &kokoro::INFO,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_id_has_its_own_info_with_the_spec_capabilities() {
        for id in EngineId::ALL {
            let info = info(id);
            assert_eq!(info.id, id);
            assert_eq!(info.dir, id.as_str());
        }
        let cloning: Vec<EngineId> = EngineId::ALL
            .into_iter()
            .filter(|e| e.can_clone())
            .collect();
        assert_eq!(
            cloning,
            [
                EngineId::Qwen,
                EngineId::Luxtts,
                EngineId::Chatterbox,
                EngineId::ChatterboxTurbo
            ]
        );
        let temperature: Vec<EngineId> = EngineId::ALL
            .into_iter()
            .filter(|e| e.accepts_temperature())
            .collect();
        assert_eq!(
            temperature,
            [EngineId::Chatterbox, EngineId::ChatterboxTurbo]
        );
        let unavailable: Vec<EngineId> = EngineId::ALL
            .into_iter()
            .filter(|e| !info(*e).available)
            .collect();
        assert_eq!(unavailable, [EngineId::Tada]);
    }
}
