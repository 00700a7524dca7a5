//! Subprocess, blocking-task and lock helpers for the embedded cluster.

use std::io;
use std::path::Path;

use super::EmbeddedError;
use super::layout::Layout;

#[derive(Debug, PartialEq, Eq)]
pub(super) enum PidState {
    Alive,
    Zombie,
    Gone,
}

/// From /proc; where there is none, every pid counts as alive (the cautious answer).
pub(super) fn pid_state(pid: u32) -> PidState {
    if !Path::new("/proc/self").exists() {
        return PidState::Alive;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/status")) {
        Ok(status) if status.lines().any(|l| l.starts_with("State:\tZ")) => PidState::Zombie,
        Ok(_) => PidState::Alive,
        Err(err) if err.kind() == io::ErrorKind::NotFound => PidState::Gone,
        Err(_) => PidState::Alive,
    }
}

/// Holds `<data_dir>/pg.lock` exclusively until dropped.
pub(super) async fn lock(layout: &Layout) -> Result<std::fs::File, EmbeddedError> {
    let path = layout.lock.clone();
    blocking(move || {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|err| EmbeddedError::io(format!("opening {}", path.display()), err))?;
        file.lock()
            .map_err(|err| EmbeddedError::io(format!("locking {}", path.display()), err))?;
        Ok(file)
    })
    .await
}

pub(super) async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, EmbeddedError> + Send + 'static,
) -> Result<T, EmbeddedError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|err| EmbeddedError::Setup(format!("a blocking task failed: {err}")))?
}

pub(super) async fn output(
    mut cmd: tokio::process::Command,
    what: &str,
) -> Result<std::process::Output, EmbeddedError> {
    cmd.stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|err| EmbeddedError::io(format!("running {what}"), err))
}

pub(super) async fn run(cmd: tokio::process::Command, what: &str) -> Result<(), EmbeddedError> {
    let out = output(cmd, what).await?;
    if out.status.success() {
        Ok(())
    } else {
        Err(command_error(what, &out))
    }
}

pub(super) fn command_error(what: &str, out: &std::process::Output) -> EmbeddedError {
    let mut text = String::from_utf8_lossy(&out.stderr).trim().to_owned();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !stdout.trim().is_empty() {
        text = format!("{text}\n{}", stdout.trim());
    }
    EmbeddedError::Command {
        command: what.to_owned(),
        status: out.status.to_string(),
        output: text,
    }
}
