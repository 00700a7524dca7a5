//! Which account runs the cluster. PostgreSQL refuses to run as root, and CI runs as root, so
//! as root the cluster runs as Debian's unprivileged `postgres` account (via util-linux
//! `runuser`, or `setpriv` where `runuser` is missing; both ship in Debian's base system).

use std::ffi::OsStr;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use tokio::process::Command;

use super::EmbeddedError;

/// The account the cluster belongs to.
pub const SERVICE_ACCOUNT: &str = "postgres";

#[derive(Debug, Clone)]
pub(super) enum RunAs {
    /// Not root: initdb/pg_ctl run as ourselves (`uid`).
    Current { uid: u32 },
    /// Root: they run as `account` through `wrapper`.
    Account {
        uid: u32,
        gid: u32,
        wrapper: Wrapper,
    },
}

#[derive(Debug, Clone)]
pub(super) enum Wrapper {
    Runuser(PathBuf),
    Setpriv(PathBuf),
}

impl RunAs {
    pub async fn detect() -> Result<Self, EmbeddedError> {
        let euid = effective_uid().await?;
        if euid != 0 {
            return Ok(Self::Current { uid: euid });
        }
        let (uid, gid) = lookup_account(SERVICE_ACCOUNT).await?.ok_or_else(|| {
            EmbeddedError::Setup(format!(
                "voiced is running as root, and PostgreSQL refuses to run as root: the embedded \
                 cluster runs as the unprivileged `{SERVICE_ACCOUNT}` account, which does not exist \
                 here. Install PostgreSQL with `apt-get install postgresql` (it creates the account), \
                 or create it (`adduser --system --group {SERVICE_ACCOUNT}`), or run voiced as an \
                 ordinary user, or set VOICED_DATABASE_URL"
            ))
        })?;
        if uid == 0 {
            return Err(EmbeddedError::Setup(format!(
                "the `{SERVICE_ACCOUNT}` account has uid 0; PostgreSQL cannot run as it"
            )));
        }
        let wrapper = find_in(&["runuser"])
            .map(Wrapper::Runuser)
            .or_else(|| find_in(&["setpriv"]).map(Wrapper::Setpriv))
            .ok_or_else(|| {
                EmbeddedError::Setup(
                    "running as root, but neither `runuser` nor `setpriv` (util-linux) was found \
                     to drop privileges for the embedded PostgreSQL cluster"
                        .to_owned(),
                )
            })?;
        Ok(Self::Account { uid, gid, wrapper })
    }

    /// The uid/gid that must own the cluster's directories, or `None` for ourselves.
    pub fn owner(&self) -> Option<(u32, u32)> {
        match self {
            Self::Current { .. } => None,
            Self::Account { uid, gid, .. } => Some((*uid, *gid)),
        }
    }

    /// The uid the server runs as.
    pub fn uid(&self) -> u32 {
        match self {
            Self::Current { uid } | Self::Account { uid, .. } => *uid,
        }
    }

    /// A command that runs `program` as the cluster's account, from `/` (the caller's working
    /// directory may be unreadable to that account, which initdb treats as fatal), without the
    /// libpq/server environment variables that would override our explicit settings.
    pub fn command(&self, program: &Path) -> Command {
        let mut cmd = match self {
            Self::Current { .. } => Command::new(program),
            Self::Account { wrapper, .. } => {
                let mut cmd;
                match wrapper {
                    Wrapper::Runuser(runuser) => {
                        cmd = Command::new(runuser);
                        cmd.args(["-u", SERVICE_ACCOUNT, "--"]);
                    }
                    Wrapper::Setpriv(setpriv) => {
                        cmd = Command::new(setpriv);
                        let (uid, gid) = self.owner().unwrap_or_default();
                        cmd.arg(format!("--reuid={uid}"))
                            .arg(format!("--regid={gid}"))
                            .args(["--init-groups", "--"]);
                    }
                }
                cmd.arg(program);
                cmd
            }
        };
        cmd.current_dir("/");
        for var in [
            "PGDATA",
            "PGHOST",
            "PGHOSTADDR",
            "PGPORT",
            "PGUSER",
            "PGDATABASE",
            "PGOPTIONS",
            "PGSERVICE",
            "PGPASSFILE",
        ] {
            cmd.env_remove(var);
        }
        cmd
    }

    /// Whether the cluster's account can walk from `/` down to `dir` (every component searchable).
    /// Supplementary groups are ignored, so this may answer "no" where the kernel would allow it.
    pub fn can_reach(&self, dir: &Path) -> bool {
        let Some((uid, gid)) = self.owner() else {
            return true;
        };
        dir.ancestors()
            .all(|component| match std::fs::metadata(component) {
                Ok(meta) => {
                    let bit = if meta.uid() == uid {
                        0o100
                    } else if meta.gid() == gid {
                        0o010
                    } else {
                        0o001
                    };
                    meta.mode() & bit != 0
                }
                Err(_) => false,
            })
    }
}

/// The effective uid: `/proc/self/status` on Linux, `id -u` elsewhere (no `unsafe` libc call).
async fn effective_uid() -> Result<u32, EmbeddedError> {
    if let Ok(status) = tokio::fs::read_to_string("/proc/self/status").await {
        // "Uid:\t<real>\t<effective>\t<saved>\t<fs>"
        if let Some(euid) = status
            .lines()
            .find_map(|line| line.strip_prefix("Uid:"))
            .and_then(|ids| ids.split_whitespace().nth(1))
            .and_then(|euid| euid.parse().ok())
        {
            return Ok(euid);
        }
    }
    let out = Command::new("id")
        .arg("-u")
        .output()
        .await
        .map_err(|err| EmbeddedError::io("running `id -u`", err))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|_| EmbeddedError::Setup("cannot tell the effective user id (`id -u`)".into()))
}

/// uid and gid of `name` from `getent passwd` (so NSS sources other than /etc/passwd count).
async fn lookup_account(name: &str) -> Result<Option<(u32, u32)>, EmbeddedError> {
    let out = Command::new("getent")
        .args([OsStr::new("passwd"), OsStr::new(name)])
        .output()
        .await
        .map_err(|err| EmbeddedError::io("running `getent passwd`", err))?;
    if !out.status.success() {
        return Ok(None);
    }
    Ok(parse_passwd_line(&String::from_utf8_lossy(&out.stdout)))
}

fn parse_passwd_line(line: &str) -> Option<(u32, u32)> {
    let mut fields = line.trim().split(':').skip(2);
    let uid = fields.next()?.parse().ok()?;
    let gid = fields.next()?.parse().ok()?;
    Some((uid, gid))
}

/// `runuser` lives in /usr/sbin, which is not always on a root shell's PATH.
fn find_in(names: &[&str]) -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let dirs = std::env::split_paths(&path)
        .chain(["/usr/sbin", "/sbin", "/usr/bin", "/bin"].map(PathBuf::from));
    dirs.flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
}

#[cfg(test)]
mod tests {
    use super::parse_passwd_line;

    #[test]
    fn parses_getent_output() {
        assert_eq!(
            parse_passwd_line(
                "postgres:x:101:104:PostgreSQL administrator,,,:/var/lib/postgresql:/bin/bash\n"
            ),
            Some((101, 104))
        );
        assert_eq!(parse_passwd_line("broken"), None);
    }
}
