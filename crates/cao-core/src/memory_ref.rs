//! Memory identities: [`MemoryRef`] names one memory by `(scope, scope_id, key)`, [`SourceKind`] names the backend
//! a row comes from. Together they are the index's unique identity `(key, scope, scope_id, source_kind)`.
//!
//! Text form (journal addresses, archive paths, URLs, reports): `scope/scope_id/key`, or `scope/key` for global and
//! federated memories, which have no scope id. A scope id never contains `/` (it is a safe path segment), so the
//! form parses back unambiguously ([`MemoryRef::from_str`](std::str::FromStr)).

use crate::container::{Container, is_safe_segment};
use crate::error::CoreError;
use crate::key::Key;
use crate::scope::Scope;
use std::fmt;
use std::str::FromStr;

/// The identity of one memory: where it lives and its key.
///
/// `scope_id` is the project id, session name or agent profile, and `None` for global and federated memories (the
/// fields are public and not checked against each other; [`MemoryRef::from_str`](std::str::FromStr) checks them).
/// Ordered by scope, then scope id (`None` first), then key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MemoryRef {
    /// Where the memory lives.
    pub scope: Scope,
    /// Project id, session name or agent profile; `None` for global and federated.
    pub scope_id: Option<String>,
    /// The key.
    pub key: Key,
}

impl MemoryRef {
    /// The identity `(scope, scope_id, key)`.
    pub fn new(scope: Scope, scope_id: Option<String>, key: Key) -> MemoryRef {
        MemoryRef { scope, scope_id, key }
    }

    /// The wiki container the memory's topic file lives in ([`Container::of`]).
    pub fn container(&self) -> Container {
        Container::of(self.scope, self.scope_id.as_deref())
    }

    /// The scope id as a string slice.
    pub fn scope_id(&self) -> Option<&str> {
        self.scope_id.as_deref()
    }
}

/// The text form of an identity given by its parts (`scope/scope_id/key`, or `scope/key` without a scope id), for
/// callers that hold the parts rather than a [`MemoryRef`]; [`MemoryRef`]'s `Display` is this.
pub fn label<'a>(scope: Scope, scope_id: Option<&'a str>, key: &'a str) -> impl fmt::Display + 'a {
    Label { scope, scope_id, key }
}

struct Label<'a> {
    scope: Scope,
    scope_id: Option<&'a str>,
    key: &'a str,
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.scope_id {
            Some(id) => write!(f, "{}/{id}/{}", self.scope, self.key),
            None => write!(f, "{}/{}", self.scope, self.key),
        }
    }
}

impl fmt::Display for MemoryRef {
    /// `scope/scope_id/key`, or `scope/key` without a scope id.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        label(self.scope, self.scope_id.as_deref(), self.key.as_str()).fmt(f)
    }
}

impl FromStr for MemoryRef {
    type Err = CoreError;

    /// Parse `scope/key` (global, federated) or `scope/scope_id/key` (project, session, agent). The scope name is
    /// exact, the scope id a safe path segment (1..=255 bytes of `[A-Za-z0-9._-]`, not `.`/`..`), the key strict
    /// (`^[a-z0-9-]{1,60}$`).
    ///
    /// Errors: [`CoreError::InvalidMemoryRef`] naming the input and what is wrong.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = |why: &'static str| CoreError::InvalidMemoryRef(s.chars().take(200).collect(), why);
        let mut parts = s.split('/');
        let scope: Scope = parts
            .next()
            .unwrap_or_default()
            .parse()
            .map_err(|_| bad("the first part is not a scope name"))?;
        let (scope_id, key) = match (scope.needs_scope_id(), parts.next(), parts.next(), parts.next()) {
            (true, Some(id), Some(key), None) if is_safe_segment(id) => (Some(id.to_owned()), key),
            (true, Some(_), Some(_), None) => return Err(bad("the scope id is not a safe path segment")),
            (true, ..) => return Err(bad("project, session and agent memories are scope/scope_id/key")),
            (false, Some(key), None, None) => (None, key),
            (false, ..) => return Err(bad("global and federated memories are scope/key")),
        };
        let key = Key::parse_strict(key).map_err(|_| bad("the key does not match ^[a-z0-9-]{1,60}$"))?;
        Ok(MemoryRef { scope, scope_id, key })
    }
}

