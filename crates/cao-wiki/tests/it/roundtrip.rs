//! Round-trip properties of the topic format: whatever is stored is what is read back.

use cao_core::time::parse_ts;
use cao_core::{MemoryType, Scope};
use cao_wiki::{Topic, TopicHeader, WikiError, upsert_text};
use chrono::{DateTime, Duration, Utc};
use proptest::prelude::*;

fn header(tags: &str, memory_type: MemoryType) -> TopicHeader {
    TopicHeader {
        key: "round-trip".into(),
        id: "6f1c9d2e-0000-4000-8000-000000000001".into(),
        scope: Scope::Session,
        memory_type,
        tags: tags.into(),
    }
}

fn base_ts() -> DateTime<Utc> {
    parse_ts("2026-04-16T10:30:00Z").expect("valid timestamp")
}

/// Lines that stress the format: heading and header lookalikes, backslashes, CR, whitespace, unicode.
fn tricky_line() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("## 2020-01-01T00:00:00Z".to_owned()),
        Just("## 2020-01-01T00:00:00Z\r".to_owned()),
        Just("## 2020-01-01T00:00:00Z  ".to_owned()),
        Just("## 9999-99-99T99:99:99Z".to_owned()),
        Just("<!-- id: x -->".to_owned()),
        Just("<!-- id: 0f8e | scope: global | type: user | tags:  -->".to_owned()),
        Just("# round-trip".to_owned()),
        Just(String::new()),
        Just("   ".to_owned()),
        Just("\t".to_owned()),
        Just("ünïcødé — 日本語 🎉".to_owned()),
        Just("text ## 2020-01-01T00:00:00Z inside".to_owned()),
        "\\\\{1,3}(## 2020-01-01T00:00:00Z|<!-- id: y -->|plain)",
        "[ -~]{0,20}",
        any::<String>(),
    ]
}

fn tricky_content() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        (
            proptest::collection::vec(tricky_line(), 0..8),
            prop_oneof![Just("\n"), Just("\r\n")],
            prop_oneof![Just(""), Just("\n"), Just("\n\n"), Just("  "), Just("\r\n")],
        )
            .prop_map(|(lines, sep, tail)| format!("{}{tail}", lines.join(sep))),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn single_store_round_trips_exactly(content in tricky_content()) {
        let text = upsert_text(None, &header("a,b", MemoryType::User), base_ts(), &content).expect("writes");
        let topic = Topic::parse(&text).expect("parses");
        prop_assert_eq!(topic.current_content(), content.as_str());
        prop_assert_eq!(topic.entry_count(), 1);
        prop_assert_eq!(topic.created_at(), base_ts());
        prop_assert_eq!(topic.render(), text);
    }

    #[test]
    fn upsert_sequence_round_trips(contents in proptest::collection::vec(tricky_content(), 1..6)) {
        let mut text: Option<String> = None;
        for (i, c) in contents.iter().enumerate() {
            let ty = if i % 2 == 0 { MemoryType::Project } else { MemoryType::Feedback };
            let h = TopicHeader { id: format!("id-{i}"), ..header(&format!("t{i}"), ty) };
            let ts = base_ts() + Duration::seconds(i as i64);
            text = Some(upsert_text(text.as_deref(), &h, ts, c).expect("writes"));
        }
        let text = text.expect("at least one store");
        let topic = Topic::parse(&text).expect("parses");
        let n = contents.len();
        prop_assert_eq!(topic.entry_count(), n);
        prop_assert_eq!(topic.current_content(), contents[n - 1].as_str());
        // Earlier entries lose only their trailing newlines (the upsert strips the file's trailing newlines).
        for (e, c) in topic.entries().iter().zip(&contents).take(n - 1) {
            prop_assert_eq!(e.content.as_str(), c.trim_end_matches('\n'));
        }
        prop_assert_eq!(&topic.header().id, "id-0", "the first id is kept");
        prop_assert_eq!(&topic.header().tags, &format!("t{}", n - 1), "the header has the last tags");
        prop_assert_eq!(topic.created_at(), base_ts());
        prop_assert_eq!(topic.updated_at(), base_ts() + Duration::seconds(n as i64 - 1));
        prop_assert_eq!(topic.render(), text);
    }

    #[test]
    fn parse_never_panics_on_arbitrary_text(s in any::<String>()) {
        let _ = Topic::parse(&s);
    }

    #[test]
    fn parse_never_panics_on_arbitrary_bytes(b in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = Topic::parse_bytes(&b);
        let _ = Topic::parse(&String::from_utf8_lossy(&b));
    }

    #[test]
    fn structured_garbage_after_header_never_panics(tail in "(## |\\\\|<!-- id:|[0-9TZ:\\-]|\n|\r| |x){0,60}") {
        let s = format!("# k\n<!-- id: x | scope: global | type: user | tags: a -->\n{tail}");
        match Topic::parse(&s) {
            Ok(t) => prop_assert!(t.entry_count() >= 1),
            Err(e) => {
                let corrupt = matches!(e, WikiError::Corrupt { .. });
                prop_assert!(corrupt, "{}", e);
            }
        }
    }
}
