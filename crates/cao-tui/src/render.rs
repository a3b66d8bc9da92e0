//! Drawing the inspector: [`render`] is a pure function of the [`State`] and the frame's size, and [`layout`] gives
//! the areas it uses, so the terminal loop hit-tests mouse clicks against the same rectangles.
//!
//! Screen: a header (container, mode, entries, view lines, the 32 KiB gauge, summarizing and pending lines, or
//! `summarizing off`), the outline and the detail pane (beside it from [`WIDE_MIN_COLUMNS`] columns, below it on a
//! narrower terminal), the message line and the footer of keys. Memory text is untrusted: control characters are
//! shown as spaces (ratatui draws text cell by cell, so no escape sequence reaches the terminal).

use crate::detail::detail;
use crate::state::{Mode, Row, SPINNER, State};
use cao_journal::{Address, EntryStatus, VIEW_MAX_BYTES};
use ratatui::Frame;
use ratatui::layout::{Constraint, Direction, Layout, Rect};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Gauge, List, ListItem, Paragraph, Wrap};

/// Terminals at least this wide put the detail pane beside the outline.
pub const WIDE_MIN_COLUMNS: u16 = 120;

/// The footer's keys, in order: what is shown and the key it runs (`None`: not clickable, the arrows).
pub const FOOTER_KEYS: &[(&str, Option<crate::state::Key>)] = {
    use crate::state::Key;
    &[
        ("↑↓ move", None),
        ("→← open/close", None),
        ("⏎ expand", Some(Key::Enter)),
        ("/ search", Some(Key::Char('/'))),
        ("m merge", Some(Key::Char('m'))),
        ("s mode", Some(Key::Char('s'))),
        ("y copy", Some(Key::Char('y'))),
        ("d delete", Some(Key::Char('d'))),
        ("x purge", Some(Key::Char('x'))),
        ("Esc close", Some(Key::Esc)),
    ]
};

/// The screen's areas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    /// Header (2 rows).
    pub header: Rect,
    /// The outline, with its border.
    pub outline: Rect,
    /// The detail pane, with its border.
    pub detail: Rect,
    /// The message line.
    pub message: Rect,
    /// The footer of keys.
    pub footer: Rect,
    /// Whether the detail pane is beside the outline.
    pub wide: bool,
}

/// The areas of a screen of size `area`.
pub fn layout(area: Rect) -> Areas {
    let rows = Layout::default()
        .direction(Direction::Vertical)
        .constraints([
            Constraint::Length(2),
            Constraint::Min(4),
            Constraint::Length(1),
            Constraint::Length(1),
        ])
        .split(area);
    let wide = area.width >= WIDE_MIN_COLUMNS;
    let body = Layout::default()
        .direction(if wide {
            Direction::Horizontal
        } else {
            Direction::Vertical
        })
        .constraints([Constraint::Percentage(50), Constraint::Percentage(50)])
        .split(rows[1]);
    Areas {
        header: rows[0],
        outline: body[0],
        detail: body[1],
        message: rows[2],
        footer: rows[3],
        wide,
    }
}

/// Rows of the outline shown at once in `areas` (inside the border).
pub fn outline_rows(areas: &Areas) -> usize {
    usize::from(areas.outline.height.saturating_sub(2))
}

/// The footer key at column `x` of the footer, if any (the arrows are not clickable).
pub fn footer_key_at(x: u16) -> Option<crate::state::Key> {
    let mut col = 0u16;
    for (label, key) in FOOTER_KEYS {
        let w = label.chars().count() as u16;
        if x >= col && x < col + w {
            return *key;
        }
        col += w + 2;
    }
    None
}

/// Text with unsafe characters (controls, bidi overrides and isolates) shown as spaces (memory text is untrusted;
/// [`cao_core::display::blank`]).
fn clean(s: &str) -> String {
    cao_core::display::blank(s).into_owned()
}

/// The bar after an address: one block per level (`n = 2^level`), so wider lines have longer bars.
pub fn level_bar(a: Address) -> String {
    let level = a.n().trailing_zeros() as usize;
    "▮".repeat(level.min(16))
}

