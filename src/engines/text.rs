//! The text front-end every speech engine reads through: English [`normalize`]d into words,
//! [`split`] into pieces a model accepts, and [`phonemize`]d by espeak-ng where the engine
//! speaks from phonemes (kokoro, luxtts).

pub mod normalize;
pub(crate) mod phonemize;
pub mod pronounce;
pub(crate) mod split;

pub use self::split::{Boundary, Piece};
