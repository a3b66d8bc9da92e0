//! The terminal loop: raw mode and the alternate screen (restored on every exit path, a panic included), crossterm
//! events mapped to the state machine's keys and clicks, the spinner's tick, the journal read again every
//! [`RELOAD_EVERY`] while summaries are pending, OSC 52 for `y`, and `$EDITOR` for Enter on a memory.

use crate::error::TuiError;
use crate::render::{Areas, chevron_column, footer_key_at, layout, outline_rows, render};
use crate::source::Source;
use crate::state::{Key, Pane, RELOAD_EVERY, Row, State};
use crossterm::event::{
    self, DisableMouseCapture, EnableMouseCapture, Event, KeyCode, KeyEventKind, KeyModifiers, MouseButton, MouseEvent,
    MouseEventKind,
};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Position, Rect};
use std::io::{Stdout, Write};
use std::time::{Duration, Instant};

/// How long one wait for input lasts (the spinner's frame time).
const TICK: Duration = Duration::from_millis(120);

/// Restores the terminal when dropped.
struct Guard;

impl Guard {
    fn enter() -> Result<Guard, TuiError> {
        enable_raw_mode()?;
        let guard = Guard;
        execute!(std::io::stdout(), EnterAlternateScreen, EnableMouseCapture)?;
        Ok(guard)
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        // Nothing more can be done when the terminal refuses; the shell's `reset` repairs it.
        let _ = execute!(std::io::stdout(), DisableMouseCapture, LeaveAlternateScreen);
        let _ = disable_raw_mode();
    }
}

/// Map a crossterm key to the inspector's (`None`: ignored). Ctrl-C closes.
pub fn map_key(code: KeyCode, modifiers: KeyModifiers) -> Option<Key> {
    Some(match code {
        KeyCode::Char('c') if modifiers.contains(KeyModifiers::CONTROL) => Key::Char('q'),
        KeyCode::Up => Key::Up,
        KeyCode::Down => Key::Down,
        KeyCode::PageUp => Key::PageUp,
        KeyCode::PageDown => Key::PageDown,
        KeyCode::Home => Key::Home,
        KeyCode::End => Key::End,
        KeyCode::Right => Key::Right,
        KeyCode::Left => Key::Left,
        KeyCode::Enter => Key::Enter,
        KeyCode::Esc => Key::Esc,
        KeyCode::Backspace => Key::Backspace,
        KeyCode::Char(c) => Key::Char(c),
        _ => return None,
    })
}

/// Apply a mouse event at the screen of size `screen` (spec 001: a click selects a row, a click on a chevron
/// expands or collapses, the wheel scrolls the pane under the pointer, a click on a footer key runs it).
pub fn mouse(state: &mut State, ev: MouseEvent, screen: Rect, source: &mut dyn Source) {
    let areas: Areas = layout(screen);
    let at = Position::new(ev.column, ev.row);
    let inner_outline = areas.outline.inner(ratatui::layout::Margin::new(1, 1));
    match ev.kind {
        MouseEventKind::ScrollDown | MouseEventKind::ScrollUp => {
            let delta = if ev.kind == MouseEventKind::ScrollDown { 1 } else { -1 };
            if areas.detail.contains(at) {
                state.wheel(Pane::Detail, delta);
            } else if areas.outline.contains(at) {
                state.wheel(Pane::Outline, delta);
                state.prefetch(source);
            }
        }
        MouseEventKind::Down(MouseButton::Left) => {
            if inner_outline.contains(at) {
                let row = state.scroll + usize::from(ev.row - inner_outline.y);
                let col = usize::from(ev.column - inner_outline.x);
                let on_chevron = match state.rows.get(row) {
                    Some(Row::Line { depth, .. }) => col == chevron_column(*depth),
                    _ => false,
                };
                state.click_row(row, on_chevron, source);
            } else if areas.footer.contains(at)
                && let Some(key) = footer_key_at(ev.column - areas.footer.x)
            {
                state.key(key, source);
            }
        }
        _ => {}
    }
}

/// Run the inspector on the terminal until it closes.
///
/// Errors: the first read of the source; terminal I/O errors.
pub fn run(source: &mut dyn Source) -> Result<(), TuiError> {
    let mut state = State::open(source)?;
    let mut guard = Some(Guard::enter()?);
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut last_read = Instant::now();
    while !state.quit {
        let size = terminal.size()?;
        let screen = Rect::new(0, 0, size.width, size.height);
        state.page = outline_rows(&layout(screen)).max(1);
        state.keep_visible();
        terminal.draw(|f| render(&state, f))?;
        if event::poll(TICK)? {
            match event::read()? {
                Event::Key(k) if k.kind != KeyEventKind::Release => {
                    if let Some(key) = map_key(k.code, k.modifiers) {
                        state.key(key, source);
                    }
                }
                Event::Mouse(m) => mouse(&mut state, m, screen, source),
                _ => {}
            }
        } else {
            state.tick = state.tick.wrapping_add(1);
        }
        if state.needs_reload() && last_read.elapsed() >= RELOAD_EVERY {
            state.reload(source);
            last_read = Instant::now();
        }
        if let Some(text) = state.clipboard.take() {
            copy(terminal.backend_mut(), &text)?;
        }
        if let Some(path) = state.open.take() {
            match std::env::var_os("EDITOR").filter(|e| !e.is_empty()) {
                Some(editor) => {
                    drop(guard.take());
                    let status = std::process::Command::new(&editor).arg(&path).status();
                    guard = Some(Guard::enter()?);
                    terminal.clear()?;
                    state.message = Some(match status {
                        Ok(s) if s.success() => format!("edited {}", path.display()),
                        Ok(s) => format!("the editor exited with {s}"),
                        Err(e) => format!("cannot run $EDITOR: {e}"),
                    });
                    state.reload(source);
                }
                None => state.message = Some(format!("{} (set $EDITOR to open it here)", path.display())),
            }
        }
    }
    drop(guard);
    Ok(())
}

/// Copy `text` to the terminal's clipboard with OSC 52.
fn copy(out: &mut CrosstermBackend<Stdout>, text: &str) -> Result<(), TuiError> {
    execute!(out, crossterm::clipboard::CopyToClipboard::to_clipboard_from(text))?;
    out.flush()?;
    Ok(())
}
