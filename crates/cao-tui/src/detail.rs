//! The detail pane's content for the selected line, as plain lines of text (spec 001 "The inspector"): the range of
//! entries, the dates, the size out of 512 B, who wrote it; the sentence placing it in the mechanism; its text; and
//! the drawing of the tree around it (boxes, or with `ui.tree_drawing = off` the outline's tree lines).

use crate::state::State;
use cao_journal::{Address, EntryStatus, LINE_MAX_BYTES, Node};
use cao_store::EntryKind;

/// Most boxes the tree drawing holds (spec 001: "at most 7 boxes").
pub const TREE_MAX_BOXES: usize = 7;

/// Date format of the detail pane.
const DATE: &str = "%Y-%m-%d %H:%M";

/// The detail pane for the selected line: header lines, the placing sentence, the text, and the tree (each a
/// section of plain lines).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Detail {
    /// Range, dates, size and writer.
    pub facts: Vec<String>,
    /// The sentence placing the line in the mechanism.
    pub placing: String,
    /// The line's text (an entry: the memory's text at that version). Untrusted.
    pub text: String,
    /// The tree drawing.
    pub tree: Vec<String>,
}

/// Who wrote a line, as the pane says it.
fn writer_of(node: &Node) -> String {
    match &node.line {
        Some(l) if l.writer == cao_journal::render::WRITER_VERBATIM => "kept verbatim (it fits in 512 B)".to_owned(),
        Some(l) if l.writer == cao_journal::render::WRITER_EXTRACTIVE => {
            "cut by the offline extractive rule (no model)".to_owned()
        }
        Some(l) => format!("summarized by {}", l.writer),
        None if node.being_written => "being written now".to_owned(),
        None => "not summarized yet".to_owned(),
    }
}

/// The detail of the selected line of `state`, `None` when no line is selected.
pub fn detail(state: &State) -> Option<Detail> {
    let node = state.selected_node()?;
    let a = node.address;
    let range = if a.is_entry() {
        format!("entry {}", a.id())
    } else {
        format!("entries {}–{}", a.id(), a.end() - 1)
    };
    let dates = if node.first_at == node.last_at {
        node.first_at.format(DATE).to_string()
    } else {
        format!("{} – {}", node.first_at.format(DATE), node.last_at.format(DATE))
    };
    let size = node.line.as_ref().map_or(0, |l| l.text.len());
    let facts = vec![
        format!("{a} · {range} · {dates}"),
        format!("{size} / {LINE_MAX_BYTES} B · {}", writer_of(node)),
    ];
    let mut placing = placing(state, node);
    if let Some(entry) = &node.entry {
        let w = &entry.writer;
        let mut who = Vec::new();
        if let Some(t) = &w.terminal_id {
            who.push(format!("terminal {t}"));
        }
        if let Some(s) = &w.session {
            who.push(format!("session {s}"));
        }
        // The process only when nothing else names the writer (a pid says little once the process is gone).
        if who.is_empty()
            && let Some(p) = w.pid
        {
            who.push(format!("process {p}"));
        }
        let who = if who.is_empty() {
            "an unknown writer".to_owned()
        } else {
            who.join(", ")
        };
        let name = cao_journal::render::entry_name(entry);
        let kind = match entry.kind {
            EntryKind::Note => "note",
            EntryKind::Delete => "delete",
        };
        let newest = match (EntryStatus::of(entry), entry.next) {
            (EntryStatus::Purged, _) => format!("{name} was purged: its text is blank in every version."),
            (_, Some((n, EntryKind::Note))) => {
                format!("Not the newest entry of {name}: rewritten by entry {n} (→ {n}).")
            }
            (_, Some((n, EntryKind::Delete))) => {
                format!("Not the newest entry of {name}: deleted by entry {n} (→ {n}).")
            }
            (_, None) if entry.kind == EntryKind::Delete => format!("The newest entry of {name}: it is deleted."),
            (_, None) => format!("The newest entry of {name}: its current text."),
        };
        placing.push_str(&format!(
            " A {kind} of {name} written by {who} on {}. {newest}",
            entry.at.format(DATE)
        ));
    }
    let text = match &node.entry {
        Some(e) if e.kind == EntryKind::Note && !e.purged => e.text.clone(),
        _ => node.shown.clone(),
    };
    let tree = if state.loaded.tree_drawing {
        draw_boxes(state, a)
    } else {
        draw_lines(state, a)
    };
    Some(Detail {
        facts,
        placing,
        text,
        tree,
    })
}

