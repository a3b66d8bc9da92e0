//! [`Tool`]: the memory tools as an enum, and [`ToolSpec`], the facts every layer needs about one tool.

use std::fmt;

/// The access a tool call needs: the `cao:read` / `cao:write` / `cao:admin` scopes of the HTTP API's bearer
/// tokens, and whether the call writes (a read runs under the read-concurrency limit and does not trigger the
/// `index.md` refresh).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Access {
    /// Reads memories (a recall still counts accesses, which is not a content change).
    Read,
    /// Creates or changes memories.
    Write,
    /// Removes memories (a delete).
    Admin,
}

/// The owner's internal route that builds a `<cao-memory>` block for a remote node, relative to its base URL.
pub const CONTEXT_PATH: &str = "/internal/memory/context";

/// What every layer needs to know about one tool: one row of [`Tool::spec`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The MCP tool name (`tools/list`, `tools/call`), e.g. `memory_store`.
    pub name: &'static str,
    /// The path of the owner's internal route that carries the call out for a remote node (`CAO_MEMORY_API_URL`),
    /// relative to the owner's base URL, e.g. `/internal/memory/store`.
    pub internal_path: &'static str,
    /// The access the call needs.
    pub access: Access,
    /// The list field of this tool's result that the disabled payload carries empty (`memories` for
    /// `memory_recall`, reference notes g), if any.
    pub empty_list: Option<&'static str>,
}

/// One memory tool. Adding a tool is one variant here with its row in [`Tool::spec`] and [`Tool::ALL`], plus its
/// handler in `cao-mcp` (see ARCHITECTURE.md "Adding a tool"); every match on this enum is exhaustive, so the
/// compiler lists whatever else must name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `memory_store(content, scope, memory_type, key, tags)`: store (upsert) a memory (spec 000 "memory_store").
    Store,
    /// `memory_recall(query, scope, memory_type, limit, search_mode, sort_by, include_related)`: ranked retrieval
    /// (spec 000 "memory_recall").
    Recall,
    /// `memory_forget(key, scope)`: remove a memory (spec 000 "MCP Tools").
    Forget,
    /// `memory_view(scope)`: the journal's live view (spec 001 "The view").
    View,
    /// `memory_zoom(id, n, scope)`: open line `id+n` of the journal's summary tree (spec 001 "Zoom and search").
    Zoom,
    /// `memory_search(query)`: current memories by word (spec 001 "Zoom and search").
    Search,
    /// `memory_read(key, scope)`: a memory's current text (spec 001 "Zoom and search").
    Read,
    /// `memory_advise(message, conversation_id)`: the memories the decision engine finds relevant to a new user
    /// message (spec 001 "Relevance from the decision engine", `memory.decisions.recall = advise`).
    Advise,
    /// `report_outcome(task_label, success, score?, friction_notes?, workflow_name?, agent_profile?)`: record one
    /// unit of agent work (spec 004 "Phase 1 — outcome capture").
    ReportOutcome,
    /// `list_outcomes(session_name?, agent_profile?, workflow_name?, limit?)`: a session's outcomes, newest first
    /// (spec 004 "Phase 1 — outcome capture").
    ListOutcomes,
    /// `store_lesson(target_agent_profile, content, key?, tags?)`: store a lesson into an agent's scope (spec 004
    /// "The retrospector agent").
    StoreLesson,
}

impl Tool {
    /// Every tool, in the order `tools/list` shows them.
    pub const ALL: [Tool; 11] = [
        Tool::Store,
        Tool::Recall,
        Tool::Forget,
        Tool::View,
        Tool::Zoom,
        Tool::Search,
        Tool::Read,
        Tool::Advise,
        Tool::ReportOutcome,
        Tool::ListOutcomes,
        Tool::StoreLesson,
    ];

    /// The facts about this tool (the one table of them).
    pub const fn spec(self) -> ToolSpec {
        match self {
            Tool::Store => ToolSpec {
                name: "memory_store",
                internal_path: "/internal/memory/store",
                access: Access::Write,
                empty_list: None,
            },
            Tool::Recall => ToolSpec {
                name: "memory_recall",
                internal_path: "/internal/memory/recall",
                access: Access::Read,
                empty_list: Some("memories"),
            },
            Tool::Forget => ToolSpec {
                name: "memory_forget",
                internal_path: "/internal/memory/forget",
                access: Access::Admin,
                empty_list: None,
            },
            Tool::View => ToolSpec {
                name: "memory_view",
                internal_path: "/internal/memory/view",
                access: Access::Read,
                empty_list: None,
            },
            Tool::Zoom => ToolSpec {
                name: "memory_zoom",
                internal_path: "/internal/memory/zoom",
                access: Access::Read,
                empty_list: None,
            },
            Tool::Search => ToolSpec {
                name: "memory_search",
                internal_path: "/internal/memory/search",
                access: Access::Read,
                empty_list: Some("hits"),
            },
            Tool::Read => ToolSpec {
                name: "memory_read",
                internal_path: "/internal/memory/read",
                access: Access::Read,
                empty_list: None,
            },
            Tool::Advise => ToolSpec {
                name: "memory_advise",
                internal_path: "/internal/memory/advise",
                access: Access::Read,
                empty_list: Some("memories"),
            },
            Tool::ReportOutcome => ToolSpec {
                name: "report_outcome",
                internal_path: "/internal/outcomes/report",
                access: Access::Write,
                empty_list: None,
            },
            Tool::ListOutcomes => ToolSpec {
                name: "list_outcomes",
                internal_path: "/internal/outcomes/list",
                access: Access::Read,
                empty_list: None,
            },
            Tool::StoreLesson => ToolSpec {
                name: "store_lesson",
                internal_path: "/internal/memory/lesson",
                access: Access::Write,
                empty_list: None,
            },
        }
    }

