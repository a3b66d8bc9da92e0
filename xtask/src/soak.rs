//! `cargo xtask soak --minutes N [--out DIR] [--release]`: mixed load on one `cao-server` for N minutes, measured
//! each minute and checked at the end, by `tests/soak/soak.py` (its module docs list the clients, the kills and the
//! checks; the JSON it writes follows `docs/schemas/cao.soak-1.json`).
//!
//! This builds every binary of the workspace but xtask (the run starts `cao`, `cao-server` and `cao-mcp-server`;
//! debug, or release with `--release`), makes sure the Python test dependencies are importable (the same ones as the
//! end-to-end tests), and runs the script with the scratch home under `<target>/soak/scratch` (deleted by the script at the end) and
//! the report in `--out` (default `<target>/soak`). `cargo xtask test` runs it for 2 minutes after the end-to-end
//! tests as a smoke test; the script asserts no timing, and with fewer than 10 minutes it skips the flatness checks
//! of memory and descriptors (saying so) because two minutes cannot show a trend.

use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Arguments of one soak run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SoakArgs {
    /// Length of the run in minutes (at least 1).
    pub minutes: u32,
    /// Where `soak.json` and the server's stderr go (default `<target>/soak`).
    pub out: Option<PathBuf>,
    /// Build and run release binaries instead of debug ones.
    pub release: bool,
}

/// The `cargo build` arguments for the binaries a soak starts (`cao`, `cao-server`, `cao-mcp-server`): every
/// binary of the workspace but xtask, the same command as the gate's "build bins" step, so the features of shared
/// dependencies unify alike and, inside the gate, nothing is built twice (building three packages alone would
/// unify fewer features and rebuild dependencies).
pub(crate) fn build_args(release: bool) -> Vec<&'static str> {
    let mut args = vec!["build", "--workspace", "--bins", "--locked", "--exclude", "xtask"];
    if release {
        args.push("--release");
    }
    args
}

/// The script's command line for a run against the binaries in `bin_dir`.
pub(crate) fn script_command(root: &Path, target: &Path, bin_dir: &Path, args: &SoakArgs) -> Command {
    let out = args.out.clone().unwrap_or_else(|| target.join("soak"));
    let mut cmd = Command::new(crate::python());
    cmd.arg(root.join("tests").join("soak").join("soak.py"))
        .arg("--minutes")
        .arg(args.minutes.to_string())
        .arg("--bin-dir")
        .arg(bin_dir)
        .arg("--out")
        .arg(out)
        .arg("--scratch")
        .arg(target.join("soak").join("scratch"))
        .arg("--profile")
        .arg(if args.release { "release" } else { "debug" })
        .current_dir(root);
    cmd
}

/// Builds the binaries and runs the soak; an error when the build fails, the Python dependencies are missing or a
/// check of the run failed (the script has printed which).
pub(crate) fn run(root: &Path, args: &SoakArgs) -> Result<()> {
    if args.minutes == 0 {
        bail!("--minutes must be at least 1");
    }
    let status = crate::cargo(root, &build_args(args.release))
        .status()
        .context("could not start `cargo build`")?;
    if !status.success() {
        bail!("building the soak's binaries failed ({status})");
    }
    if !crate::python_has_test_deps(root) {
        bail!(
            "`{} -m pytest` with the `mcp` and `httpx` packages is not available; install the test dependencies with \
             `pip install -r tests/e2e/requirements.txt`",
            crate::python().to_string_lossy()
        );
    }
    let target = crate::target_dir(root)?;
    let bin_dir = target.join(if args.release { "release" } else { "debug" });
    let mut cmd = script_command(root, &target, &bin_dir, args);
    println!("\n==> [soak] {}", crate::Shown(&cmd));
    let status = cmd.status().context("could not start the soak script")?;
    if !status.success() {
        bail!("the soak failed ({status}); see the checks printed above");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn release_builds_release_and_debug_does_not() {
        assert!(build_args(true).contains(&"--release"));
        assert!(!build_args(false).contains(&"--release"));
        // Every binary of the workspace but xtask (which is running), as the gate's "build bins" step.
        assert_eq!(
            build_args(false),
            ["build", "--workspace", "--bins", "--locked", "--exclude", "xtask"]
        );
    }

    #[test]
    fn the_script_gets_minutes_binaries_scratch_and_default_out() {
        let args = SoakArgs {
            minutes: 60,
            out: None,
            release: true,
        };
        let cmd = script_command(Path::new("/r"), Path::new("/t"), Path::new("/t/release"), &args);
        let argv: Vec<String> = cmd.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
        assert_eq!(
            argv,
            [
                "/r/tests/soak/soak.py",
                "--minutes",
                "60",
                "--bin-dir",
                "/t/release",
                "--out",
                "/t/soak",
                "--scratch",
                "/t/soak/scratch",
                "--profile",
                "release"
            ]
        );
    }
}
