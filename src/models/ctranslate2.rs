//! The CTranslate2 runtime library, taken from the PyPI `ctranslate2` wheel.
//!
//! The wheel's `libctranslate2` carries oneDNN/MKL GEMM kernels (faster-whisper's speed) and
//! links against its own bundled `libgomp`; linking it saves compiling CTranslate2 (11 minutes
//! with `ruy`, 54 with `dnnl`). Its version must equal the CTranslate2 source vendored in the
//! `ct2rs` crate (4.8.4 for ct2rs 0.10.3): the C++ bridge is compiled against those headers.
//! Also compiled into `build.rs` (through `#[path]`), so std-only plus [`super::pypi`].

use std::io;
use std::path::{Path, PathBuf};

use super::pypi::{self, Wheel};

pub const WHEEL: Wheel = Wheel {
    name: "ctranslate2",
    version: "4.8.4",
    file: "ctranslate2-4.8.4-cp311-cp311-manylinux_2_27_x86_64.manylinux_2_28_x86_64.whl",
    sha256: "1037b3f51d18f1546120686670d71fcdaf85a0500fffccc56d8439ded5d284e5",
    pip_args: pypi::CP311_MANYLINUX_2_28,
};

/// The library's file name (and SONAME, which the linked binary asks the loader for).
pub const LIBRARY: &str = "libctranslate2-42c542ff.so.4.8.4";

/// Shared libraries taken from the wheel: the library and the OpenMP runtime it needs.
pub const FILES: [&str; 2] = [LIBRARY, "libgomp-e985bcbb.so.1.0.0"];

/// `<models_dir>/ctranslate2`, where [`fetch`] puts the libraries.
pub fn lib_dir(models_dir: &Path) -> PathBuf {
    models_dir.join("ctranslate2")
}

/// Downloads the wheel (once) and installs its shared libraries under [`lib_dir`], atomically.
/// Idempotent: returns at once when the libraries are already there.
pub fn fetch(models_dir: &Path) -> io::Result<PathBuf> {
    let dest = lib_dir(models_dir);
    if FILES.iter().all(|f| dest.join(f).is_file()) {
        return Ok(dest);
    }
    let wheel = pypi::download(&WHEEL, &models_dir.join(".pip"))?;
    let staging = pypi::staging_dir(&dest)?;
    for file in FILES {
        pypi::extract(
            &wheel,
            &format!("ctranslate2.libs/{file}"),
            &staging.join(file),
        )?;
    }
    pypi::publish_dir(&staging, &dest)?;
    Ok(dest)
}
