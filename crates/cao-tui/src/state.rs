//! The inspector's state machine: what is loaded, which lines are expanded, the selection, the search, the armed
//! delete or purge, and the message line. Every input is a method taking the [`Source`] it may need; nothing here
//! touches the terminal, so tests drive it with key presses and render it on a test backend.

use crate::error::TuiError;
use crate::source::{Hit, Loaded, Source};
use cao_journal::{Address, Node};
use cao_store::{EntryKind, EntryRow, SnapshotRow};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

/// How often the inspector reads the journal again while a line waits for its summary or is being written
/// (spec 001 "The inspector": every 2 seconds).
pub const RELOAD_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// A key the inspector understands (the terminal loop maps crossterm's events to these).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Key {
    /// ↑
    Up,
    /// ↓
    Down,
    /// PgUp
    PageUp,
    /// PgDn
    PageDown,
    /// Home
    Home,
    /// End
    End,
    /// →
    Right,
    /// ←
    Left,
    /// Enter
    Enter,
    /// Esc
    Esc,
    /// Backspace (search input)
    Backspace,
    /// A printable character.
    Char(char),
}

/// Which view the outline shows (spec 001 "The inspector", key s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// The current view.
    Live,
    /// The view a session's snapshot froze, then the entries since. `session` indexes [`Loaded::sessions`]; `None`
    /// when no session has taken a snapshot yet.
    Session {
        /// Which session.
        session: Option<usize>,
    },
}

/// How an entry after a session's snapshot reached that session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Since {
    /// Through the `# Memory updated` reminder (written elsewhere).
    Reminder,
    /// The session wrote it itself.
    WrittenHere,
}

impl Since {
    /// `reminder` or `written here`.
    pub fn as_str(self) -> &'static str {
        match self {
            Since::Reminder => "reminder",
            Since::WrittenHere => "written here",
        }
    }
}

/// One row of the outline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Row {
    /// A line of the tree at `depth` (0 for a line of the view or of the session's list).
    Line {
        /// Its address.
        address: Address,
        /// 0 for a top line, +1 per expansion.
        depth: usize,
        /// In "This session" mode, how an entry after the snapshot reached the session.
        since: Option<Since>,
        /// The text the session's snapshot froze for a top line (the live text may differ).
        frozen: Option<String>,
    },
    /// A line of text that is not a tree line (the omission notice, "no request prepared yet").
    Notice(String),
}

impl Row {
    /// The address of a line row.
    pub fn address(&self) -> Option<Address> {
        match self {
            Row::Line { address, .. } => Some(*address),
            Row::Notice(_) => None,
        }
    }
}

/// A destructive action armed by its first key press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Armed {
    /// `d` pressed once on this entry.
    Delete(u64),
    /// `x` pressed once on this entry (after the warning).
    Purge(u64),
}

/// The search box and its hits.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Search {
    /// The query typed.
    pub query: String,
    /// True while the query is being typed (Enter runs it).
    pub editing: bool,
    /// Hits of the last run, best first.
    pub hits: Vec<Hit>,
    /// The hit selected.
    pub selected: usize,
    /// Whether the query ran (to say "no match").
    pub ran: bool,
}

/// Which pane the pointer or the keys scroll.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    /// The outline.
    Outline,
    /// The detail pane.
    Detail,
}

/// Everything the screen shows.
#[derive(Debug, Clone)]
pub struct State {
    /// The last read of the mechanism.
    pub loaded: Loaded,
    /// Lines read so far, by address (refreshed on each reload).
    pub nodes: HashMap<Address, Node>,
    /// The mode.
    pub mode: Mode,
    /// The session's entries since its snapshot ("This session").
    pub session_entries: Vec<(EntryRow, Since)>,
    /// Expanded lines.
    pub expanded: HashSet<Address>,
    /// The outline's rows, top to bottom.
    pub rows: Vec<Row>,
    /// The selected row.
    pub selected: usize,
    /// The first outline row shown.
    pub scroll: usize,
    /// Lines the detail pane is scrolled by.
    pub detail_scroll: u16,
    /// The search, while open.
    pub search: Option<Search>,
    /// The zoom path of the hit revealed last: the view line holding it, then each line zoom opens, down to it.
    pub revealed: Option<Vec<Address>>,
    /// A destructive action waiting for its second press.
    pub armed: Option<Armed>,
    /// The message line.
    pub message: Option<String>,
    /// Animation frame of the spinner (the terminal loop advances it).
    pub tick: u64,
    /// Set when the inspector should close.
    pub quit: bool,
    /// Text to copy to the terminal's clipboard (OSC 52); the terminal loop takes it.
    pub clipboard: Option<String>,
    /// A memory file to open in `$EDITOR` (or whose path to print); the terminal loop takes it.
    pub open: Option<PathBuf>,
    /// Rows the outline shows at once (set by the terminal loop from the last draw; PgUp/PgDn move by it).
    pub page: usize,
}