    /// The MCP tool name, e.g. `memory_recall`.
    pub const fn name(self) -> &'static str {
        self.spec().name
    }

    /// The owner's internal route for this tool, e.g. `/internal/memory/recall`.
    pub const fn internal_path(self) -> &'static str {
        self.spec().internal_path
    }

    /// The access a call needs.
    pub const fn access(self) -> Access {
        self.spec().access
    }

    /// Whether a successful call may have changed memories (anything but [`Access::Read`]).
    pub const fn writes(self) -> bool {
        !matches!(self.access(), Access::Read)
    }

    /// The tool called `name` (exact, case-sensitive match of an MCP tool name); `None` for any other string.
    pub fn from_name(name: &str) -> Option<Tool> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// Every tool name joined with `", "` (for "expected one of ..." messages).
    pub fn names() -> String {
        Self::ALL.map(Tool::name).join(", ")
    }
}

impl fmt::Display for Tool {
    /// The MCP tool name.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_and_paths_are_the_reference_ones() {
        let rows: Vec<_> = Tool::ALL
            .iter()
            .map(|t| (t.name(), t.internal_path(), t.access()))
            .collect();
        assert_eq!(
            rows,
            [
                ("memory_store", "/internal/memory/store", Access::Write),
                ("memory_recall", "/internal/memory/recall", Access::Read),
                ("memory_forget", "/internal/memory/forget", Access::Admin),
                ("memory_view", "/internal/memory/view", Access::Read),
                ("memory_zoom", "/internal/memory/zoom", Access::Read),
                ("memory_search", "/internal/memory/search", Access::Read),
                ("memory_read", "/internal/memory/read", Access::Read),
                ("memory_advise", "/internal/memory/advise", Access::Read),
                ("report_outcome", "/internal/outcomes/report", Access::Write),
                ("list_outcomes", "/internal/outcomes/list", Access::Read),
                ("store_lesson", "/internal/memory/lesson", Access::Write),
            ]
        );
        assert_eq!(
            Tool::names(),
            "memory_store, memory_recall, memory_forget, memory_view, memory_zoom, memory_search, memory_read, \
             memory_advise, report_outcome, list_outcomes, store_lesson"
        );
    }

    #[test]
    fn names_parse_back_exactly_and_nothing_else_parses() {
        for t in Tool::ALL {
            assert_eq!(Tool::from_name(t.name()), Some(t));
            assert_eq!(t.to_string(), t.name());
        }
        for other in [
            "",
            "memory_Store",
            "MEMORY_RECALL",
            "memory_forget ",
            "store",
            "memory_delete",
        ] {
            assert_eq!(Tool::from_name(other), None, "{other:?}");
        }
    }

    #[test]
    fn only_reads_leave_memories_unchanged_and_only_recall_and_search_list() {
        assert!(Tool::Store.writes() && Tool::Forget.writes() && !Tool::Recall.writes());
        for t in [Tool::View, Tool::Zoom, Tool::Search, Tool::Read, Tool::Advise] {
            assert!(!t.writes(), "{t} reads only");
        }
        assert!(Tool::ReportOutcome.writes() && Tool::StoreLesson.writes() && !Tool::ListOutcomes.writes());
        assert_eq!(Tool::Recall.spec().empty_list, Some("memories"));
        assert_eq!(Tool::Search.spec().empty_list, Some("hits"));
        assert_eq!(Tool::Advise.spec().empty_list, Some("memories"));
        assert!(Tool::ALL.iter().filter(|t| t.spec().empty_list.is_some()).count() == 3);
    }

    #[test]
    fn no_tool_can_purge() {
        // Purging (spec 001 "Forget": "The model has no command for it") is an operator command only.
        for t in Tool::ALL {
            assert!(!t.name().contains("purge"), "{t}");
            assert!(!t.internal_path().contains("purge") && !t.internal_path().contains("history"));
        }
    }
}
