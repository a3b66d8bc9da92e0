//! The state machine's behaviour over a real journal: search and reveal with the zoom path, the next merge,
//! twice-press delete and purge only on the newest entry, copy, mouse, Esc, and the dimmed replaced memory.

use crate::common::{down_to_memory, home, open, press, source};
use cao_core::{Key as MemKey, Scope, Settings};
use cao_journal::Address;
use cao_tui::state::Pane;
use cao_tui::{Key, Source, State};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::style::Modifier;

fn type_text(state: &mut State, src: &mut dyn Source, text: &str) {
    for c in text.chars() {
        state.key(Key::Char(c), src);
    }
}

/// The expected zoom path to `entry`: the top line holding it, then halving down to `entry+1`.
fn expected_path(state: &State, entry: u64) -> String {
    let holder = state
        .loaded
        .mechanism
        .lines
        .iter()
        .copied()
        .find(|l| l.covers(entry))
        .unwrap();
    let mut path = vec![holder.to_string()];
    let (mut id, mut n) = (holder.id(), holder.n());
    while n > 1 {
        n /= 2;
        if entry >= id + n {
            id += n;
        }
        path.push(format!("{id}+{n}"));
    }
    format!("{} zooms from the view: {}", path.len(), path.join(" › "))
}

#[test]
fn search_then_enter_reveals_the_hit_with_its_zoom_path() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Char('/')]);
    type_text(&mut state, &mut src, "rule number 17");
    press(&mut state, &mut src, &[Key::Enter]);
    let search = state.search.clone().unwrap();
    assert_eq!(search.hits[0].key, "topic-17");
    // short-0..5 are entries 0..5, topic-NN is entry 6 + NN.
    assert_eq!(search.hits[0].newest_entry, Some(23));
    press(&mut state, &mut src, &[Key::Enter]);
    assert!(state.search.is_none());
    assert_eq!(state.selected_address(), Some(Address::entry(23).unwrap()));
    let expected = expected_path(&state, 23);
    // Entry 23 sits below the view (inside a merged line), so the path has more than one zoom.
    assert!(expected.contains(" › "), "{expected}");
    assert_eq!(state.message.as_deref(), Some(expected.as_str()));
    assert_eq!(
        state.revealed.as_ref().map(Vec::len),
        Some(expected.split(" › ").count())
    );
    // Esc first clears the revealed path, then closes.
    press(&mut state, &mut src, &[Key::Esc]);
    assert!(!state.quit && state.revealed.is_none());
    press(&mut state, &mut src, &[Key::Esc]);
    assert!(state.quit);
}

#[test]
fn esc_clears_an_open_search_before_closing() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Char('/'), Key::Char('x'), Key::Esc]);
    assert!(state.search.is_none() && !state.quit);
    press(&mut state, &mut src, &[Key::Esc]);
    assert!(state.quit);
}

#[test]
fn m_selects_the_older_line_of_the_next_pair_to_merge() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    let pair = state.loaded.mechanism.pairs[0];
    press(&mut state, &mut src, &[Key::Char('m')]);
    let (left, right) = pair.parent.children().unwrap();
    assert_eq!(state.selected_address(), Some(left));
    let msg = state.message.clone().unwrap();
    assert!(
        msg.starts_with(&format!("next merge: {left} + {right} → {}", pair.parent)),
        "{msg}"
    );
    // Both lines are lines of the view state, siblings, the older first.
    assert!(state.in_view(left) && state.in_view(right) && left.sibling() == Some(right));
}

#[test]
fn delete_needs_two_presses_and_only_the_newest_entry() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    // topic-05's first version (entry 11) was rewritten: refused, naming the entry that replaced it.
    state.reveal(Address::entry(11).unwrap(), &mut src).unwrap();
    let replaced_by = state.selected_node().unwrap().entry.as_ref().unwrap().next.unwrap().0;
    press(&mut state, &mut src, &[Key::Char('d')]);
    let msg = state.message.clone().unwrap();
    assert!(
        msg.contains(&format!("replaced by entry {replaced_by} (→ {replaced_by})")),
        "{msg}"
    );
    assert!(state.armed.is_none());

    // short-late's entry is the newest of its memory: the first d arms, another key cancels.
    let entries = state.loaded.mechanism.status.entries;
    let short_late = state
        .loaded
        .mechanism
        .lines
        .iter()
        .copied()
        .find(|a| {
            src.nodes(&[*a]).unwrap()[0]
                .entry
                .as_ref()
                .is_some_and(|e| e.key.as_str() == "short-late")
        })
        .unwrap();
    assert!(state.select_address(short_late));
    press(&mut state, &mut src, &[Key::Char('d')]);
    assert!(
        state
            .message
            .clone()
            .unwrap()
            .starts_with("press d again to delete short-late")
    );
    press(&mut state, &mut src, &[Key::Down]);
    assert!(state.armed.is_none());
    assert!(state.select_address(short_late));
    press(&mut state, &mut src, &[Key::Char('d')]);
    assert_eq!(
        state.loaded.mechanism.status.entries, entries,
        "one press deletes nothing"
    );
    press(&mut state, &mut src, &[Key::Char('d')]);
    assert_eq!(
        state.message.as_deref(),
        Some(format!("deleted short-late: entry {entries} appended").as_str())
    );
    assert_eq!(state.loaded.mechanism.status.entries, entries + 1);
    let key = MemKey::parse_strict("short-late").unwrap();
    assert!(
        fx.svc
            .show(&fx.ctx, cao_memory::ShowRequest::key(&key, Some(Scope::Project)))
            .unwrap()
            .is_none()
    );
}

