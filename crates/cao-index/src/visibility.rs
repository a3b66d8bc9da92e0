//! Which (scope, scope_id) pairs a caller may read, rendered as one SQL condition with bound parameters.

use cao_core::Scope;
use rusqlite::types::Value;

/// One readable slice of the index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Term {
    /// Every row of the scope, whatever its scope id (operator views, `--all`).
    AnyId(Scope),
    /// Rows of the scope with exactly this scope id (`None` = `scope_id IS NULL`).
    Id(Scope, Option<String>),
}

/// The set of `(scope, scope_id)` pairs a caller may read. Empty means nothing is visible.
///
/// Built from the terminal context by the service: e.g. global (no id), federated (no id), the project id and its
/// cwd-hash aliases, the caller's own session and agent profile. [`Visibility::all`] (no context, or `--all`)
/// sees every row. Rendered as one OR clause whose values are all bound parameters, so ids never reach SQL text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Visibility {
    terms: Vec<Term>,
}

impl Visibility {
    /// Nothing is visible.
    pub fn none() -> Visibility {
        Visibility::default()
    }

    /// Every scope with every scope id is visible.
    pub fn all() -> Visibility {
        Scope::ALL.into_iter().fold(Visibility::none(), Visibility::allow_any)
    }

    /// Also allow rows of `scope` whose scope id equals `scope_id` (`None` = rows without a scope id, as global and
    /// federated rows are stored). Duplicates and pairs already covered by [`Visibility::allow_any`] are ignored.
    pub fn allow(mut self, scope: Scope, scope_id: Option<&str>) -> Visibility {
        let term = Term::Id(scope, scope_id.map(str::to_owned));
        if !self.terms.contains(&Term::AnyId(scope)) && !self.terms.contains(&term) {
            self.terms.push(term);
        }
        self
    }

    /// Also allow every row of `scope`, whatever its scope id. Replaces narrower pairs of the same scope.
    pub fn allow_any(mut self, scope: Scope) -> Visibility {
        self.terms.retain(|t| !matches!(t, Term::Id(s, _) if *s == scope));
        if !self.terms.contains(&Term::AnyId(scope)) {
            self.terms.push(Term::AnyId(scope));
        }
        self
    }

    /// The same visibility narrowed to one scope (used for an explicit `scope` filter).
    pub fn only_scope(&self, scope: Scope) -> Visibility {
        let terms = self
            .terms
            .iter()
            .filter(|t| matches!(t, Term::AnyId(s) | Term::Id(s, _) if *s == scope))
            .cloned()
            .collect();
        Visibility { terms }
    }

    /// Whether nothing is visible.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether a row of `scope` with `scope_id` is visible.
    pub fn allows(&self, scope: Scope, scope_id: Option<&str>) -> bool {
        self.terms.iter().any(|t| match t {
            Term::AnyId(s) => *s == scope,
            Term::Id(s, id) => *s == scope && id.as_deref() == scope_id,
        })
    }

    /// Whether every scope is visible with every scope id (no filter at all).
    pub fn is_all(&self) -> bool {
        Scope::ALL.into_iter().all(|s| self.terms.contains(&Term::AnyId(s)))
    }

    /// The terms as `(scope, None)` for "any scope id" and `(scope, Some(scope_id))` for one exact scope id (what
    /// another backend renders into its own query language).
    pub fn slices(&self) -> impl Iterator<Item = (Scope, Option<Option<&str>>)> {
        self.terms.iter().map(|t| match t {
            Term::AnyId(s) => (*s, None),
            Term::Id(s, id) => (*s, Some(id.as_deref())),
        })
    }

    /// The OR clause over table alias `m` (`0` when empty); pushes its parameters onto `params`.
    pub(crate) fn sql(&self, params: &mut Vec<Value>) -> String {
        if self.terms.is_empty() {
            return "0".to_owned();
        }
        let parts: Vec<String> = self.terms.iter().map(|t| term_sql(t, params)).collect();
        format!("({})", parts.join(" OR "))
    }

    /// One condition per term, for queries that run a sub-select per term (so each can walk an index in order).
    pub(crate) fn term_sqls(&self, params: &mut Vec<Vec<Value>>) -> Vec<String> {
        self.terms
            .iter()
            .map(|t| {
                let mut p = Vec::new();
                let s = term_sql(t, &mut p);
                params.push(p);
                s
            })
            .collect()
    }
}

fn term_sql(t: &Term, params: &mut Vec<Value>) -> String {
    match t {
        Term::AnyId(s) => {
            params.push(Value::Text(s.as_str().to_owned()));
            "m.scope = ?".to_owned()
        }
        Term::Id(s, None) => {
            params.push(Value::Text(s.as_str().to_owned()));
            "(m.scope = ? AND m.scope_id IS NULL)".to_owned()
        }
        Term::Id(s, Some(id)) => {
            params.push(Value::Text(s.as_str().to_owned()));
            params.push(Value::Text(id.clone()));
            "(m.scope = ? AND m.scope_id = ?)".to_owned()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_id_subsumes_pairs() {
        let v = Visibility::none()
            .allow(Scope::Session, Some("a"))
            .allow_any(Scope::Session)
            .allow(Scope::Session, Some("b"));
        assert!(v.allows(Scope::Session, Some("zzz")));
        let mut p = Vec::new();
        assert_eq!(v.sql(&mut p), "(m.scope = ?)");
        assert_eq!(p.len(), 1);
    }

    #[test]
    fn pairs_are_exact() {
        let v = Visibility::none()
            .allow(Scope::Global, None)
            .allow(Scope::Project, Some("p"));
        assert!(v.allows(Scope::Global, None));
        assert!(!v.allows(Scope::Global, Some("x")));
        assert!(!v.allows(Scope::Project, Some("q")));
        assert!(!v.allows(Scope::Session, Some("p")));
        assert!(v.only_scope(Scope::Project).allows(Scope::Project, Some("p")));
        assert!(!v.only_scope(Scope::Project).allows(Scope::Global, None));
        assert!(Visibility::none().only_scope(Scope::Global).is_empty());
        let mut p = Vec::new();
        assert_eq!(Visibility::none().sql(&mut p), "0");
    }
}
