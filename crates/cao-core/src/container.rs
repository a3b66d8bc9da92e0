//! Wiki containers: the top-level directory a memory's topic file lives under (`memory/<container>/wiki/`), and
//! the path-segment rule every container name and scope id follows.
//!
//! Rule: global, session and agent memories live in the `global` container, federated ones in `federated`, project
//! ones in the container named by their project id. A project id named `global` or `federated` shares that
//! container's directory (and `index.md`) with it, as in the reference; the scope directories inside never
//! collide.
//!
//! Source: spec 000 "Storage Layout"; spec/reference-facts.md "Layout".

use crate::scope::Scope;
use std::fmt;

/// Name of the container of global, session and agent memories.
pub const GLOBAL_CONTAINER: &str = "global";

/// Name of the container of federated memories.
pub const FEDERATED_CONTAINER: &str = "federated";

/// Whether `s` is a safe single path segment: 1..=255 bytes of `[A-Za-z0-9._-]`, not `.` or `..` (the reference's
/// `validate_path_component` rule, plus the usual file-name length limit). Container names, project ids and
/// session/agent scope ids on disk follow it.
pub fn is_safe_segment(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 255
        && s != "."
        && s != ".."
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

/// The name of a wiki container, as stored in `index.md` refresh marks and used as a directory name.
///
/// Built by [`Container::of`] (the layout rule) or [`Container::named`] (a stored name). A value is not validated:
/// path builders check it with [`is_safe_segment`] before use (a project memory without a project id has the
/// empty container, which no path accepts).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Container(String);

impl Container {
    /// The container of a memory of `scope` with `scope_id`: `global` for global, session and agent; `federated`
    /// for federated; the project id for project (empty when it is missing).
    pub fn of(scope: Scope, scope_id: Option<&str>) -> Container {
        Container(match scope {
            Scope::Global | Scope::Session | Scope::Agent => GLOBAL_CONTAINER.to_owned(),
            Scope::Federated => FEDERATED_CONTAINER.to_owned(),
            Scope::Project => scope_id.unwrap_or_default().to_owned(),
        })
    }

    /// A container by its stored name (a refresh mark, a directory found by a scan).
    pub fn named(name: impl Into<String>) -> Container {
        Container(name.into())
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name, owned.
    pub fn into_string(self) -> String {
        self.0
    }
}

impl fmt::Display for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for Container {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for Container {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for Container {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_follow_the_wiki_layout() {
        assert_eq!(Container::of(Scope::Session, Some("s1")), "global");
        assert_eq!(Container::of(Scope::Agent, Some("rev")), "global");
        assert_eq!(Container::of(Scope::Global, None), "global");
        assert_eq!(Container::of(Scope::Project, Some("p1")), "p1");
        assert_eq!(Container::of(Scope::Federated, None), "federated");
        assert_eq!(Container::of(Scope::Project, None), "", "no project id, no container");
        assert_eq!(Container::named("p1"), Container::of(Scope::Project, Some("p1")));
    }

    #[test]
    fn safe_segments() {
        for ok in ["a", "proj-1.x_y", &"a".repeat(255)] {
            assert!(is_safe_segment(ok), "{ok}");
        }
        for bad in ["", ".", "..", "a/b", "a b", "é", &"a".repeat(256)] {
            assert!(!is_safe_segment(bad), "{bad:?}");
        }
    }
}