/// The sentence placing `node` in the mechanism (spec 001 "The inspector"): for a view line what it merges with
/// next or what it waits for; below the view the view line that holds it and the zoom that opens it.
pub fn placing(state: &State, node: &Node) -> String {
    let a = node.address;
    let m = &state.loaded.mechanism;
    if !state.in_view(a) {
        return match state.holder_of(a).and_then(|h| h.zoom_path(a).map(|p| (h, p))) {
            Some((h, path)) if h != a => {
                let mut zooms = vec![h];
                zooms.extend(path);
                format!(
                    "Below the view: view line {h} holds it; {}.",
                    crate::state::zoom_path_text(&zooms)
                )
            }
            Some(_) => "A line of the session's view (no longer a line of the live view).".to_owned(),
            None => "Not under any line shown in this mode.".to_owned(),
        };
    }
    let mut out = if state.left_out(a) {
        String::from(
            "A view line left out of the view until summaries are written (the lines add up to more than 32 KiB). ",
        )
    } else {
        String::from("A view line. ")
    };
    if node.line.is_none() {
        out.push_str(if node.being_written {
            "Its summary is being written now. "
        } else if state.loaded.summarize {
            "It waits for its summary (pending). "
        } else {
            "It waits for its summary, and summarizing is off. "
        });
    }
    let (Some(sibling), Some(parent)) = (a.sibling(), a.parent()) else {
        out.push_str("It covers the whole journal.");
        return out;
    };
    if let Some(rank) = m.pairs.iter().position(|p| p.parent == parent) {
        let pair = m.pairs[rank];
        let order = if rank == 0 {
            "the next pair to merge".to_owned()
        } else {
            format!("number {} in merge order", rank + 1)
        };
        if pair.ready {
            out.push_str(&format!(
                "It merges with {sibling} into {parent} when the view needs room ({order}; {parent} is written)."
            ));
        } else {
            out.push_str(&format!(
                "It merges with {sibling} into {parent} once {parent} is written ({order})."
            ));
        }
    } else if sibling.end() > m.status.entries {
        out.push_str(&format!(
            "Its sibling {sibling} is not complete: it waits for entries up to {} before merging into {parent}.",
            sibling.end() - 1
        ));
    } else {
        out.push_str(&format!(
            "It waits for the lines of {sibling} to merge back into {sibling} before merging with it into {parent}."
        ));
    }
    out
}

/// How a box is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BoxKind {
    /// A view line: double border.
    View,
    /// A written line: square corners.
    Written,
    /// A line still waiting for its text: round corners, dotted edge into it.
    Waiting,
}

fn box_kind(state: &State, a: Address) -> BoxKind {
    if state.in_view(a) {
        return BoxKind::View;
    }
    // Lines not read yet count as waiting ([`State`] reads the neighbourhood of the selection after each input).
    let written = state.nodes.get(&a).is_some_and(|n| n.line.is_some());
    if written { BoxKind::Written } else { BoxKind::Waiting }
}

/// The lines around a selection: above it (grandparent, parent), itself, its sibling, its two children.
type Around = (Vec<Address>, Address, Option<Address>, Option<(Address, Address)>);

/// The boxes around `a`: its grandparent and parent (when inside the journal), itself and its sibling, its two
/// children. At most [`TREE_MAX_BOXES`].
fn neighbourhood(state: &State, a: Address) -> Around {
    neighbourhood_in(state.loaded.mechanism.status.entries, a)
}

/// Every line of the drawing around `a` in a journal of `entries` entries.
pub(crate) fn neighbours(entries: u64, a: Address) -> Vec<Address> {
    let (above, sel, sibling, children) = neighbourhood_in(entries, a);
    let mut all = above;
    all.push(sel);
    all.extend(sibling);
    if let Some((l, r)) = children {
        all.extend([l, r]);
    }
    all
}

