//! Finding the PostgreSQL server binaries (`initdb`, `pg_ctl`, `postgres`, `pg_isready`).

use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::EmbeddedError;

/// Shown to the user verbatim when no usable installation is found.
pub const INSTALL_HINT: &str = "PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found. \
voiced runs a private PostgreSQL cluster when no database URL is configured, and needs them for it. \
Install them with `apt-get install postgresql` (Debian/Ubuntu), \
or set VOICED_PG_BIN to the directory that holds them (e.g. /usr/lib/postgresql/15/bin), \
or set VOICED_DATABASE_URL to use an existing PostgreSQL server.";

const REQUIRED: [&str; 4] = ["initdb", "pg_ctl", "postgres", "pg_isready"];

/// A directory holding the server binaries, and their major version.
#[derive(Debug, Clone)]
pub(super) struct PgBin {
    pub dir: PathBuf,
    pub major: u32,
}

impl PgBin {
    pub fn tool(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

/// Where the binaries come from, in order: `explicit` (the config's `pg_bin`), `VOICED_PG_BIN`,
/// `pg_config --bindir`, the highest `/usr/lib/postgresql/*/bin`, `PATH`.
///
/// An explicit directory that is unusable is an error rather than a silent fallback: the user
/// asked for it. When an existing cluster was made by another major version and no directory was
/// named, the matching `/usr/lib/postgresql/<major>/bin` is preferred, since a server cannot open
/// another major version's data files.
pub(super) async fn find(
    explicit: Option<&Path>,
    cluster_major: Option<u32>,
) -> Result<PgBin, EmbeddedError> {
    let named = explicit.map(Path::to_path_buf).or_else(|| {
        std::env::var_os("VOICED_PG_BIN")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    if let Some(dir) = named {
        if !has_tools(&dir) {
            return Err(EmbeddedError::NotInstalled(format!(
                "VOICED_PG_BIN={} does not contain {}. {INSTALL_HINT}",
                dir.display(),
                REQUIRED.join(", ")
            )));
        }
        return with_version(dir, cluster_major, false).await;
    }

    let mut candidates = Vec::new();
    if let Some(dir) = pg_config_bindir().await {
        candidates.push(dir);
    }
    candidates.extend(debian_bindirs().into_iter().map(|(_, dir)| dir));
    if let Some(path) = std::env::var_os("PATH") {
        candidates.extend(std::env::split_paths(&path));
    }
    match candidates.into_iter().find(|dir| has_tools(dir)) {
        Some(dir) => with_version(dir, cluster_major, true).await,
        None => Err(EmbeddedError::NotInstalled(INSTALL_HINT.to_owned())),
    }
}

async fn with_version(
    dir: PathBuf,
    cluster_major: Option<u32>,
    may_switch: bool,
) -> Result<PgBin, EmbeddedError> {
    let major = major_version(&dir).await?;
    let Some(want) = cluster_major.filter(|want| *want != major) else {
        return Ok(PgBin { dir, major });
    };
    if may_switch && let Some((_, dir)) = debian_bindirs().into_iter().find(|(m, _)| *m == want) {
        return Ok(PgBin { dir, major: want });
    }
    Err(EmbeddedError::Setup(format!(
        "the embedded cluster was created by PostgreSQL {want}, but the binaries in {} are \
         PostgreSQL {major}; install PostgreSQL {want} (apt-get install postgresql-{want}) and/or \
         set VOICED_PG_BIN to its bin directory, or upgrade the cluster with pg_upgrade",
        dir.display()
    )))
}

fn has_tools(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    REQUIRED.iter().all(|tool| {
        std::fs::metadata(dir.join(tool))
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    })
}

async fn pg_config_bindir() -> Option<PathBuf> {
    let out = Command::new("pg_config")
        .arg("--bindir")
        .output()
        .await
        .ok()?;
    let dir = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !dir.trim().is_empty()).then(|| PathBuf::from(dir.trim()))
}

/// `/usr/lib/postgresql/<major>/bin`, highest major first.
fn debian_bindirs() -> Vec<(u32, PathBuf)> {
    let mut found: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let major = entry.file_name().to_str()?.parse().ok()?;
            let dir = entry.path().join("bin");
            has_tools(&dir).then_some((major, dir))
        })
        .collect();
    found.sort_by_key(|(major, _)| std::cmp::Reverse(*major));
    found
}

/// `pg_ctl (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)` → 15.
async fn major_version(dir: &Path) -> Result<u32, EmbeddedError> {
    let pg_ctl = dir.join("pg_ctl");
    let out = Command::new(&pg_ctl)
        .arg("--version")
        .output()
        .await
        .map_err(|err| EmbeddedError::io(format!("running {}", pg_ctl.display()), err))?;
    let text = String::from_utf8_lossy(&out.stdout);
    parse_major(&text).ok_or_else(|| {
        EmbeddedError::Setup(format!(
            "cannot tell the PostgreSQL version from `{} --version`: {:?}",
            pg_ctl.display(),
            text.trim()
        ))
    })
}

pub(super) fn parse_major(version_output: &str) -> Option<u32> {
    let rest = version_output.split(')').nth(1)?.trim_start();
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::parse_major;

    #[test]
    fn parses_major_versions() {
        assert_eq!(
            parse_major("pg_ctl (PostgreSQL) 15.14 (Debian 15.14-0+deb12u1)\n"),
            Some(15)
        );
        assert_eq!(parse_major("pg_ctl (PostgreSQL) 17devel\n"), Some(17));
        assert_eq!(parse_major("garbage"), None);
    }
}
