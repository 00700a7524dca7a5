//! The data the core's operations return, as the doors, `http` and the admin CLI name it. The
//! store reads them as plain rows (fields only: no handle, nothing that reaches the database);
//! the core hands those rows out under these names, so that no door names the store
//! (`scripts/check-layers.py`) and a change of storage changes this one file.

pub use crate::engines::Preset;
pub use crate::engines::text::timing::SpokenWord;
pub use crate::store::accounts::{AccountDetail, AccountSummary};
pub use crate::store::blobs::{Blob, BlobHead};
pub use crate::store::captures::{CaptureDetail, CaptureRow};
pub use crate::store::generations::{GenerationRow, ListFilter};
pub use crate::store::keys::KeySummary;
pub use crate::store::oauth::AuthorizationSummary;
pub use crate::store::prints::PrintState;
pub use crate::store::pronunciations::PronunciationRow;
pub use crate::store::usage::DayUsage;
pub use crate::store::voices::VoiceRow;

/// Longest reference recording a clone takes.
pub const MAX_REFERENCE_BYTES: usize = crate::engines::reference::MAX_BYTES;