fn neighbourhood_in(n: u64, a: Address) -> Around {
    let mut above = Vec::new();
    let parent = a.parent().filter(|p| p.end() <= n);
    if let Some(p) = parent {
        if let Some(g) = p.parent().filter(|g| g.end() <= n) {
            above.push(g);
        }
        above.push(p);
    }
    let sibling = parent.and(a.sibling());
    (above, a, sibling, a.children())
}

fn label(a: Address, selected: Address) -> String {
    if a == selected {
        format!("‹{a}›")
    } else {
        format!(" {a} ")
    }
}

/// A canvas of characters.
struct Canvas {
    rows: Vec<Vec<char>>,
}

impl Canvas {
    fn new(height: usize, width: usize) -> Canvas {
        Canvas {
            rows: vec![vec![' '; width]; height],
        }
    }

    fn put(&mut self, row: usize, col: usize, c: char) {
        if let Some(cell) = self.rows.get_mut(row).and_then(|r| r.get_mut(col)) {
            *cell = c;
        }
    }

    fn text(&mut self, row: usize, col: usize, s: &str) {
        for (i, c) in s.chars().enumerate() {
            self.put(row, col + i, c);
        }
    }

    /// A box of width `w` with its left edge at `x`, rows `y..y+3`.
    fn boxed(&mut self, y: usize, x: usize, w: usize, kind: BoxKind, text: &str) {
        let (tl, tr, bl, br, h, v) = match kind {
            BoxKind::View => ('╔', '╗', '╚', '╝', '═', '║'),
            BoxKind::Written => ('┌', '┐', '└', '┘', '─', '│'),
            BoxKind::Waiting => ('╭', '╮', '╰', '╯', '─', '│'),
        };
        self.put(y, x, tl);
        self.put(y, x + w - 1, tr);
        self.put(y + 2, x, bl);
        self.put(y + 2, x + w - 1, br);
        for i in 1..w - 1 {
            self.put(y, x + i, h);
            self.put(y + 2, x + i, h);
        }
        self.put(y + 1, x, v);
        self.put(y + 1, x + w - 1, v);
        let pad = (w - 2).saturating_sub(text.chars().count()) / 2;
        self.text(y + 1, x + 1 + pad, text);
    }

    fn lines(self) -> Vec<String> {
        self.rows
            .into_iter()
            .map(|r| r.into_iter().collect::<String>().trim_end().to_owned())
            .collect()
    }
}

/// The tree around `a` as boxes (spec 001: a view line double-bordered, a line still waiting with a dotted edge
/// into it, the selection between ‹ and ›).
pub fn draw_boxes(state: &State, a: Address) -> Vec<String> {
    let (above, sel, sibling, children) = neighbourhood(state, a);
    let mut all: Vec<Address> = above.clone();
    all.push(sel);
    all.extend(sibling);
    if let Some((l, r)) = children {
        all.extend([l, r]);
    }
    debug_assert!(all.len() <= TREE_MAX_BOXES);
    let w = all.iter().map(|x| label(*x, sel).chars().count()).max().unwrap_or(5) + 2;
    let step = w + 2;
    // Columns (left edges): the selection's children at 0 and `step`; the selection centred over them; its
    // sibling one subtree away on its side.
    let sel_sub = if children.is_some() { 2 * step } else { step };
    let sel_left_of_sibling = sibling.is_none_or(|s| a.id() < s.id());
    let (sub_x, sib_x) = if sel_left_of_sibling { (0, sel_sub) } else { (step, 0) };
    let sel_x = if children.is_some() { sub_x + step / 2 } else { sub_x };
    let centre = |x: usize| x + w / 2;
    let parent_x = match sibling {
        Some(_) => (sel_x + sib_x) / 2,
        None => sel_x,
    };
    let levels = above.len() + 1 + usize::from(children.is_some());
    let height = levels * 3 + (levels - 1);
    let width = sub_x.max(sib_x) + sel_sub.max(step) + w;
    let mut c = Canvas::new(height, width);
    let mut y = 0;
    // Above: grandparent then parent, stacked over the parent's column.
    for (i, up) in above.iter().enumerate() {
        c.boxed(y, parent_x, w, box_kind(state, *up), &label(*up, sel));
        y += 3;
        let next_is_pair = i + 1 == above.len();
        if next_is_pair {
            // Edges from the parent down to the selection and its sibling.
            let targets: Vec<(usize, BoxKind)> = std::iter::once((sel_x, box_kind(state, sel)))
                .chain(sibling.map(|s| (sib_x, box_kind(state, s))))
                .collect();
            edges(
                &mut c,
                y,
                centre(parent_x),
                &targets.iter().map(|(x, k)| (centre(*x), *k)).collect::<Vec<_>>(),
            );
        } else {
            let k = box_kind(state, above[i + 1]);
            c.put(y, centre(parent_x), if k == BoxKind::Waiting { '┆' } else { '│' });
        }
        y += 1;
    }
    c.boxed(y, sel_x, w, box_kind(state, sel), &label(sel, sel));
    if let Some(s) = sibling {
        c.boxed(y, sib_x, w, box_kind(state, s), &label(s, sel));
    }
    y += 3;
    if let Some((l, r)) = children {
        let targets = [
            (centre(sub_x), box_kind(state, l)),
            (centre(sub_x + step), box_kind(state, r)),
        ];
        edges(&mut c, y, centre(sel_x), &targets);
        y += 1;
        c.boxed(y, sub_x, w, box_kind(state, l), &label(l, sel));
        c.boxed(y, sub_x + step, w, box_kind(state, r), &label(r, sel));
    }
    c.lines()
}

