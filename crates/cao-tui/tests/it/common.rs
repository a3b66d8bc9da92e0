//! A home with a journal in every state the inspector draws, and a test terminal.
//!
//! Events, in order (clock fixed at 2026-01-01T00:00:00Z, one minute per write):
//! 1. `short-0` .. `short-5`: short notes (their lines are kept word for word);
//! 2. `topic-00` .. `topic-89`: long notes (summarized by the fake model `openai:fake`, ~420-byte answers), enough
//!    for the view to pass 32 KiB so older lines merge;
//! 3. a summarizing pass until idle; then session `sess-a` takes its snapshot;
//! 4. `short-late` written by `sess-a` (written here), `topic-05` rewritten by another caller (its old version is
//!    replaced), `topic-late` written by another caller and leased by a summarizer (being written).

use cao_core::{Settings, TerminalContext};
use cao_journal::Address;
use cao_memory::JournalTarget;
use cao_model::{Completion, Limits, Model, ModelError, ModelInfo, ModelProvider, Prompt};
use cao_testkit::service::RawStorage;
use cao_testkit::service::{ServiceFixture, utc};
use cao_tui::{LocalSource, Source, State};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use std::time::Duration;

/// The project of the fixture.
pub(crate) const PROJECT: &str = "proj-a";

/// A model whose answer is a deterministic ~420-byte text naming the notes of its prompt.
#[derive(Debug)]
pub(crate) struct FakeSummaries {
    info: ModelInfo,
}

impl FakeSummaries {
    pub(crate) fn new() -> FakeSummaries {
        FakeSummaries {
            info: ModelInfo {
                provider: ModelProvider::OpenAi,
                name: "fake".to_owned(),
            },
        }
    }
}

impl Model for FakeSummaries {
    fn info(&self) -> &ModelInfo {
        &self.info
    }

    fn complete(&self, prompt: &Prompt, limits: &Limits) -> Result<Completion, ModelError> {
        let text = prompt.to_text();
        let mut names: Vec<&str> = text
            .split_whitespace()
            .filter(|w| w.starts_with("topic-") || w.starts_with("short-"))
            .map(|w| w.trim_end_matches(':'))
            .collect();
        names.dedup();
        let mut out = format!("about {}", names.join(" "));
        while out.len() < 420 {
            out.push_str(" filler");
        }
        out.truncate(420.min(limits.max_output_bytes));
        Ok(Completion {
            text: out,
            model: self.info.clone(),
            truncated: false,
            usage: None,
        })
    }
}

fn long_note(i: usize) -> String {
    let mut s = format!("# Topic {i:02}\n\nTopic {i:02} holds the rule number {i} of the build.");
    while s.len() < 640 {
        s.push_str(" It is long enough to need a summary line.");
    }
    s
}

/// The fixture home (see the module docs) with `settings`.
pub(crate) fn home(settings: Settings) -> ServiceFixture {
    let fx = ServiceFixture::builder()
        .at(utc(2026, 1, 1, 0, 0, 0))
        .project(PROJECT)
        .terminal("term-main")
        .settings(settings)
        .open();
    let tick = || fx.clock.advance(chrono::Duration::minutes(1));
    for i in 0..6 {
        fx.store(
            "project",
            &format!("short-{i}"),
            &format!("# Short {i}\nA short note number {i}."),
        );
        tick();
    }
    for i in 0..90 {
        fx.store("project", &format!("topic-{i:02}"), &long_note(i));
        tick();
    }
    let model = FakeSummaries::new();
    let worker = cao_journal::Worker::new(Duration::from_secs(5));
    for _ in 0..10_000 {
        let report = fx.svc.summarize_pass(&model, &worker).expect("summarize");
        if report.idle() {
            break;
        }
    }
    fx.svc
        .session(&fx.ctx, &JournalTarget::default(), "sess-a")
        .take_snapshot()
        .expect("snapshot");
    tick();
    let session = TerminalContext {
        session_name: Some("sess-a".to_owned()),
        ..fx.ctx.clone()
    };
    fx.store_as(
        &session,
        "project",
        "short-late",
        "# Short late\nWritten by the session itself.",
    );
    tick();
    let other = TerminalContext {
        terminal_id: Some("term-other".to_owned()),
        ..fx.ctx.clone()
    };
    fx.store_as(
        &other,
        "project",
        "topic-05",
        "# Topic 05\nRewritten: the rule changed.",
    );
    tick();
    let late = fx.store_as(&other, "project", "topic-late", &long_note(99));
    let id = late.journal_entry.expect("entry");
    let now = fx.clock_now();
    let taken = fx
        .svc
        .raw_index()
        .journal_write::<bool, cao_index::IndexError>(|j| {
            j.lease_claim(
                PROJECT,
                id,
                1,
                "holder-1",
                now.timestamp_millis(),
                now.timestamp_millis() + 600_000,
            )
        })
        .expect("lease");
    assert!(taken, "the lease on topic-late's line is taken");
    fx
}

/// Trait to read the fixture clock.
pub(crate) trait ClockNow {
    fn clock_now(&self) -> chrono::DateTime<chrono::Utc>;
}

impl ClockNow for ServiceFixture {
    fn clock_now(&self) -> chrono::DateTime<chrono::Utc> {
        cao_core::Clock::now(self.clock.as_ref())
    }
}

/// A source over the fixture's service (a fresh service on the same home, clock and settings).
pub(crate) fn source(fx: &ServiceFixture, settings: Settings) -> LocalSource {
    LocalSource::new(fx.reopen(settings), fx.ctx.clone(), JournalTarget::default())
}

/// Draw `state` on a `width` x `height` test terminal and return the screen as text (one line per row, trailing
/// spaces trimmed).
pub(crate) fn screen(state: &mut State, width: u16, height: u16) -> String {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("terminal");
    let areas = cao_tui::render::layout(ratatui::layout::Rect::new(0, 0, width, height));
    state.page = cao_tui::render::outline_rows(&areas);
    state.keep_visible();
    terminal.draw(|f| cao_tui::render(state, f)).expect("draw");
    buffer_text(terminal.backend().buffer())
}

/// The buffer as text.
pub(crate) fn buffer_text(buffer: &ratatui::buffer::Buffer) -> String {
    let area = buffer.area;
    let mut out = String::new();
    for y in 0..area.height {
        let mut line = String::new();
        for x in 0..area.width {
            line.push_str(buffer[(x, y)].symbol());
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Open the inspector on the fixture.
pub(crate) fn open(src: &mut dyn Source) -> State {
    State::open(src).expect("open")
}

/// Press `keys` in order.
pub(crate) fn press(state: &mut State, src: &mut dyn Source, keys: &[cao_tui::Key]) {
    for k in keys {
        state.key(*k, src);
    }
}

/// Expand from the selection down to its first memory with →.
pub(crate) fn down_to_memory(state: &mut State, src: &mut dyn Source) {
    for _ in 0..64 {
        if state.selected_address().is_some_and(Address::is_entry) {
            return;
        }
        state.key(cao_tui::Key::Right, src);
    }
    panic!("no memory reached");
}