/// The spinner's frames (a line being written).
pub const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

impl State {
    /// Read the source and build the first screen: Live mode, the first line selected.
    ///
    /// Errors: the source's (the inspector cannot start without its first read).
    pub fn open(source: &mut dyn Source) -> Result<State, TuiError> {
        let loaded = source.load()?;
        let mut state = State {
            loaded,
            nodes: HashMap::new(),
            mode: Mode::Live,
            session_entries: Vec::new(),
            expanded: HashSet::new(),
            rows: Vec::new(),
            selected: 0,
            scroll: 0,
            detail_scroll: 0,
            search: None,
            revealed: None,
            armed: None,
            message: None,
            tick: 0,
            quit: false,
            clipboard: None,
            open: None,
            page: 20,
        };
        state.rebuild(source)?;
        state.prefetch(source);
        Ok(state)
    }

    /// Read the lines the detail pane's drawing needs around the selection (those not read yet).
    pub fn prefetch(&mut self, source: &mut dyn Source) {
        let Some(a) = self.selected_address() else { return };
        let missing: Vec<Address> = crate::detail::neighbours(self.loaded.mechanism.status.entries, a)
            .into_iter()
            .filter(|x| !self.nodes.contains_key(x))
            .collect();
        if missing.is_empty() {
            return;
        }
        match source.nodes(&missing) {
            Ok(nodes) => {
                for n in nodes {
                    self.nodes.insert(n.address, n);
                }
            }
            Err(e) => self.message = Some(e.to_string()),
        }
    }

    /// Whether a line waits for its summary or is being written (then the loop reloads every [`RELOAD_EVERY`]).
    pub fn needs_reload(&self) -> bool {
        let s = &self.loaded.mechanism.status;
        s.unwritten > 0 || s.in_progress > 0
    }

    /// Read the source again, keeping the selection on the same line when it still exists.
    pub fn reload(&mut self, source: &mut dyn Source) {
        let keep = self.selected_address();
        match source.load() {
            Ok(loaded) => {
                self.loaded = loaded;
                self.nodes.clear();
                if let Err(e) = self.rebuild(source) {
                    self.message = Some(e.to_string());
                }
                if let Some(a) = keep {
                    self.select_address(a);
                }
                self.prefetch(source);
            }
            Err(e) => self.message = Some(e.to_string()),
        }
    }

    /// The selected row's address.
    pub fn selected_address(&self) -> Option<Address> {
        self.rows.get(self.selected).and_then(Row::address)
    }

    /// The selected line, when read.
    pub fn selected_node(&self) -> Option<&Node> {
        self.selected_address().and_then(|a| self.nodes.get(&a))
    }

    /// The session shown in "This session" mode.
    pub fn session(&self) -> Option<&SnapshotRow> {
        match self.mode {
            Mode::Session { session: Some(i) } => self.loaded.sessions.get(i),
            _ => None,
        }
    }

    /// The top lines: the view's (Live) or the snapshot's lines then the entries since (This session).
    pub fn top_lines(&self) -> Vec<Address> {
        self.rows
            .iter()
            .filter_map(|r| match r {
                Row::Line { address, depth: 0, .. } => Some(*address),
                _ => None,
            })
            .collect()
    }

    /// The top line holding `address`, if any.
    pub fn holder_of(&self, address: Address) -> Option<Address> {
        self.top_lines().into_iter().find(|t| t.contains(address))
    }

    /// Whether `address` is a line of the live view state (shown, or left out while summaries are pending).
    pub fn in_view(&self, address: Address) -> bool {
        self.loaded.mechanism.lines.contains(&address)
    }