/// One row of edges from a parent at column `from` to children at the columns given (dotted into a waiting line).
fn edges(c: &mut Canvas, y: usize, from: usize, targets: &[(usize, BoxKind)]) {
    for &(x, kind) in targets {
        let dotted = kind == BoxKind::Waiting;
        let (lo, hi) = if x < from { (x, from) } else { (from, x) };
        for col in lo + 1..hi {
            c.put(y, col, if dotted { '┄' } else { '─' });
        }
        let corner = match (x.cmp(&from), dotted) {
            (std::cmp::Ordering::Less, false) => '┌',
            (std::cmp::Ordering::Greater, false) => '┐',
            (std::cmp::Ordering::Equal, false) => '│',
            (std::cmp::Ordering::Less, true) => '╭',
            (std::cmp::Ordering::Greater, true) => '╮',
            (std::cmp::Ordering::Equal, true) => '┆',
        };
        c.put(y, x, corner);
    }
    if targets.iter().any(|(x, _)| *x != from) {
        c.put(y, from, '┴');
    }
}

/// The tree around `a` with the outline's tree lines (`ui.tree_drawing = off`).
pub fn draw_lines(state: &State, a: Address) -> Vec<String> {
    let (above, sel, sibling, children) = neighbourhood(state, a);
    let mark = |x: Address| {
        let l = if x == sel { format!("‹{x}›") } else { x.to_string() };
        match box_kind(state, x) {
            BoxKind::View => format!("{l} (view)"),
            BoxKind::Waiting => format!("{l} (waiting)"),
            BoxKind::Written => l,
        }
    };
    let mut out = Vec::new();
    let mut indent = String::new();
    for up in &above {
        if out.is_empty() {
            out.push(mark(*up));
        } else {
            out.push(format!("{indent}└─ {}", mark(*up)));
            indent.push_str("   ");
        }
    }
    let mut pair: Vec<Address> = std::iter::once(sel).chain(sibling).collect();
    pair.sort();
    let top = out.is_empty();
    for (i, x) in pair.iter().enumerate() {
        let last = i + 1 == pair.len();
        let (branch, cont) = if top {
            (String::new(), String::new())
        } else if last {
            ("└─ ".to_owned(), "   ".to_owned())
        } else {
            ("├─ ".to_owned(), "│  ".to_owned())
        };
        out.push(format!("{indent}{branch}{}", mark(*x)));
        if *x == sel
            && let Some((l, r)) = children
        {
            out.push(format!("{indent}{cont}├─ {}", mark(l)));
            out.push(format!("{indent}{cont}└─ {}", mark(r)));
        }
    }
    out
}
