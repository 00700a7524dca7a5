//! Links the prebuilt `libctranslate2` from the PyPI `ctranslate2` wheel (see
//! `src/models/ctranslate2.rs`), fetching it into the models directory when it is missing.
//!
//! `ct2rs` (feature `system`) asks the linker for `ctranslate2`, `cpu_features` and, through a
//! cfg slip in its build script, the static CUDA libraries `cublas_static`, `cublasLt_static`
//! and `culibos` even without CUDA. The wheel's library contains all of them but the CUDA
//! ones (it loads CUDA at run time), so `ct2-link-stubs/` holds empty archives under those
//! names; `.cargo/config.toml` hands that directory to ct2rs's build script through
//! `CMAKE_LIBRARY_PATH`, which it must see before it runs.
//!
//! At run time the binary finds the library through an rpath: `$ORIGIN`, `$ORIGIN/../lib`
//! (copy the two files from `<models>/ctranslate2/` next to the binary when deploying) and the
//! absolute models directory used for the build.

#[allow(dead_code)]
#[path = "src/models/pypi.rs"]
mod pypi;

#[allow(dead_code)]
#[path = "src/models/ctranslate2.rs"]
mod ctranslate2;

use std::env;
use std::path::PathBuf;

fn models_dir() -> PathBuf {
    if let Some(dir) = env::var_os("VOICED_MODELS_DIR") {
        return PathBuf::from(dir);
    }
    let home = env::var_os("HOME").expect("HOME or VOICED_MODELS_DIR must be set");
    PathBuf::from(home).join(".cache/voiced/models")
}

fn main() {
    println!("cargo:rerun-if-changed=src/models/ctranslate2.rs");
    // `sqlx::migrate!` embeds migrations/ at compile time, and cargo does not know it reads
    // them: without this a new migration is missing from an incremental build.
    println!("cargo:rerun-if-changed=migrations");
    println!("cargo:rerun-if-env-changed=VOICED_CT2_LIB_DIR");
    println!("cargo:rerun-if-env-changed=VOICED_MODELS_DIR");

    let lib_dir = match env::var_os("VOICED_CT2_LIB_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => ctranslate2::fetch(&models_dir())
            .unwrap_or_else(|e| panic!("cannot fetch the CTranslate2 library: {e}")),
    };
    let library = lib_dir.join(ctranslate2::LIBRARY);
    // The library is fetched as a side effect of this script: should it go (a fresh models dir
    // beside a kept target dir, as in a container build with a cached target), run again to
    // fetch it instead of linking a binary that cannot start.
    println!("cargo:rerun-if-changed={}", library.display());
    assert!(
        library.is_file(),
        "{} is missing (VOICED_CT2_LIB_DIR)",
        library.display()
    );

    // `-lctranslate2` wants `libctranslate2.so`; the wheel names it after its SONAME.
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("OUT_DIR"));
    let link = out.join("libctranslate2.so");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&library, &link).expect("symlink libctranslate2.so");

    println!("cargo:rustc-link-search=native={}", out.display());
    println!(
        "cargo:rustc-link-arg=-Wl,-rpath,$ORIGIN:$ORIGIN/../lib:{}",
        lib_dir.display()
    );
}
