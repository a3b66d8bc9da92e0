//! `cargo xtask fuzz [TARGET] [--seconds N]`: the coverage-guided fuzz targets of `fuzz/` (cargo-fuzz, libFuzzer;
//! see fuzz/README.md), built with the nightly toolchain and run one at a time under `nice -n 19`.
//!
//! Layout (all under the target directory, so deleting it removes every trace): the build in `<target>/fuzz`,
//! each target's working corpus in `<target>/fuzz/corpus/<target>` (the committed seeds in `fuzz/seeds/<target>`
//! are read, never written), crashing inputs in `<target>/fuzz/artifacts/<target>`, and each run's whole log in
//! `<target>/fuzz/logs/<target>.log`. After each run the summary line (executions, `cov:`, `ft:`, corpus,
//! findings) is printed, and appended with the date to `<target>/fuzz/logs/summary.txt`.
//!
//! Not part of `cargo xtask test`: a run takes as long as asked (default 60 s per target).

#![allow(
    clippy::disallowed_methods,
    reason = "build-tool scratch under the target directory (logs the child writes as it runs, corpora), not user files"
)]

use anyhow::{Context, Result, bail};
use std::path::Path;
use std::process::{Command, Stdio};

/// Every target, in the order `cargo xtask fuzz` runs them (names of `fuzz/Cargo.toml`'s `[[bin]]`s).
pub(crate) const TARGETS: [&str; 8] = [
    "wiki_topic",
    "okf_frontmatter",
    "bundle_import",
    "learned_block",
    "provider_splice",
    "mcp_tool_args",
    "http_edge",
    "vault_note",
];

/// What one run found, read from libFuzzer's log.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct RunStats {
    /// Inputs executed (`stat::number_of_executed_units`, else the last `#N` status line).
    pub executions: u64,
    /// Coverage counters hit (`cov:` of the last status line).
    pub cov: u64,
    /// Features (`ft:` of the last status line).
    pub ft: u64,
    /// Corpus size in inputs (`corp: N/..` of the last status line).
    pub corpus: u64,
    /// Crashes, leaks, timeouts and out-of-memory inputs written as artifacts.
    pub findings: Vec<String>,
}

/// Parse a libFuzzer log (see [`RunStats`]).
pub(crate) fn parse_log(log: &str) -> RunStats {
    let mut stats = RunStats::default();
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("stat::number_of_executed_units:") {
            if let Ok(n) = rest.trim().parse() {
                stats.executions = n;
            }
        } else if let Some(rest) = line.strip_prefix('#') {
            let mut words = rest.split_whitespace();
            let n = words.next().and_then(|w| w.parse::<u64>().ok());
            if let Some(n) = n {
                let words: Vec<&str> = words.collect();
                let field = |name: &str| {
                    words
                        .iter()
                        .position(|w| *w == name)
                        .and_then(|i| words.get(i + 1))
                        .and_then(|v| v.split('/').next())
                        .and_then(|v| v.parse::<u64>().ok())
                };
                if let Some(cov) = field("cov:") {
                    stats.cov = cov;
                    stats.ft = field("ft:").unwrap_or(stats.ft);
                    stats.corpus = field("corp:").unwrap_or(stats.corpus);
                    stats.executions = stats.executions.max(n);
                }
            }
        } else if let Some(path) = line.split("Test unit written to ").nth(1) {
            stats.findings.push(path.trim().to_owned());
        }
    }
    stats
}