#[test]
fn purge_warns_then_purges_on_the_second_press() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    down_to_memory(&mut state, &mut src);
    assert_eq!(state.selected_address(), Some(Address::entry(0).unwrap()));
    press(&mut state, &mut src, &[Key::Char('x')]);
    assert!(
        state
            .message
            .clone()
            .unwrap()
            .starts_with("warning: purging short-0 cannot be undone: press x again to purge")
    );
    press(&mut state, &mut src, &[Key::Char('x')]);
    assert!(
        state
            .message
            .clone()
            .unwrap()
            .starts_with("purged short-0: 1 version(s) blanked")
    );
    let gone = src.nodes(&[Address::entry(0).unwrap()]).unwrap();
    assert!(gone[0].entry.as_ref().unwrap().purged);
    assert!(gone[0].entry.as_ref().unwrap().text.is_empty());
    // Every line from entry 0 on was dropped: the summarizer writes them again.
    assert!(state.loaded.mechanism.status.unwritten >= state.loaded.mechanism.status.entries - 1);
}

#[test]
fn y_copies_the_memory_or_the_line() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    press(&mut state, &mut src, &[Key::Char('y')]);
    let line = state.clipboard.take().unwrap();
    assert_eq!(Some(&line), state.selected_node().map(|n| &n.shown));
    down_to_memory(&mut state, &mut src);
    press(&mut state, &mut src, &[Key::Char('y')]);
    assert_eq!(state.clipboard.take().unwrap(), "# Short 0\nA short note number 0.");
}

#[test]
fn a_click_on_a_chevron_toggles_and_the_wheel_scrolls_the_pane_under_it() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    let first = state.selected_address().unwrap();
    let row = state.selected;
    state.click_row(row, true, &mut src);
    assert!(state.expanded.contains(&first));
    state.click_row(row + 1, false, &mut src);
    assert_eq!(state.selected, row + 1);
    assert_eq!(state.selected_address(), first.children().map(|c| c.0));
    state.click_row(row, true, &mut src);
    assert!(!state.expanded.contains(&first));
    state.wheel(Pane::Detail, 3);
    assert_eq!(state.detail_scroll, 3);
    state.wheel(Pane::Outline, 2);
    assert_eq!(state.selected, row + 2);
    // The footer's keys: a click on `m merge` runs m; the arrows are not clickable.
    assert_eq!(cao_tui::render::footer_key_at(0), None);
    let col = cao_tui::render::FOOTER_KEYS
        .iter()
        .take_while(|(l, _)| *l != "m merge")
        .map(|(l, _)| l.chars().count() as u16 + 2)
        .sum::<u16>();
    assert_eq!(cao_tui::render::footer_key_at(col), Some(Key::Char('m')));
}

#[test]
fn a_replaced_memory_is_dimmed_with_the_entry_that_replaced_it() {
    let fx = home(Settings::default());
    let mut src = source(&fx, Settings::default());
    let mut state = open(&mut src);
    state.reveal(Address::entry(11).unwrap(), &mut src).unwrap();
    let replaced_by = state.selected_node().unwrap().entry.as_ref().unwrap().next.unwrap().0;
    let mut terminal = Terminal::new(TestBackend::new(140, 36)).unwrap();
    let areas = cao_tui::render::layout(ratatui::layout::Rect::new(0, 0, 140, 36));
    state.page = cao_tui::render::outline_rows(&areas);
    state.keep_visible();
    terminal.draw(|f| cao_tui::render(&state, f)).unwrap();
    let buffer = terminal.backend().buffer();
    let text = crate::common::buffer_text(buffer);
    let needle = format!("→ {replaced_by} ");
    let (y, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(&needle) && l.contains("11+1"))
        .unwrap_or_else(|| panic!("no dimmed row for 11+1:\n{text}"));
    let x = line[..line.find(&needle).unwrap()].chars().count() as u16;
    assert!(buffer[(x, y as u16)].modifier.contains(Modifier::DIM), "{line}");
}
