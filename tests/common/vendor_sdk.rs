//! A vendor's official Python SDK, pinned in a venv that its `scripts/*-sdk-test.sh` makes, run
//! as the client of a test (the Deepgram, ElevenLabs and Cartesia dialects).

use std::path::PathBuf;
use std::time::Duration;

/// The python of the venv holding a vendor's SDK: `$var`, else `~/.cache/voiced/{venv}/bin/python`.
/// `None` (the test says SKIPPED) when it cannot `import {import}`, unless `$require` is `1`
/// (CI sets it), where that fails the test.
pub fn python(var: &str, venv: &str, import: &str, require: &str) -> Option<PathBuf> {
    let python = std::env::var_os(var).map(PathBuf::from).or_else(|| {
        let home = std::env::var_os("HOME")?;
        Some(
            PathBuf::from(home)
                .join(".cache/voiced")
                .join(venv)
                .join("bin/python"),
        )
    })?;
    let ok = std::process::Command::new(&python)
        .args(["-c", &format!("import {import}")])
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok && std::env::var(require).as_deref() == Ok("1") {
        panic!("{} cannot import {import}", python.display());
    }
    ok.then_some(python)
}

/// Runs `script` (a path under the crate) with `python` and `env`; its standard output, once it
/// has exited 0 within `within` (else the test fails with both outputs).
pub async fn run(python: PathBuf, script: &str, env: &[(&str, &str)], within: Duration) -> String {
    let mut command = tokio::process::Command::new(python);
    command.arg(format!("{}/{script}", env!("CARGO_MANIFEST_DIR")));
    for (name, value) in env {
        command.env(name, value);
    }
    let output = tokio::time::timeout(within, command.output())
        .await
        .expect("the SDK test finishes")
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stdout}\n{stderr}");
    eprintln!("{stdout}");
    stdout
}