/// The backend a memory row comes from (the index's `source_kind` column).
///
/// Source: the reference's `memory_metadata.source_kind` (default `native`; `vault` for notes of an Obsidian vault
/// knowledge source, spec 000). This implementation writes and reads only `native` rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A memory of the wiki store (`memory/<container>/wiki/...`).
    Native,
    /// A note of a vault knowledge source (the reference's; never written here).
    Vault,
}

impl SourceKind {
    /// Every kind, in declaration order.
    pub const ALL: [SourceKind; 2] = [SourceKind::Native, SourceKind::Vault];

    /// The stored name (`native`, `vault`).
    pub const fn as_str(self) -> &'static str {
        match self {
            SourceKind::Native => "native",
            SourceKind::Vault => "vault",
        }
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SourceKind {
    type Err = CoreError;

    /// Exact stored names only; anything else is [`CoreError::InvalidSourceKind`].
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        SourceKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| CoreError::InvalidSourceKind(s.chars().take(80).collect()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(k: &str) -> Key {
        Key::parse_strict(k).expect("valid key")
    }

    #[test]
    fn text_form_round_trips() {
        let refs = [
            MemoryRef::new(Scope::Project, Some("proj-a.1".into()), key("build-notes")),
            MemoryRef::new(Scope::Session, Some("sess_1".into()), key("k")),
            MemoryRef::new(Scope::Agent, Some("reviewer".into()), key("style")),
            MemoryRef::new(Scope::Global, None, key("team")),
            MemoryRef::new(Scope::Federated, None, key("shared-1")),
        ];
        for r in refs {
            let text = r.to_string();
            assert_eq!(text.parse::<MemoryRef>(), Ok(r.clone()), "{text}");
        }
        assert_eq!(refs_text("project", Some("p"), "k"), "project/p/k");
        assert_eq!(refs_text("global", None, "k"), "global/k");
    }

    fn refs_text(scope: &str, id: Option<&str>, k: &str) -> String {
        let scope: Scope = scope.parse().expect("scope");
        MemoryRef::new(scope, id.map(str::to_owned), key(k)).to_string()
    }

    #[test]
    fn malformed_text_is_refused() {
        for bad in [
            "",
            "project/k",
            "global/p/k",
            "project/p/K",
            "project/../k",
            "project/p/k/extra",
            "nowhere/k",
            "session//k",
            "federated/",
        ] {
            let err = bad.parse::<MemoryRef>().expect_err(bad);
            assert!(matches!(err, CoreError::InvalidMemoryRef(..)), "{bad}: {err}");
        }
    }

    #[test]
    fn container_and_order() {
        let p = MemoryRef::new(Scope::Project, Some("p1".into()), key("a"));
        assert_eq!(p.container(), "p1");
        let s = MemoryRef::new(Scope::Session, Some("s".into()), key("a"));
        assert_eq!(s.container(), "global");
        let g = MemoryRef::new(Scope::Global, None, key("z"));
        assert!(g < p, "scope order first (global before project)");
    }

    #[test]
    fn source_kinds_keep_their_stored_names() {
        for k in SourceKind::ALL {
            assert_eq!(k.as_str().parse::<SourceKind>(), Ok(k));
            assert_eq!(serde_json::to_value(k).ok(), Some(serde_json::json!(k.as_str())));
        }
        assert_eq!(SourceKind::Native.as_str(), "native");
        assert!("Native".parse::<SourceKind>().is_err());
    }
}
