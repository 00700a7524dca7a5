//! Where the cluster's files go, and making those directories with the right owner and mode.
//!
//! Normally, under the data dir `D`:
//! - `D/pg/`: the cluster (PGDATA), with the server log in `D/pg/server.log`;
//! - `D/pg-socket/`: the Unix socket directory (0700); the server has no TCP listener;
//! - `D/pg.lock`: serialises initdb/start/stop between processes.
//!
//! Two exceptions, both logged (INFO) when the cluster is first created and visible through
//! [`super::EmbeddedPostgres`]:
//! - the socket path would pass the ~107-byte Unix socket limit (or holds characters other than
//!   `[A-Za-z0-9/._-]`): the socket goes to `/tmp/voiced-pg-<hash>/` (0700) instead;
//! - running as root, and the `postgres` account cannot walk down to `D` (e.g. `D` under `/root`,
//!   which is 0700): `pg/` and `pg-socket/` go to `/var/lib/voiced/pg-<hash>/`, and the file
//!   `D/pg.location` names that place, so later runs (and people) find it.

use std::fs::{self, DirBuilder};
use std::io;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use super::EmbeddedError;
use super::run_as::RunAs;

/// The server's port; it only names the socket file (`.s.PGSQL.5432`), as there is no TCP.
pub const PORT: u16 = 5432;
const SOCKET_FILE: &str = ".s.PGSQL.5432";
/// `sun_path` is 108 bytes including the terminating NUL.
const MAX_SOCKET_PATH: usize = 107;
const RELOCATION_ROOT: &str = "/var/lib/voiced";
const LOCATION_NOTE: &str = "pg.location";

#[derive(Debug, Clone)]
pub(super) struct Layout {
    pub data_dir: PathBuf,
    /// Holds `pg/`, `pg-socket/`, and `pg.initdb-tmp/` while initdb runs.
    pub base: PathBuf,
    pub pgdata: PathBuf,
    pub initdb_tmp: PathBuf,
    pub socket_dir: PathBuf,
    pub log: PathBuf,
    pub lock: PathBuf,
    pub relocated: bool,
    pub socket_in_tmp: bool,
}

impl Layout {
    /// Decides the paths; reads metadata and `pg.location` only. `data_dir` must exist.
    pub fn plan(data_dir: &Path, run_as: &RunAs) -> Result<Self, EmbeddedError> {
        let data_dir = fs::canonicalize(data_dir)
            .map_err(|err| EmbeddedError::io(format!("resolving {}", data_dir.display()), err))?;
        let note = data_dir.join(LOCATION_NOTE);
        let (base, relocated) = match fs::read_to_string(&note) {
            Ok(text) if !text.trim().is_empty() => (PathBuf::from(text.trim()), true),
            _ if !data_dir.join("pg").exists() && !run_as.can_reach(&data_dir) => (
                Path::new(RELOCATION_ROOT).join(format!("pg-{}", path_hash(&data_dir))),
                true,
            ),
            _ => (data_dir.clone(), false),
        };
        let pgdata = base.join("pg");
        let mut socket_dir = base.join("pg-socket");
        let socket_in_tmp = !socket_dir_ok(&socket_dir);
        if socket_in_tmp {
            socket_dir = PathBuf::from(format!("/tmp/voiced-pg-{}", path_hash(&pgdata)));
        }
        Ok(Self {
            lock: data_dir.join("pg.lock"),
            log: pgdata.join("server.log"),
            initdb_tmp: base.join("pg.initdb-tmp"),
            data_dir,
            base,
            pgdata,
            socket_dir,
            relocated,
            socket_in_tmp,
        })
    }

