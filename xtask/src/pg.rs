//! A throwaway PostgreSQL cluster for the test run: the suites of the shared-database backend get its
//! administrative URL in `CAO_TEST_DATABASE_URL` and create a database of their own on it (`cao_testkit::postgres`).
//!
//! The cluster lives in `<tmp>/pg-test-<pid>/` (data directory, unix socket, log): `initdb --no-sync` with trust
//! authentication, `pg_ctl -w start` listening on the socket only (`listen_addresses=''`, `jit=off`, no fsync), run as
//! the `postgres` user when xtask runs as root (PostgreSQL refuses to run as root). [`Cluster`]'s drop stops it
//! (`-m immediate`) and deletes the directory.

#![allow(
    clippy::disallowed_methods,
    reason = "xtask does not depend on cao-core; the cluster directory is handed to the postgres user, not a store file"
)]

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A running throwaway cluster; stopped and deleted on drop.
pub(crate) struct Cluster {
    bin: PathBuf,
    dir: PathBuf,
    as_postgres: bool,
}

/// The directory of `initdb` and `pg_ctl`: `pg_config --bindir`, else the newest `/usr/lib/postgresql/<v>/bin`.
fn bin_dir() -> Option<PathBuf> {
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output()
        && out.status.success()
    {
        let dir = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if dir.join("initdb").is_file() {
            return Some(dir);
        }
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((v, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, b)| b)
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

impl Cluster {
    /// Start a cluster under `target`. `Ok(None)` when no PostgreSQL is installed (the caller decides whether that
    /// fails the run).
    ///
    /// Errors: initdb or the start failed (the log's tail is in the message).
    pub(crate) fn start(target: &Path) -> Result<Option<Cluster>> {
        let Some(bin) = bin_dir() else { return Ok(None) };
        let dir = target.join(format!("pg-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        let as_postgres = is_root();
        if as_postgres {
            let ok = Command::new("chown").arg("postgres").arg(&dir).status()?.success();
            if !ok {
                bail!("cannot give {} to the postgres user", dir.display());
            }
        }
        let cluster = Cluster { bin, dir, as_postgres };
        let data = cluster.dir.join("data");
        cluster.run(
            "initdb",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "--no-sync".as_ref(),
                "-A".as_ref(),
                "trust".as_ref(),
                "-U".as_ref(),
                "postgres".as_ref(),
            ],
        )?;
        let options = format!(
            "-k {} -c listen_addresses='' -c jit=off -c fsync=off -c max_connections=300",
            cluster.dir.display()
        );
        let log = cluster.dir.join("log");
        cluster.run(
            "pg_ctl",
            &[
                "-w".as_ref(),
                "-D".as_ref(),
                data.as_os_str(),
                "-l".as_ref(),
                log.as_os_str(),
                "-o".as_ref(),
                options.as_ref(),
                "start".as_ref(),
            ],
        )?;
        Ok(Some(cluster))
    }

    fn run(&self, tool: &str, args: &[&std::ffi::OsStr]) -> Result<()> {
        let exe = self.bin.join(tool);
        let mut cmd = if self.as_postgres {
            let mut c = Command::new("runuser");
            c.args(["-u", "postgres", "--"]).arg(&exe);
            c
        } else {
            Command::new(&exe)
        };
        let out = cmd
            .args(args)
            .output()
            .with_context(|| format!("running {}", exe.display()))?;
        if !out.status.success() {
            let log = std::fs::read_to_string(self.dir.join("log")).unwrap_or_default();
            bail!(
                "{tool} failed: {}{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
                log.lines().rev().take(20).collect::<Vec<_>>().join("\n")
            );
        }
        Ok(())
    }

    /// The administrative URL (socket in the cluster's directory).
    pub(crate) fn url(&self) -> String {
        format!("postgresql://postgres@/postgres?host={}", self.dir.display())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.run(
            "pg_ctl",
            &[
                "-D".as_ref(),
                data.as_os_str(),
                "-m".as_ref(),
                "immediate".as_ref(),
                "stop".as_ref(),
            ],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cluster starts, accepts a connection on its socket, and is stopped and deleted on drop. Skipped (with a
    /// line saying why) where PostgreSQL is not installed, except under `CI=true`.
    #[test]
    fn a_cluster_starts_and_is_deleted() {
        let target = std::env::temp_dir().join(format!("xtask-pg-{}", std::process::id()));
        std::fs::create_dir_all(&target).expect("dir");
        let Some(cluster) = Cluster::start(&target).expect("start") else {
            assert!(std::env::var("CI").is_err(), "CI installs PostgreSQL");
            eprintln!("skipped: no PostgreSQL installation found");
            return;
        };
        let dir = cluster.dir.clone();
        assert!(
            dir.join(".s.PGSQL.5432").exists(),
            "the socket is in the cluster's directory"
        );
        assert!(cluster.url().contains(&dir.display().to_string()));
        drop(cluster);
        assert!(!dir.exists(), "deleted on drop");
        let _ = std::fs::remove_dir_all(&target);
    }
}
