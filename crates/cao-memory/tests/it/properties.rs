//! Property tests of the service: content round-trips byte for byte through the file and the index, and any
//! sequence of stores and forgets leaves the wiki and SQLite in agreement.

use cao_core::{CaoHome, FixedClock, Key, Scope, Settings, TerminalContext};
use cao_memory::{ForgetArgs, MemoryService, StoreArgs};
use chrono::TimeZone;
use proptest::prelude::*;
use std::sync::Arc;

fn service(dir: &std::path::Path) -> (MemoryService, Arc<FixedClock>) {
    let clock = Arc::new(FixedClock::new(
        chrono::Utc
            .with_ymd_and_hms(2026, 5, 1, 12, 0, 0)
            .single()
            .expect("time"),
    ));
    let svc =
        MemoryService::open_with(CaoHome::new(dir.join("home")), Settings::default(), clock.clone()).expect("open");
    (svc, clock)
}

fn ctx(dir: &std::path::Path) -> TerminalContext {
    TerminalContext {
        project_id: Some("prop".into()),
        session_name: Some("s1".into()),
        cwd: Some(dir.to_path_buf()),
        ..Default::default()
    }
}

/// Content a user could store: anything non-blank without NUL, including heading and header look-alikes.
fn content() -> impl Strategy<Value = String> {
    let line = prop_oneof![
        "[^\u{0}]{0,40}",
        Just("## 2020-01-01T00:00:00Z".to_owned()),
        Just("\\## 2020-01-01T00:00:00Z".to_owned()),
        Just("<!-- id: x | scope: global | type: user | tags:  -->".to_owned()),
        Just("# title".to_owned()),
        Just(String::new()),
        Just("  trailing  ".to_owned()),
    ];
    prop::collection::vec(line, 1..6)
        .prop_flat_map(|lines| (Just(lines), prop_oneof![Just("\n"), Just("\r\n")], any::<bool>()))
        .prop_map(|(lines, nl, trailing)| {
            let mut s = lines.join(nl);
            if trailing {
                s.push_str(nl);
            }
            s
        })
        .prop_filter("non-blank", |s| !s.trim().is_empty())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn content_round_trips_through_file_and_index(first in content(), second in content()) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (svc, clock) = service(dir.path());
        let c = ctx(dir.path());
        let key = Key::parse_strict("round-trip").expect("key");
        for body in [&first, &second] {
            let r = svc.store(&c, StoreArgs { content: body.clone(), key: Some(key.to_string()), scope: Some(cao_core::Scope::Global), ..Default::default() }).expect("store");
            clock.advance(chrono::Duration::seconds(5));
            // file -> parse
            let text = std::fs::read_to_string(&r.file_path).expect("read topic");
            let topic = cao_store::StoredTopic::parse(&text).expect("parse");
            prop_assert_eq!(topic.current_content(), body.as_str());
            // index -> show
            let m = svc.show(&c, cao_memory::ShowRequest::key(&key, Some(Scope::Global))).expect("show").expect("present");
            prop_assert_eq!(&m.content, body);
        }
        // file -> index rebuild: rebuilding from the files gives the same content.
        let index_file = svc.home().db_path();
        drop(svc);
        std::fs::remove_file(&index_file).expect("drop the index");
        let _ = std::fs::remove_file(index_file.with_extension("db-wal"));
        let _ = std::fs::remove_file(index_file.with_extension("db-shm"));
        // Opening a home whose index is gone rebuilds it from the files; a repair afterwards finds nothing.
        let (svc, _) = service(dir.path());
        let report = svc.repair().expect("repair");
        prop_assert!(report.is_clean(), "{}", report);
        prop_assert_eq!(report.scanned, 1);
        let m = svc.show(&c, cao_memory::ShowRequest::key(&key, Some(Scope::Global))).expect("show").expect("present after repair");
        prop_assert_eq!(&m.content, &second);
        prop_assert_eq!(m.entry_count, 2);
    }

    #[test]
    fn store_forget_sequences_keep_wiki_and_index_in_agreement(
        ops in prop::collection::vec((0usize..4, 0usize..3, any::<bool>(), "[a-z ]{1,30}"), 1..25)
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let (svc, clock) = service(dir.path());
        let c = ctx(dir.path());
        let scopes = ["global", "project", "session"];
        for (k, s, is_store, text) in ops {
            let key = format!("k{k}");
            if is_store && !text.trim().is_empty() {
                svc.store(&c, StoreArgs { content: text, key: Some(key), scope: Some(scopes[s].parse().expect("a valid scope")), ..Default::default() }).expect("store");
            } else {
                svc.forget(&c, ForgetArgs { key, scope: Some(scopes[s].parse().expect("a valid scope")) }).expect("forget");
            }
            clock.advance(chrono::Duration::seconds(1));
        }
        let report = svc.repair().expect("repair");
        prop_assert!(report.is_clean(), "wiki and index disagree: {}", report);
        prop_assert!(report.unparsable.is_empty());
    }
}