    /// Lines that explain a non-default layout to the operator.
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        if self.relocated {
            notes.push(format!(
                "the `postgres` account cannot reach {} (a parent directory is not searchable by \
                 it), so the embedded cluster lives in {} instead (recorded in {})",
                self.data_dir.display(),
                self.base.display(),
                self.data_dir.join(LOCATION_NOTE).display()
            ));
        }
        if self.socket_in_tmp {
            notes.push(format!(
                "the socket path under {} would be too long for a Unix socket (or has unusual \
                 characters), so the socket directory is {}",
                self.base.display(),
                self.socket_dir.display()
            ));
        }
        notes
    }

    /// Creates `base` (when relocated) and the socket directory, owned by the server's account.
    /// Blocking: call from `spawn_blocking`, under the lock.
    pub fn prepare(&self, run_as: &RunAs) -> Result<(), EmbeddedError> {
        if self.relocated {
            // Root-owned and searchable (0711), so the `postgres` account can reach pg/ below.
            make_dir(Path::new(RELOCATION_ROOT), 0o755, None)?;
            make_dir(&self.base, 0o711, None)?;
            if !run_as.can_reach(&self.base) {
                return Err(EmbeddedError::Setup(format!(
                    "the `postgres` account cannot reach {}; make its parent directories \
                     searchable (chmod o+x) or set VOICED_DATA_DIR to a place it can reach",
                    self.base.display()
                )));
            }
            let note = self.data_dir.join(LOCATION_NOTE);
            fs::write(&note, format!("{}\n", self.base.display()))
                .map_err(|err| EmbeddedError::io(format!("writing {}", note.display()), err))?;
        }
        if self.socket_in_tmp {
            make_private_tmp_dir(&self.socket_dir, run_as)
        } else {
            make_dir(&self.socket_dir, 0o700, run_as.owner())
        }
    }
}

/// Creates `dir` with `mode` if missing; gives it to `owner` (if any) either way.
pub(super) fn make_dir(
    dir: &Path,
    mode: u32,
    owner: Option<(u32, u32)>,
) -> Result<(), EmbeddedError> {
    let ctx = |what: &str| format!("{what} {}", dir.display());
    match DirBuilder::new().mode(mode).create(dir) {
        Ok(()) => fs::set_permissions(dir, fs::Permissions::from_mode(mode))
            .map_err(|err| EmbeddedError::io(ctx("setting the mode of"), err))?,
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists && dir.is_dir() => {}
        Err(err) => return Err(EmbeddedError::io(ctx("creating"), err)),
    }
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid))
            .map_err(|err| EmbeddedError::io(ctx("changing the owner of"), err))?;
    }
    Ok(())
}

/// A 0700 directory in /tmp that must belong to the server's account: one someone else made
/// (or a symlink) is refused rather than used.
fn make_private_tmp_dir(dir: &Path, run_as: &RunAs) -> Result<(), EmbeddedError> {
    make_dir(dir, 0o700, run_as.owner())?;
    let meta = fs::symlink_metadata(dir)
        .map_err(|err| EmbeddedError::io(format!("inspecting {}", dir.display()), err))?;
    if !meta.is_dir() || meta.uid() != run_as.uid() || meta.mode() & 0o077 != 0 {
        return Err(EmbeddedError::Setup(format!(
            "{} exists but is not a private (0700) directory of uid {}; remove it",
            dir.display(),
            run_as.uid()
        )));
    }
    Ok(())
}

/// Gives a whole tree to `uid:gid` (a cluster made by another account, e.g. before a switch to
/// running as root). Symlinks themselves are re-owned, never followed.
pub(super) fn chown_tree(root: &Path, uid: u32, gid: u32) -> io::Result<()> {
    let meta = fs::symlink_metadata(root)?;
    if meta.uid() != uid || meta.gid() != gid {
        std::os::unix::fs::lchown(root, Some(uid), Some(gid))?;
    }
    if meta.is_dir() {
        for entry in fs::read_dir(root)? {
            chown_tree(&entry?.path(), uid, gid)?;
        }
    }
    Ok(())
}

fn socket_dir_ok(dir: &Path) -> bool {
    let Some(text) = dir.to_str() else {
        return false;
    };
    text.len() + 1 + SOCKET_FILE.len() <= MAX_SOCKET_PATH
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-".contains(&b))
}

/// FNV-1a: stable across Rust versions (unlike `DefaultHasher`), so paths derived from it stay put.
fn path_hash(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let hash = path
        .as_os_str()
        .as_bytes()
        .iter()
        .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
            (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
        });
    format!("{hash:016x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_or_odd_socket_dirs_are_refused() {
        assert!(socket_dir_ok(Path::new(
            "/home/u/.local/share/voiced/pg-socket"
        )));
        assert!(!socket_dir_ok(&Path::new("/").join("x".repeat(100))));
        assert!(!socket_dir_ok(Path::new("/home/u/my data/pg-socket")));
    }

    #[test]
    fn path_hash_is_stable() {
        assert_eq!(path_hash(Path::new("")), "cbf29ce484222325");
        assert_ne!(path_hash(Path::new("/a")), path_hash(Path::new("/b")));
    }
}
