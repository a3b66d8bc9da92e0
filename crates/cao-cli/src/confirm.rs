//! Confirmation of destructive commands (`delete`, `clear`).
//!
//! Rule: `--yes` skips the question; otherwise the question is asked only when stdin is a terminal. Without a
//! terminal and without `--yes` the command is refused as a usage error (exit 2) *before* anything is opened, so a
//! script or CI job never blocks waiting on stdin and never deletes by accident.

use crate::error::CliError;
use std::io::{BufRead, IsTerminal, Write};

/// Where the question is asked and answered.
pub(crate) trait Prompter {
    /// Whether a person can answer (stdin is a terminal).
    fn interactive(&self) -> bool;
    /// Print `question [y/N]: ` and read one answer line. `Ok(None)` on end of input.
    ///
    /// Errors: reading or writing the terminal fails.
    fn ask(&mut self, question: &str) -> std::io::Result<Option<String>>;
}

/// The process terminal: the question goes to stderr (stdout stays data only), the answer comes from stdin.
#[derive(Debug, Default)]
pub(crate) struct StdTerminal;

impl Prompter for StdTerminal {
    fn interactive(&self) -> bool {
        std::io::stdin().is_terminal()
    }

    fn ask(&mut self, question: &str) -> std::io::Result<Option<String>> {
        let mut err = std::io::stderr().lock();
        write!(err, "{question} [y/N]: ")?;
        err.flush()?;
        let mut line = String::new();
        let n = std::io::stdin().lock().read_line(&mut line)?;
        Ok(if n == 0 { None } else { Some(line) })
    }
}

/// Ask `question` unless `yes`; `action` names what is refused (`delete`, `clear`).
///
/// Errors: [`CliError::Usage`] when not interactive and not `yes`; [`CliError::Aborted`] when the answer is not
/// `y`/`yes` (any case) or input ends; [`CliError::Failure`] when the terminal cannot be read.
pub(crate) fn confirm(prompter: &mut dyn Prompter, question: &str, yes: bool, action: &str) -> Result<(), CliError> {
    if yes {
        return Ok(());
    }
    if !prompter.interactive() {
        return Err(CliError::Usage(format!(
            "refusing to {action} without confirmation; pass --yes (stdin is not a terminal)"
        )));
    }
    match prompter.ask(question) {
        Ok(Some(answer)) if matches!(answer.trim().to_ascii_lowercase().as_str(), "y" | "yes") => Ok(()),
        Ok(_) => Err(CliError::Aborted),
        Err(e) => Err(CliError::failure(format!("cannot read the confirmation answer: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Scripted {
        interactive: bool,
        answer: Option<&'static str>,
        asked: Vec<String>,
    }

    impl Prompter for Scripted {
        fn interactive(&self) -> bool {
            self.interactive
        }
        fn ask(&mut self, q: &str) -> std::io::Result<Option<String>> {
            self.asked.push(q.to_owned());
            Ok(self.answer.map(str::to_owned))
        }
    }

    fn p(interactive: bool, answer: Option<&'static str>) -> Scripted {
        Scripted {
            interactive,
            answer,
            asked: Vec::new(),
        }
    }

    #[test]
    fn yes_never_asks() {
        let mut t = p(false, None);
        assert_eq!(confirm(&mut t, "Delete?", true, "delete"), Ok(()));
        assert!(t.asked.is_empty());
    }

    #[test]
    fn no_terminal_refuses_without_asking() {
        let mut t = p(false, Some("y\n"));
        let e = confirm(&mut t, "Delete?", false, "delete").expect_err("refused");
        assert!(matches!(&e, CliError::Usage(m) if m.contains("pass --yes")), "{e:?}");
        assert!(t.asked.is_empty());
    }

    #[test]
    fn only_y_or_yes_confirms() {
        for (answer, ok) in [
            (Some("y\n"), true),
            (Some("YES\n"), true),
            (Some("n\n"), false),
            (Some("\n"), false),
            (None, false),
        ] {
            let mut t = p(true, answer);
            let r = confirm(&mut t, "Delete memory 'k'?", false, "delete");
            assert_eq!(r.is_ok(), ok, "{answer:?}");
            if !ok {
                assert_eq!(r, Err(CliError::Aborted));
            }
            assert_eq!(t.asked, vec!["Delete memory 'k'?".to_owned()]);
        }
    }
}