    /// Whether `address` is a line of the view state that the view leaves out (summaries pending).
    pub fn left_out(&self, address: Address) -> bool {
        address.end() <= self.loaded.mechanism.view.left_out && self.in_view(address)
    }

    /// Rebuild the rows from the mode and the expanded lines, reading the lines not read yet.
    fn rebuild(&mut self, source: &mut dyn Source) -> Result<(), TuiError> {
        let mut rows = Vec::new();
        match self.mode {
            Mode::Live => {
                // The view as the model reads it; while entries are left out, the notice, then the left-out lines
                // of the view state (the model does not see them until their summaries are written), then the
                // lines shown.
                let m = &self.loaded.mechanism;
                if m.view.left_out > 0 {
                    rows.push(Row::Notice(cao_journal::render::omission_notice(m.view.left_out)));
                }
                for a in &m.lines {
                    self.push_tree(&mut rows, *a, 0, None, None);
                }
            }
            Mode::Session { session } => {
                self.session_entries.clear();
                match session.and_then(|i| self.loaded.sessions.get(i)).cloned() {
                    None => rows.push(Row::Notice(
                        "No request has been prepared yet: a session's view is frozen at its first turn.".to_owned(),
                    )),
                    Some(snap) => {
                        let lines = cao_journal::parse_view(&snap.view);
                        // The snapshot's omission notice, when it left entries out, as the model read it.
                        if let Some(notice) = snap.view.lines().nth(1).filter(|l| l.starts_with('(')) {
                            rows.push(Row::Notice(notice.to_owned()));
                        }
                        if lines.is_empty() {
                            rows.push(Row::Notice(if snap.taken_at_entry == 0 {
                                format!("Session {} started with an empty view.", snap.session_id)
                            } else {
                                format!("The view session {} took was withdrawn by a purge.", snap.session_id)
                            }));
                        }
                        for (a, text) in lines {
                            self.push_tree(&mut rows, a, 0, None, Some(text));
                        }
                        let since = source.entries_since(snap.taken_at_entry)?;
                        if !since.is_empty() {
                            rows.push(Row::Notice(format!(
                                "Since the snapshot (entry {} on):",
                                snap.taken_at_entry
                            )));
                        }
                        for e in since {
                            let how = if cao_journal::written_by_session(&e.writer, &snap.session_id) {
                                Since::WrittenHere
                            } else {
                                Since::Reminder
                            };
                            let a = Address::entry(e.id).map_err(|e| TuiError::Invalid(e.to_string()))?;
                            self.session_entries.push((e, how));
                            self.push_tree(&mut rows, a, 0, Some(how), None);
                        }
                    }
                }
            }
        }
        self.rows = rows;
        let missing: Vec<Address> = self
            .rows
            .iter()
            .filter_map(Row::address)
            .filter(|a| !self.nodes.contains_key(a))
            .collect();
        if !missing.is_empty() {
            for n in source.nodes(&missing)? {
                self.nodes.insert(n.address, n);
            }
        }
        if self.selected >= self.rows.len() {
            self.selected = self.rows.len().saturating_sub(1);
        }
        if self.rows.get(self.selected).is_some_and(|r| r.address().is_none())
            && let Some(i) = self.rows.iter().position(|r| r.address().is_some())
        {
            self.selected = i;
        }
        self.keep_visible();
        Ok(())
    }

    fn push_tree(
        &self,
        rows: &mut Vec<Row>,
        address: Address,
        depth: usize,
        since: Option<Since>,
        frozen: Option<String>,
    ) {
        rows.push(Row::Line {
            address,
            depth,
            since,
            frozen,
        });
        if self.expanded.contains(&address)
            && let Some((l, r)) = address.children()
        {
            self.push_tree(rows, l, depth + 1, None, None);
            self.push_tree(rows, r, depth + 1, None, None);
        }
    }

    /// Keep the selected row inside the shown page.
    pub fn keep_visible(&mut self) {
        let page = self.page.max(1);
        if self.selected < self.scroll {
            self.scroll = self.selected;
        } else if self.selected >= self.scroll + page {
            self.scroll = self.selected + 1 - page;
        }
    }

