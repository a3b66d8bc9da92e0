//! Snapshots of the screen: the wide and narrow layouts, every mark, the detail pane for a view line, a line below
//! the view and a single entry, the tree drawing with and without `ui.tree_drawing`, both modes.

use crate::common::{down_to_memory, home, open, press, screen, source};
use cao_core::Settings;
use cao_tui::Key;
use insta::assert_snapshot;

fn off() -> Settings {
    Settings::from_value(serde_json::json!({"ui": {"tree_drawing": "off"}}))
}

#[test]
fn wide_layout_opens_on_the_oldest_view_line_with_the_drawing_beside() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    let text = screen(&mut state, 140, 36);
    // The header counts, the first view line is a merged line summarized by the model.
    assert!(text.contains("memory inspector · proj-a · Live"), "{text}");
    assert!(text.contains("summarizing 1 · pending"), "{text}");
    assert!(text.contains("A view line"), "{text}");
    assert!(
        text.contains("[left out]") && text.contains("left out until their summaries"),
        "{text}"
    );
    assert_snapshot!("wide_live", text);
}

#[test]
fn narrow_layout_puts_the_detail_below_the_outline() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    let text = screen(&mut state, 90, 48);
    let outline = text.find("the view, in the order").unwrap();
    let detail = text.find("┌ detail").unwrap();
    assert!(detail > outline && text[outline..detail].contains('\n'), "{text}");
    assert_snapshot!("narrow_live", text);
}

#[test]
fn a_terminal_too_narrow_for_counts_and_gauge_moves_the_gauge_beside_the_title() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    let text = screen(&mut state, 60, 30);
    let rows: Vec<&str> = text.lines().collect();
    // The counts keep their whole line; the gauge shares the title's line.
    assert!(
        rows.iter()
            .any(|r| r.contains("memory inspector · proj-a · Live") && r.contains("view 32.0 / 32 KiB")),
        "{text}"
    );
    assert!(
        rows.iter()
            .any(|r| r.starts_with("99 entries · 80 view lines · summarizing 1 · pending 3")),
        "{text}"
    );
    // Wide enough for both: the gauge stays beside the counts.
    let wide = screen(&mut state, 140, 36);
    assert!(
        wide.lines()
            .any(|r| r.starts_with("99 entries · 80 view lines") && r.contains("view 32.0 / 32 KiB")),
        "{wide}"
    );
}

#[test]
fn the_newest_lines_show_every_mark_and_the_replaced_memory() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    // ○ kept word for word and ● summarized at the top; ◌ not summarized yet and a spinner frame on the leased
    // line at the end.
    let top = screen(&mut state, 140, 36);
    for mark in ['●', '○'] {
        assert!(top.contains(mark), "mark {mark} missing:\n{top}");
    }
    press(&mut state, &mut src, &[Key::End]);
    let text = screen(&mut state, 140, 36);
    for mark in ['◌', '⠋'] {
        assert!(text.contains(mark), "mark {mark} missing:\n{text}");
    }
    state.tick += 1;
    assert!(screen(&mut state, 140, 36).contains('⠙'), "the spinner turns");
    assert_snapshot!("live_end_marks", text);
}

#[test]
fn detail_of_a_line_below_the_view_names_its_view_line_and_zoom() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Right, Key::Right]);
    let text = screen(&mut state, 140, 36);
    assert!(text.contains("Below the view: view line"), "{text}");
    assert_snapshot!("detail_below_view", text);
}

#[test]
fn detail_of_a_single_entry_says_who_wrote_it_and_whether_it_is_the_newest() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    down_to_memory(&mut state, &mut src);
    let text = screen(&mut state, 140, 40);
    assert!(text.contains("written by terminal term-main"), "{text}");
    assert!(text.contains("The newest entry of short-0"), "{text}");
    assert_snapshot!("detail_single_entry", text);
}

#[test]
fn tree_drawing_off_uses_the_outline_tree_lines() {
    let fx = home(off());
    let mut src = source(&fx, off());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Right, Key::Right]);
    let text = screen(&mut state, 140, 36);
    assert!(!text.contains('╔') && text.contains("├─"), "{text}");
    assert_snapshot!("detail_tree_lines", text);
}

#[test]
fn session_mode_shows_the_frozen_view_then_the_entries_since() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Char('s'), Key::End]);
    let text = screen(&mut state, 140, 36);
    assert!(text.contains("This session: sess-a"), "{text}");
    assert!(text.contains("[written here]") && text.contains("[reminder]"), "{text}");
    assert_snapshot!("session_mode", text);
}

#[test]
fn session_mode_before_any_snapshot_says_no_request_is_prepared() {
    let fx = cao_testkit::service::ServiceFixture::builder()
        .project(crate::common::PROJECT)
        .open();
    fx.store("project", "only-one", "# Only one\nA note.");
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Char('s')]);
    let text = screen(&mut state, 100, 16);
    assert!(text.contains("No request has been prepared yet"), "{text}");
    assert_snapshot!("session_mode_no_request", text);
}

#[test]
fn control_characters_in_memory_text_never_reach_the_screen() {
    let fx = cao_testkit::service::ServiceFixture::builder()
        .project(crate::common::PROJECT)
        .open();
    fx.store(
        "project",
        "hostile",
        "# Hostile\u{1b}]52;c;ZXZpbA==\u{7}\nred \u{1b}[31m text\rover",
    );
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    let text = screen(&mut state, 120, 20);
    assert!(text.contains("hostile"), "{text}");
    assert!(!text.chars().any(|c| c.is_control() && c != '\n'), "{text:?}");
}
