//! The background summarizer across real processes (spec 001 "Summaries and spend": several processes share the
//! summarizing through leases, so no line is written twice): a `cao-mcp-server` is killed (SIGKILL) while its model
//! calls hang, three more summarize one journal at once, every line is written exactly once (the model calls of
//! every process are counted by the fake model, a `command` provider script), and the killed holder's lines are
//! finished by another process once its leases expire (model timeout + 30 s).

use crate::stdio::{eventually, open_service};
use cao_core::TerminalContext;
use cao_memory::{JournalTarget, StoreArgs};
use cao_testkit::TempHome;
use cao_testkit::service::RawStorage;
use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

const PROJECT: &str = "mp-proj";
/// Entries in the journal; each is too long to be kept word for word, so each line needs one model call.
const ENTRIES: usize = 12;

/// The fake model: logs `call <server pid> <prompt hash>` (or `hang <server pid> <own pid> <hash>` and hangs when
/// `CAO_TEST_HANG` is set) to `$CAO_TEST_MODEL_LOG`, then answers a short summary naming the hash.
const MODEL_SCRIPT: &str = r#"#!/bin/sh
prompt=$(cat)
h=$(printf '%s' "$prompt" | cksum | cut -d' ' -f1)
if [ -n "$CAO_TEST_HANG" ]; then
  echo "hang $PPID $$ $h" >> "$CAO_TEST_MODEL_LOG"
  exec sleep 600
fi
echo "call $PPID $h" >> "$CAO_TEST_MODEL_LOG"
sleep 0.2
echo "summary of $h"
"#;

struct Setup {
    home: TempHome,
    log: PathBuf,
}

fn setup() -> Setup {
    let home = TempHome::new().expect("temp home");
    let script = home.root().join("fake-model.sh");
    std::fs::write(&script, MODEL_SCRIPT).expect("write script");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let settings = serde_json::json!({"memory": {"model": {
        "provider": "command",
        "command": [script.to_str().expect("utf-8 path")],
        "name": "fake-model",
        "timeout_ms": 3000,
    }}});
    std::fs::create_dir_all(home.home()).expect("mkdir home");
    std::fs::write(home.home().join("settings.json"), settings.to_string()).expect("settings");
    let svc = open_service(home.home());
    let ctx = TerminalContext {
        project_id: Some(PROJECT.into()),
        ..Default::default()
    };
    for i in 0..ENTRIES {
        svc.store(
            &ctx,
            StoreArgs {
                content: format!(
                    "# Note {i}\n{}",
                    format!("fact {i} about the deploy pipeline. ").repeat(25)
                ),
                key: Some(format!("note-{i:02}")),
                ..Default::default()
            },
        )
        .expect("store");
    }
    let log = home.root().join("model-calls.log");
    Setup { home, log }
}

/// A `cao-mcp-server` on the home with stdin kept open (its session runs until stdin closes).
fn server(s: &Setup, hang: bool) -> Child {
    let mut cmd = s.home.command(env!("CARGO_BIN_EXE_cao-mcp-server"));
    cmd.env("CAO_PROJECT_ID", PROJECT)
        .env("CAO_TEST_MODEL_LOG", &s.log)
        .env("CAO_LOG_LEVEL", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    if hang {
        cmd.env("CAO_TEST_HANG", "1");
    }
    cmd.spawn().expect("cao-mcp-server starts")
}

fn log_lines(log: &Path) -> Vec<Vec<String>> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| l.split(' ').map(str::to_owned).collect())
        .collect()
}

fn wait_for(what: &str, deadline: Duration, done: impl FnMut() -> bool) {
    assert!(
        eventually(deadline, Duration::from_millis(50), done),
        "timed out waiting for {what}"
    );
}

#[test]
fn three_processes_write_every_line_once_and_finish_a_killed_holders_lines() {
    let s = setup();
    // A holder that claims lines and hangs in its model calls, then dies without a word.
    let mut holder = server(&s, true);
    wait_for("the holder's model calls", Duration::from_secs(30), || {
        log_lines(&s.log).iter().filter(|l| l[0] == "hang").count() == 2
    });
    holder.kill().expect("SIGKILL the holder");
    holder.wait().expect("reap the holder");
    let hung: Vec<Vec<String>> = log_lines(&s.log).into_iter().filter(|l| l[0] == "hang").collect();
    for h in &hung {
        // Its model processes outlive it (their own process group); stop them too.
        let _ = std::process::Command::new("kill").args(["-9", &h[2]]).status();
    }
    let hung_hashes: BTreeSet<String> = hung.iter().map(|l| l[3].clone()).collect();
    assert_eq!(hung_hashes.len(), 2, "two different lines were claimed: {hung:?}");

    let started = Instant::now();
    let mut workers: Vec<Child> = (0..3).map(|_| server(&s, false)).collect();
    let svc = open_service(s.home.home());
    let ctx = TerminalContext {
        project_id: Some(PROJECT.into()),
        ..Default::default()
    };
    let unwritten = || {
        svc.raw_index()
            .journal_read(|j| j.unwritten_count(PROJECT))
            .expect("count")
    };
    // The other lines go quickly; the holder's two wait for its leases (model timeout 3 s + 30 s) to expire.
    wait_for("every line but the holder's", Duration::from_secs(30), || {
        unwritten() <= 2
    });
    wait_for("the holder's lines", Duration::from_secs(90), || unwritten() == 0);
    assert!(
        started.elapsed() >= Duration::from_secs(20),
        "the dead holder's lines were not taken before its leases expired ({:?})",
        started.elapsed()
    );

    let calls: Vec<Vec<String>> = log_lines(&s.log).into_iter().filter(|l| l[0] == "call").collect();
    let hashes: BTreeSet<String> = calls.iter().map(|l| l[2].clone()).collect();
    assert_eq!(
        calls.len(),
        ENTRIES,
        "one model call per line, across every process: {calls:?}"
    );
    assert_eq!(hashes.len(), ENTRIES, "no line was summarized twice: {calls:?}");
    assert!(
        hung_hashes.is_subset(&hashes),
        "the holder's lines were finished by others"
    );
    let pids: BTreeSet<&String> = calls.iter().map(|l| &l[1]).collect();
    assert!(pids.len() >= 2, "the work was shared: {pids:?}");
    assert!(!pids.contains(&holder.id().to_string()));

    let view = svc.view(&ctx, &JournalTarget::default()).expect("view").view;
    assert!(!view.contains("(not summarized yet)"), "{view}");
    assert_eq!(view.matches("summary of ").count(), ENTRIES, "{view}");
    for e in 0..ENTRIES as u64 {
        let line = svc
            .raw_index()
            .journal_read(|j| j.line(PROJECT, e, 1))
            .expect("line")
            .expect("written");
        assert_eq!(line.writer, "command:fake-model", "{line:?}");
    }

    for w in &mut workers {
        drop(w.stdin.take());
    }
    for mut w in workers {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = w.try_wait().expect("wait") {
                assert!(status.success(), "{status:?}");
                break;
            }
            if Instant::now() > deadline {
                let _ = w.kill();
                panic!("a worker did not exit after its stdin closed");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}