    fn select(&mut self, i: usize) {
        if self.rows.is_empty() {
            return;
        }
        let mut i = i.min(self.rows.len() - 1);
        // A notice is not selectable: the nearest line row after it, else before it.
        if self.rows[i].address().is_none() {
            match (
                self.rows[i..].iter().position(|r| r.address().is_some()),
                self.rows[..i].iter().rposition(|r| r.address().is_some()),
            ) {
                (Some(k), _) => i += k,
                (None, Some(k)) => i = k,
                (None, None) => {}
            }
        }
        if i != self.selected {
            self.armed = None;
            self.detail_scroll = 0;
            self.revealed = None;
        }
        self.selected = i;
        self.keep_visible();
    }

    /// Select the row of `address` when it is shown; returns whether it was.
    pub fn select_address(&mut self, address: Address) -> bool {
        match self.rows.iter().position(|r| r.address() == Some(address)) {
            Some(i) => {
                self.select(i);
                true
            }
            None => false,
        }
    }

    fn move_by(&mut self, delta: isize) {
        let i = self.selected.saturating_add_signed(delta);
        self.select(i);
    }

    fn toggle(&mut self, address: Address, source: &mut dyn Source) {
        if address.is_entry() {
            return;
        }
        if !self.expanded.remove(&address) {
            self.expanded.insert(address);
        }
        if let Err(e) = self.rebuild(source) {
            self.message = Some(e.to_string());
        }
        self.select_address(address);
    }

    /// Handle one key press.
    pub fn key(&mut self, key: Key, source: &mut dyn Source) {
        self.key_inner(key, source);
        self.prefetch(source);
    }

    fn key_inner(&mut self, key: Key, source: &mut dyn Source) {
        if let Some(search) = self.search.as_mut() {
            if search.editing {
                match key {
                    Key::Char(c) if !c.is_control() => search.query.push(c),
                    Key::Backspace => {
                        search.query.pop();
                    }
                    Key::Enter => self.run_search(source),
                    Key::Esc => self.search = None,
                    _ => {}
                }
                return;
            }
            match key {
                Key::Up => {
                    search.selected = search.selected.saturating_sub(1);
                    return;
                }
                Key::Down => {
                    if search.selected + 1 < search.hits.len() {
                        search.selected += 1;
                    }
                    return;
                }
                Key::Enter => {
                    self.reveal_selected_hit(source);
                    return;
                }
                Key::Esc => {
                    self.search = None;
                    return;
                }
                Key::Char('/') => {
                    search.editing = true;
                    return;
                }
                _ => {}
            }
        }
        let keep_armed = matches!(
            (key, self.armed),
            (Key::Char('d'), Some(Armed::Delete(_))) | (Key::Char('x'), Some(Armed::Purge(_)))
        );
        if !keep_armed && self.armed.take().is_some() {
            self.message = Some("cancelled".to_owned());
        }
        match key {
            Key::Up => self.move_by(-1),
            Key::Down => self.move_by(1),
            Key::PageUp => self.move_by(-(self.page.max(1) as isize)),
            Key::PageDown => self.move_by(self.page.max(1) as isize),
            Key::Home => {
                self.select(0);
                self.scroll = 0;
            }
            Key::End => self.select(usize::MAX),
            Key::Right => self.right(source),
            Key::Left => self.left(source),
            Key::Enter => self.enter(source),
            Key::Esc if self.revealed.take().is_some() => {}
            Key::Esc => self.quit = true,
            Key::Char('/') => {
                self.search = Some(Search {
                    editing: true,
                    ..Search::default()
                })
            }
            Key::Char('m') => self.next_merge(),
            Key::Char('s') => self.switch_mode(source),
            Key::Char('y') => self.copy(),
            Key::Char('d') => self.delete(source),
            Key::Char('x') => self.purge(source),
            Key::Char('q') => self.quit = true,
            _ => {}
        }
    }

    fn right(&mut self, source: &mut dyn Source) {
        let Some(a) = self.selected_address() else { return };
        if a.is_entry() {
            return;
        }
        if self.expanded.contains(&a) {
            self.move_by(1);
        } else {
            self.toggle(a, source);
        }
    }

    fn left(&mut self, source: &mut dyn Source) {
        let Some(a) = self.selected_address() else { return };
        if self.expanded.contains(&a) {
            self.toggle(a, source);
            return;
        }
        let depth = match &self.rows[self.selected] {
            Row::Line { depth, .. } => *depth,
            Row::Notice(_) => 0,
        };
        if depth == 0 {
            return;
        }
        if let Some(parent) = a.parent() {
            self.select_address(parent);
        }
    }