/// The mark of a line: ● summarized (a model or the offline rule), ○ kept word for word, ◌ not summarized yet, a
/// spinner frame while it is being written.
pub fn mark(state: &State, a: Address) -> char {
    match state.nodes.get(&a) {
        Some(n) if n.being_written => SPINNER[(state.tick % SPINNER.len() as u64) as usize],
        Some(n) => match &n.line {
            Some(l) if l.writer == cao_journal::render::WRITER_VERBATIM => '○',
            Some(_) => '●',
            None => '◌',
        },
        None => '◌',
    }
}

/// The chevron of a row: ▸ closed, ▾ open, nothing for a memory.
fn chevron(state: &State, a: Address) -> char {
    if a.is_entry() {
        ' '
    } else if state.expanded.contains(&a) {
        '▾'
    } else {
        '▸'
    }
}

/// Columns before a row's chevron at `depth` (the indentation); the chevron is the cell after it.
pub fn chevron_column(depth: usize) -> usize {
    depth * 2
}

fn outline_item(state: &State, row: &Row) -> ListItem<'static> {
    match row {
        Row::Notice(text) => ListItem::new(Line::from(Span::styled(
            clean(text),
            Style::default().add_modifier(Modifier::ITALIC),
        ))),
        Row::Line {
            address,
            depth,
            since,
            frozen,
        } => {
            let node = state.nodes.get(address);
            let text = frozen
                .clone()
                .or_else(|| node.map(|n| n.shown.clone()))
                .unwrap_or_default();
            let replaced = node
                .and_then(|n| n.entry.as_ref())
                .and_then(|e| e.next.map(|(id, _)| id));
            let purged = node.and_then(|n| n.status()) == Some(EntryStatus::Purged);
            let mut spans = vec![Span::raw(format!(
                "{}{} {} {:>9} {:<6} ",
                " ".repeat(chevron_column(*depth)),
                chevron(state, *address),
                mark(state, *address),
                address.to_string(),
                level_bar(*address),
            ))];
            if state.left_out(*address) && *depth == 0 {
                spans.push(Span::styled(
                    "[left out] ",
                    Style::default().add_modifier(Modifier::DIM),
                ));
            }
            if let Some(s) = since {
                spans.push(Span::styled(
                    format!("[{}] ", s.as_str()),
                    Style::default().add_modifier(Modifier::BOLD),
                ));
            }
            let dim = replaced.is_some() || purged;
            let style = if dim {
                Style::default().add_modifier(Modifier::DIM)
            } else {
                Style::default()
            };
            spans.push(Span::styled(clean(&text), style));
            if let Some(id) = replaced {
                spans.insert(
                    1,
                    Span::styled(format!("→ {id} "), Style::default().add_modifier(Modifier::DIM)),
                );
            }
            ListItem::new(Line::from(spans))
        }
    }
}

fn header(state: &State) -> Vec<Line<'static>> {
    let m = &state.loaded.mechanism;
    let mode = match &state.mode {
        Mode::Live => "Live".to_owned(),
        Mode::Session { .. } => match state.session() {
            Some(s) => format!("This session: {}", clean(&s.session_id)),
            None => "This session".to_owned(),
        },
    };
    let summarizing = if state.loaded.summarize {
        format!("summarizing {} · pending {}", m.status.in_progress, m.status.unwritten)
    } else {
        format!("summarizing off · pending {}", m.status.unwritten)
    };
    vec![
        Line::from(vec![
            Span::styled("memory inspector", Style::default().add_modifier(Modifier::BOLD)),
            Span::raw(format!(" · {} · {mode}", state.loaded.container)),
        ]),
        Line::from(format!(
            "{} · {} · {summarizing}",
            plural(m.status.entries, "entry", "entries"),
            plural(m.view.lines.len() as u64, "view line", "view lines"),
        )),
    ]
}

/// `1 entry`, `2 entries`.
fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Columns of the header's gauge when there is room for it beside the counts.
const GAUGE_WIDTH: u16 = 34;
/// The narrowest gauge drawn (its label, `view 32.0 / 32 KiB`, needs 18 columns).
const GAUGE_MIN_WIDTH: u16 = 20;

