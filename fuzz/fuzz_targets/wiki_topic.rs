//! The wiki topic file parser (cao-wiki `Topic::parse_bytes`) and writer (`upsert_text`).
//!
//! Mode byte even: the rest is a topic file; parsing must not panic, and a file that parses, rendered, parses to
//! the same entries (trailing newlines of earlier entries aside, see `Topic::render`) and renders the same again.
//! Mode byte odd: the rest is memory content (lossy UTF-8); written into a new file and appended to an existing
//! one, it must read back byte for byte as the current content (cao-wiki `topic.rs` "Reading").
#![no_main]

use cao_core::{MemoryType, Scope};
use cao_wiki::{Topic, TopicHeader, upsert_text};
use chrono::{TimeZone, Utc};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = cao_fuzz::mode(data);
    if mode % 2 == 0 {
        if let Ok(topic) = Topic::parse_bytes(rest) {
            // `Topic::render`'s contract: render then parse keeps every entry, except that the trailing newlines
            // of an earlier entry are dropped as an upsert drops them; a second render is a fixed point.
            let rendered = topic.render();
            let again = Topic::parse(&rendered).expect("a rendered topic parses");
            assert_eq!(again.entry_count(), topic.entry_count(), "render then parse keeps the entries");
            let last = topic.entry_count() - 1;
            for (i, (a, b)) in again.entries().iter().zip(topic.entries()).enumerate() {
                assert_eq!(a.timestamp, b.timestamp);
                let want = if i == last { b.content.as_str() } else { b.content.trim_end_matches('\n') };
                assert_eq!(a.content, want, "render then parse keeps entry {i}");
            }
            assert_eq!(again.header(), topic.header());
            assert_eq!(again.render(), rendered, "render is a fixed point after one round");
        }
        return;
    }
    let content = String::from_utf8_lossy(rest);
    let header = TopicHeader {
        key: "fuzz-key".to_owned(),
        id: "00000000-0000-4000-8000-000000000000".to_owned(),
        scope: Scope::Project,
        memory_type: MemoryType::Project,
        tags: "a,b".to_owned(),
    };
    let t1 = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).single().expect("valid time");
    let t2 = Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).single().expect("valid time");
    let Ok(first) = upsert_text(None, &header, t1, &content) else {
        return;
    };
    let topic = Topic::parse(&first).expect("a written topic parses");
    assert_eq!(topic.current_content(), content, "content round-trips in a new file");
    let second = upsert_text(Some(&first), &header, t2, &content).expect("appending to a written topic");
    let topic = Topic::parse(&second).expect("an appended topic parses");
    assert_eq!(topic.entry_count(), 2);
    assert_eq!(topic.current_content(), content, "content round-trips when appended");
});