    fn enter(&mut self, source: &mut dyn Source) {
        let Some(a) = self.selected_address() else { return };
        if !a.is_entry() {
            self.toggle(a, source);
            return;
        }
        let Some(entry) = self.nodes.get(&a).and_then(|n| n.entry.clone()) else {
            return;
        };
        match source.memory_path(&entry) {
            Some(path) if path.exists() && entry.next.is_none() => self.open = Some(path),
            Some(path) => {
                self.message = Some(format!(
                    "{} has no current file here (this version is {}); its path is {}",
                    cao_journal::render::entry_name(&entry),
                    cao_journal::EntryStatus::of(&entry).as_str(),
                    path.display()
                ))
            }
            None => self.message = Some("this memory has no file".to_owned()),
        }
    }

    fn run_search(&mut self, source: &mut dyn Source) {
        let Some(search) = self.search.as_mut() else { return };
        if search.query.trim().is_empty() {
            return;
        }
        match source.search(&search.query) {
            Ok(hits) => {
                search.hits = hits;
                search.selected = 0;
                search.editing = false;
                search.ran = true;
            }
            Err(e) => self.message = Some(e.to_string()),
        }
    }

    fn reveal_selected_hit(&mut self, source: &mut dyn Source) {
        let Some(hit) = self.search.as_ref().and_then(|s| s.hits.get(s.selected)).cloned() else {
            return;
        };
        let Some(entry) = hit.newest_entry else {
            self.message = Some(match &hit.vault {
                Some(v) => format!(
                    "{} is the vault note {}: vault notes have no journal entries",
                    hit.key,
                    cao_core::display::blank(&v.source_path)
                ),
                None => format!("{} has no entry in this journal", hit.key),
            });
            return;
        };
        let Ok(target) = Address::entry(entry) else { return };
        if let Err(e) = self.reveal(target, source) {
            self.message = Some(e);
            return;
        }
        self.search = None;
    }

    /// Expand the outline down to `target` and select it; records and announces the zoom path.
    ///
    /// Errors: a message when no top line holds `target` (it is outside the mode's view).
    pub fn reveal(&mut self, target: Address, source: &mut dyn Source) -> Result<(), String> {
        let holder = self
            .holder_of(target)
            .ok_or_else(|| format!("{target} is not under any line shown in this mode"))?;
        let path = holder
            .zoom_path(target)
            .ok_or_else(|| format!("{holder} does not hold {target}"))?;
        let mut zooms = vec![holder];
        zooms.extend(path.iter().copied());
        for a in &zooms {
            if *a != target {
                self.expanded.insert(*a);
            }
        }
        if let Err(e) = self.rebuild(source) {
            return Err(e.to_string());
        }
        self.select_address(target);
        self.message = Some(zoom_path_text(&zooms));
        self.revealed = Some(zooms);
        Ok(())
    }

    fn next_merge(&mut self) {
        let over_budget = self.loaded.mechanism.over_budget;
        let Some(pair) = self.loaded.mechanism.pairs.first().copied() else {
            self.message = Some("no two sibling lines are both in the view: nothing can merge yet".to_owned());
            return;
        };
        let Some((left, right)) = pair.parent.children() else {
            return;
        };
        if !self.select_address(left) {
            self.message = Some(format!(
                "the next pair to merge, {left} + {right}, is not shown in this mode (s)"
            ));
            return;
        }
        let state = if pair.ready {
            if over_budget {
                "ready; it merges now that the view is over 32 KiB"
            } else {
                "ready; it merges when the view needs room"
            }
        } else {
            "it waits for its line to be written"
        };
        self.message = Some(format!("next merge: {left} + {right} → {} ({state})", pair.parent));
    }

    fn switch_mode(&mut self, source: &mut dyn Source) {
        self.mode = match self.mode {
            Mode::Live => Mode::Session {
                session: (!self.loaded.sessions.is_empty()).then_some(0),
            },
            Mode::Session { session: Some(i) } if i + 1 < self.loaded.sessions.len() => {
                Mode::Session { session: Some(i + 1) }
            }
            Mode::Session { .. } => Mode::Live,
        };
        self.selected = 0;
        self.scroll = 0;
        self.revealed = None;
        if let Err(e) = self.rebuild(source) {
            self.message = Some(e.to_string());
        }
    }