/// Draw `state` on `frame`.
pub fn render(state: &State, frame: &mut Frame) {
    let areas = layout(frame.area());
    // Header: two text lines, the gauge on the right of the second. When the counts need the whole width (a narrow
    // terminal), the gauge moves up beside the title with the room that leaves, and is dropped below 20 columns:
    // it never hides the counts.
    let header = header(state);
    let area = areas.header;
    let title_width = u16::try_from(header[0].width()).unwrap_or(u16::MAX);
    let counts_width = u16::try_from(header[1].width()).unwrap_or(u16::MAX);
    let gauge_rect = if counts_width.saturating_add(GAUGE_WIDTH) <= area.width {
        Some(Rect::new(area.right() - GAUGE_WIDTH, area.y + 1, GAUGE_WIDTH, 1))
    } else {
        let room = area
            .width
            .saturating_sub(title_width.saturating_add(1))
            .min(GAUGE_WIDTH);
        (room >= GAUGE_MIN_WIDTH).then(|| Rect::new(area.right() - room, area.y, room, 1))
    };
    frame.render_widget(Paragraph::new(header), area);
    let used = state.loaded.mechanism.view.text.len();
    if let Some(gauge_rect) = gauge_rect {
        frame.render_widget(Clear, gauge_rect);
        frame.render_widget(
            Gauge::default()
                .ratio((used as f64 / VIEW_MAX_BYTES as f64).clamp(0.0, 1.0))
                .label(format!("view {:.1} / 32 KiB", used as f64 / 1024.0)),
            gauge_rect,
        );
    }

    // Outline.
    let shown = outline_rows(&areas);
    let items: Vec<ListItem> = state
        .rows
        .iter()
        .enumerate()
        .skip(state.scroll)
        .take(shown)
        .map(|(i, r)| {
            let item = outline_item(state, r);
            if i == state.selected {
                item.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                item
            }
        })
        .collect();
    let title = match state.mode {
        Mode::Live => " the view, in the order the model reads it ",
        Mode::Session { .. } => " the session's view, then the entries since ",
    };
    frame.render_widget(
        List::new(items).block(Block::default().borders(Borders::ALL).title(title)),
        areas.outline,
    );

    // Detail or search results.
    frame.render_widget(Clear, areas.detail);
    if let Some(search) = &state.search {
        let mut lines = vec![Line::from(format!(
            "/{}{}",
            clean(&search.query),
            if search.editing { "▏" } else { "" }
        ))];
        if search.ran && search.hits.is_empty() {
            lines.push(Line::from("no memory matches"));
        }
        for (i, h) in search.hits.iter().enumerate() {
            let entry = match (&h.vault, h.newest_entry) {
                (Some(v), _) => format!(
                    "vault note {}, {}",
                    clean(&v.source_path),
                    if v.stale { "stale" } else { "fresh" }
                ),
                (None, Some(e)) => format!("entry {e}"),
                (None, None) => "no entry here".to_owned(),
            };
            let line = Line::from(format!("{} ({entry}): {}", h.key, clean(&h.matching_line)));
            lines.push(if i == search.selected && !search.editing {
                line.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                line
            });
        }
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .block(Block::default().borders(Borders::ALL).title(" search (Enter reveals) ")),
            areas.detail,
        );
    } else {
        let mut lines: Vec<Line> = Vec::new();
        if let Some(d) = detail(state) {
            lines.extend(d.facts.iter().map(|f| Line::from(clean(f))));
            lines.push(Line::from(""));
            lines.push(Line::from(clean(&d.placing)));
            lines.push(Line::from(""));
            lines.extend(clean_lines(&d.text).into_iter().map(Line::from));
            lines.push(Line::from(""));
            lines.extend(d.tree.into_iter().map(Line::from));
        }
        frame.render_widget(
            Paragraph::new(lines)
                .wrap(Wrap { trim: false })
                .scroll((state.detail_scroll, 0))
                .block(Block::default().borders(Borders::ALL).title(" detail ")),
            areas.detail,
        );
    }

    // Message and footer.
    if let Some(m) = &state.message {
        frame.render_widget(Paragraph::new(clean(m)), areas.message);
    }
    let footer: Vec<Span> = FOOTER_KEYS
        .iter()
        .flat_map(|(label, _)| [Span::raw(*label), Span::raw("  ")])
        .collect();
    frame.render_widget(Paragraph::new(Line::from(footer)), areas.footer);
}

/// A text's lines with control characters as spaces (newlines kept as line breaks).
fn clean_lines(text: &str) -> Vec<String> {
    text.lines().map(clean).collect()
}
