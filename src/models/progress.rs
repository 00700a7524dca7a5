//! What `voiced models fetch` shows while it works: on a terminal, a live line per download
//! (bytes so far and rate) drawn with `indicatif`; otherwise (CI logs, pipes) one plain line per
//! step, so that logs stay readable. Both go to stdout, like the command's answer.

use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use super::pypi::{Progress, Wheel};

pub struct FetchProgress {
    /// Live display on a terminal; `None` prints plain lines.
    bar: Option<Mutex<Option<ProgressBar>>>,
}

impl FetchProgress {
    /// A live display when stdout is a terminal, plain lines otherwise.
    pub fn for_stdout() -> Self {
        Self {
            bar: std::io::stdout().is_terminal().then(|| Mutex::new(None)),
        }
    }

    fn with_bar(&self, f: impl FnOnce(&mut Option<ProgressBar>)) {
        if let Some(bar) = &self.bar {
            f(&mut bar
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner));
        }
    }
}

fn spec(wheel: &Wheel) -> String {
    format!("{}=={}", wheel.name, wheel.version)
}

fn mib(bytes: u64) -> String {
    // Display only.
    #[allow(clippy::cast_precision_loss)]
    let mib = bytes as f64 / (1024.0 * 1024.0);
    format!("{mib:.1} MiB")
}

impl Progress for FetchProgress {
    fn download_started(&self, wheel: &Wheel) {
        if self.bar.is_none() {
            println!("downloading {} (pip) …", spec(wheel));
            return;
        }
        self.with_bar(|slot| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} downloading {msg}  {bytes} ({bytes_per_sec}, {elapsed})",
                )
                .expect("the template is valid"),
            );
            bar.set_message(spec(wheel));
            bar.enable_steady_tick(Duration::from_millis(120));
            *slot = Some(bar);
        });
    }

    fn download_bytes(&self, _wheel: &Wheel, bytes: u64) {
        self.with_bar(|slot| {
            if let Some(bar) = slot {
                bar.set_position(bytes);
            }
        });
    }

    fn wheel_ready(&self, wheel: &Wheel, bytes: u64, downloaded: bool) {
        let how = if downloaded {
            "downloaded"
        } else {
            "already downloaded"
        };
        let line = format!("{}: {}, {how}, sha256 verified", spec(wheel), mib(bytes));
        if self.bar.is_none() {
            println!("{line}");
            return;
        }
        self.with_bar(|slot| {
            if let Some(bar) = slot.take() {
                bar.finish_and_clear();
            }
        });
        println!("✓ {line}");
    }

    fn step(&self, message: &str) {
        if self.bar.is_some() {
            println!("  {message}");
        } else {
            println!("{message}");
        }
    }
}