    fn copy(&mut self) {
        let Some(node) = self.selected_node() else { return };
        // The clipboard is pasted into shells and editors: the text goes neutralised ([`cao_core::display::escape`]),
        // so a memory holding `ESC [201~` cannot end a bracketed paste early, nor any other control sequence run.
        let text = match &node.entry {
            Some(e) if e.kind == EntryKind::Note && !e.purged => cao_core::display::escape(&e.text).into_owned(),
            _ => cao_core::display::escape(&node.shown).into_owned(),
        };
        self.message = Some(format!(
            "copied {} bytes of {} to the clipboard",
            text.len(),
            node.address
        ));
        self.clipboard = Some(text);
    }

    /// The selected entry, when it is the newest entry of its memory; else a message saying why not.
    fn newest_entry(&self, what: &str) -> Result<EntryRow, String> {
        let node = self
            .selected_node()
            .ok_or_else(|| format!("select a memory to {what}"))?;
        let entry = node.entry.clone().ok_or_else(|| {
            format!(
                "{} is a summary line: expand it down to a memory to {what}",
                node.address
            )
        })?;
        if let Some((next, _)) = entry.next {
            return Err(format!(
                "{what} works only on the newest entry of a memory: this version was replaced by entry {next} (→ {next})"
            ));
        }
        if entry.purged {
            return Err(format!("{} is already purged", cao_journal::render::entry_name(&entry)));
        }
        Ok(entry)
    }

    fn delete(&mut self, source: &mut dyn Source) {
        let entry = match self.newest_entry("delete") {
            Ok(e) => e,
            Err(m) => {
                self.message = Some(m);
                return;
            }
        };
        let name = cao_journal::render::entry_name(&entry);
        if entry.kind == EntryKind::Delete {
            self.message = Some(format!("{name} is already deleted (x purges its earlier versions)"));
            return;
        }
        if self.armed != Some(Armed::Delete(entry.id)) {
            self.armed = Some(Armed::Delete(entry.id));
            self.message = Some(format!(
                "press d again to delete {name} (its versions stay in the journal); any other key cancels"
            ));
            return;
        }
        self.armed = None;
        self.message = Some(match source.delete(&entry) {
            Ok(m) => m,
            Err(e) => e.to_string(),
        });
        self.reload(source);
    }

    fn purge(&mut self, source: &mut dyn Source) {
        let entry = match self.newest_entry("purge") {
            Ok(e) => e,
            Err(m) => {
                self.message = Some(m);
                return;
            }
        };
        let name = cao_journal::render::entry_name(&entry);
        if self.armed != Some(Armed::Purge(entry.id)) {
            self.armed = Some(Armed::Purge(entry.id));
            self.message = Some(format!(
                "warning: purging {name} cannot be undone: press x again to purge, any other key cancels. It \
                 erases the note's text from every version and drops every summary line that may hold it"
            ));
            return;
        }
        self.armed = None;
        self.message = Some(match source.purge(&entry) {
            Ok(m) => m,
            Err(e) => e.to_string(),
        });
        self.reload(source);
    }

    /// A mouse click on outline row `row` (an index into [`State::rows`]); `on_chevron` when it hit the chevron.
    pub fn click_row(&mut self, row: usize, on_chevron: bool, source: &mut dyn Source) {
        if row >= self.rows.len() {
            return;
        }
        self.armed = None;
        self.select(row);
        if on_chevron && let Some(a) = self.selected_address() {
            self.toggle(a, source);
        }
        self.prefetch(source);
    }

    /// The mouse wheel over `pane`: `delta` rows down (negative: up).
    pub fn wheel(&mut self, pane: Pane, delta: isize) {
        match pane {
            Pane::Outline => self.move_by(delta),
            Pane::Detail => {
                self.detail_scroll = self.detail_scroll.saturating_add_signed(delta as i16);
            }
        }
    }
}

/// The zoom path sentence: `4 zooms from the view: 368+8 › 372+4 › 374+2 › 375+1` (spec 001 "The inspector").
pub fn zoom_path_text(zooms: &[Address]) -> String {
    let path = zooms.iter().map(Address::to_string).collect::<Vec<_>>().join(" › ");
    let n = zooms.len();
    format!("{n} zoom{} from the view: {path}", if n == 1 { "" } else { "s" })
}
