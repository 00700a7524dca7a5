//! The one sha256 of a file. Also compiled into `build.rs` through `models/pypi.rs` (`#[path]`),
//! so it uses only std and `sha2`.

use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Lower-case hex SHA-256 of a file's contents, read in 1 MiB blocks.
pub fn sha256(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect())
}