/// Build every target, then run `only` (or each target in turn) for `seconds` each.
///
/// Errors: the nightly toolchain or cargo-fuzz missing, a failed build, or a target that found something (the
/// artifacts are listed).
pub(crate) fn run(root: &Path, target_dir: &Path, only: Option<&str>, seconds: u64) -> Result<()> {
    let targets: Vec<&str> = match only {
        Some(t) if TARGETS.contains(&t) => vec![t],
        Some(t) => bail!("unknown fuzz target {t:?}: expected one of {}", TARGETS.join(", ")),
        None => TARGETS.to_vec(),
    };
    let fuzz_dir = root.join("fuzz");
    let work = target_dir.join("fuzz");
    let build_dir = work.clone();
    let ok = Command::new("cargo")
        .args(["+nightly", "fuzz", "--help"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ok {
        bail!(
            "`cargo +nightly fuzz` is not available: install the nightly toolchain (rustup toolchain install nightly) \
             and cargo-fuzz (cargo install cargo-fuzz --locked)"
        );
    }
    let mut build = nice(Command::new("cargo"));
    build
        .args(["+nightly", "fuzz", "build", "--fuzz-dir"])
        .arg(&fuzz_dir)
        .args(FUZZ_FLAGS)
        .arg("--target-dir")
        .arg(&build_dir)
        .current_dir(root);
    if !build.status().context("could not start cargo fuzz build")?.success() {
        bail!("`cargo +nightly fuzz build` failed");
    }
    let logs = work.join("logs");
    std::fs::create_dir_all(&logs).with_context(|| format!("creating {}", logs.display()))?;
    let mut found = Vec::new();
    for t in targets {
        let corpus = work.join("corpus").join(t);
        let artifacts = work.join("artifacts").join(t);
        std::fs::create_dir_all(&corpus).with_context(|| format!("creating {}", corpus.display()))?;
        std::fs::create_dir_all(&artifacts).with_context(|| format!("creating {}", artifacts.display()))?;
        let log_path = logs.join(format!("{t}.log"));
        let log = std::fs::File::create(&log_path).with_context(|| format!("creating {}", log_path.display()))?;
        println!("==> fuzz {t} for {seconds} s (nice 19); log {}", log_path.display());
        let mut cmd = nice(Command::new("cargo"));
        cmd.args(["+nightly", "fuzz", "run", "--fuzz-dir"])
            .arg(&fuzz_dir)
            .args(FUZZ_FLAGS)
            .arg("--target-dir")
            .arg(&build_dir)
            .arg(t)
            .arg(&corpus)
            .arg(fuzz_dir.join("seeds").join(t))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .arg(format!("-artifact_prefix={}/", artifacts.display()))
            .args([
                "-print_final_stats=1",
                "-timeout=60",
                "-rss_limit_mb=3072",
                "-max_len=65536",
            ])
            .current_dir(root)
            // Temp homes and files of the targets live under the target directory too.
            .env("TMPDIR", &work)
            .stdout(log.try_clone().context("log handle")?)
            .stderr(log);
        let status = cmd.status().context("could not start cargo fuzz run")?;
        let text = std::fs::read_to_string(&log_path).unwrap_or_default();
        let stats = parse_log(&text);
        let line = format!(
            "{t}: {seconds} s, {} executions, cov {}, ft {}, corpus {}, findings {}{}",
            stats.executions,
            stats.cov,
            stats.ft,
            stats.corpus,
            stats.findings.len(),
            if status.success() { "" } else { " (run failed)" }
        );
        println!("{line}");
        for f in &stats.findings {
            println!("    {f}");
        }
        append_summary(&logs, &line)?;
        if !status.success() || !stats.findings.is_empty() {
            found.push(t);
        }
    }
    if !found.is_empty() {
        bail!(
            "fuzzing found problems in: {} (inputs in {}/artifacts)",
            found.join(", "),
            work.display()
        );
    }
    Ok(())
}

/// Release build with debug assertions (overflow checks), without a sanitizer: the targets are safe Rust over
/// bundled C libraries, and a sanitizer would halve the executions on a 2-core machine.
const FUZZ_FLAGS: [&str; 3] = ["--sanitizer=none", "--debug-assertions", "--release"];

/// `cmd` run under `nice -n 19` (the fuzz runs share the machine).
fn nice(cmd: Command) -> Command {
    let mut n = Command::new("nice");
    n.args(["-n", "19"]).arg(cmd.get_program()).args(cmd.get_args());
    n
}

fn append_summary(logs: &Path, line: &str) -> Result<()> {
    use std::io::Write;
    let path = logs.join("summary.txt");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .with_context(|| format!("opening {}", path.display()))?;
    let now = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
        .unwrap_or_default();
    writeln!(f, "{now} {line}").with_context(|| format!("writing {}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_libfuzzer_status_and_final_stats() {
        let log = "INFO: Seed: 1\n#2\tINITED cov: 120 ft: 130 corp: 5/200b exec/s: 0 rss: 40Mb\n\
                   #4096\tpulse  cov: 300 ft: 420 corp: 40/2Kb lim: 43 exec/s: 2048 rss: 50Mb\n\
                   #5000\tNEW    cov: 301 ft: 425 corp: 41/2Kb lim: 43 exec/s: 2000 rss: 50Mb L: 3/3 MS: 1 ChangeBit-\n\
                   ==1== ERROR: libFuzzer: deadly signal\n\
                   artifact_prefix='a/'; Test unit written to a/crash-abc\n\
                   stat::number_of_executed_units: 5123\n";
        let s = parse_log(log);
        assert_eq!(s.executions, 5123);
        assert_eq!((s.cov, s.ft, s.corpus), (301, 425, 41));
        assert_eq!(s.findings, vec!["a/crash-abc".to_owned()]);
    }
}
