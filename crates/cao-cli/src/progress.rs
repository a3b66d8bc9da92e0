//! The progress bar of long `cao memory` commands (export, import, lint, heal): drawn on stderr only when stderr is
//! a terminal and a phase has more than [`PROGRESS_MIN`] steps, so pipes, files and tests see none; stdout never
//! carries it.

use cao_memory::Progress;
use std::io::IsTerminal;

/// Fewest steps (files, topics, memories) that get a progress bar.
pub(crate) const PROGRESS_MIN: u64 = 300;

/// A progress bar on stderr, drawn only when stderr is a terminal and a phase has more than [`PROGRESS_MIN`] steps.
pub(crate) struct Bar {
    terminal: bool,
    bar: std::cell::RefCell<Option<indicatif::ProgressBar>>,
}

impl Bar {
    /// A bar for this process's stderr (inactive when stderr is not a terminal).
    pub(crate) fn for_stderr() -> Bar {
        Bar {
            terminal: std::io::stderr().is_terminal(),
            bar: std::cell::RefCell::new(None),
        }
    }
}

impl Progress for Bar {
    fn start(&self, phase: &str, total: u64) {
        if !self.terminal || total <= PROGRESS_MIN {
            return;
        }
        let bar = indicatif::ProgressBar::with_draw_target(Some(total), indicatif::ProgressDrawTarget::stderr());
        if let Ok(style) = indicatif::ProgressStyle::with_template("{msg} {wide_bar} {pos}/{len} ({eta})") {
            bar.set_style(style);
        }
        bar.set_message(phase.to_owned());
        *self.bar.borrow_mut() = Some(bar);
    }

    fn advance(&self, n: u64) {
        if let Some(bar) = self.bar.borrow().as_ref() {
            bar.inc(n);
        }
    }

    fn finish(&self) {
        if let Some(bar) = self.bar.borrow_mut().take() {
            bar.finish_and_clear();
        }
    }
}
