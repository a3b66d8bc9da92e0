//! Presentation: the table rendering of the `cao.memory.explain/1` report (`cao memory list --query Q --explain`,
//! the default `--format table`; spec 000 "On-demand relevance explain"). The report itself is built by
//! `cao_rank::explain_report`; this module only formats it.
//!
//! Invariants: the table carries the same data as the JSON report (every candidate field except `source_kind`,
//! abbreviated where noted) and nothing the JSON omits: no content, tags, paths, absolute timestamps, access
//! counts or raw BM25 scores. Columns are padded to their widest cell and never cut. Values chosen by the
//! operator or stored by agents (the query, scope ids) are escaped so no control character reaches the terminal
//! and a row is always one line.

use cao_rank::{ExplainCandidate, ExplainReport, Injection};
use std::fmt::Write as _;

/// Column headers of the candidate table, in order.
const COLUMNS: [&str; 11] = [
    "REL#",
    "DEF#",
    "KEY",
    "SCOPE",
    "SCOPE_ID",
    "TIER",
    "LEXICAL",
    "AGE",
    "RELEVANCE",
    "FLAGS",
    "INJECTION",
];

/// The human-readable table of `report` (newline-terminated): the default output of
/// `cao memory list --query Q --explain`.
///
/// Layout:
/// 1. a header line echoing the schema, the query (quoted, control characters escaped), the limit, the scope
///    and type filters (`any` when absent), `all` and the search mode;
/// 2. the candidates in report order (relevance top set, then default-only rows) under the columns `REL#`
///    (relevance rank) and `DEF#` (rank in the default recency top set; `-` when the JSON has `null`), `KEY`,
///    `SCOPE`, `SCOPE_ID` (`-` for `null`), `TIER` (`all_term`/`partial`), `LEXICAL` (normalised BM25), with an
///    embedding model (`dense_model`) the hybrid ranking's `FUSION_LEX`, `SIMILARITY` and `FUSED` (`-` for a
///    candidate without them),
///    `AGE` (the recency factor), `RELEVANCE` (all three with four decimals), `FLAGS` (`recovered`,
///    `superseded`, comma-separated, `-` when neither) and `INJECTION` (the verdict, followed by the exclusion
///    reasons in brackets when there are any), under a dash line as long as the header row; or the line
///    `no candidates` when the report has none (an empty pool is a successful diagnostic);
/// 3. a footer: pool size with all-term/partial counts and the per-source size, `overlap@<limit>` (four
///    decimals, `n/a` when the JSON has `null`), `lexical_degenerate: true|false`, `lifecycle_enabled`, the
///    `dense_model` with the fusion weights (only with a model),
///    `eligibility_errors` (`none` or the comma-separated source names) and the fixed recency constants.
///
/// Every column is padded to its widest cell; nothing is truncated. The last column carries no trailing
/// padding. Pure: no I/O.
pub fn render_explain_table(report: &ExplainReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{}  query: {}  limit: {}  scope: {}  type: {}  all: {}  search_mode: {}",
        report.schema,
        quoted(&report.query),
        report.limit,
        report.scope.map_or("any", |s| s.as_str()),
        report.memory_type.map_or("any", |t| t.as_str()),
        report.all,
        report.search_mode.as_str(),
    );
    if report.candidates.is_empty() {
        out.push_str("no candidates\n");
    } else {
        // With an embedding model, the hybrid text ranking's components follow LEXICAL.
        let dense = report.dense_model.is_some();
        let mut columns: Vec<String> = COLUMNS.iter().map(|h| (*h).to_owned()).collect();
        if dense {
            columns.splice(LEXICAL_AT + 1..LEXICAL_AT + 1, DENSE_COLUMNS.map(str::to_owned));
        }
        let rows: Vec<Vec<String>> = report.candidates.iter().map(|c| cells(c, dense)).collect();
        let mut widths: Vec<usize> = columns.iter().map(|h| h.chars().count()).collect();
        for row in &rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
        let header = line(&columns, &widths);
        out.push_str(&header);
        out.push('\n');
        out.push_str(&"-".repeat(header.chars().count()));
        out.push('\n');
        for row in &rows {
            out.push_str(&line(row, &widths));
            out.push('\n');
        }
    }
    let p = &report.pool;
    let _ = writeln!(
        out,
        "pool: {} (all_term {}, partial {}); per source: {}",
        p.size, p.all_term, p.partial, p.per_source
    );
    let overlap = report.overlap.map_or_else(|| "n/a".to_owned(), |o| format!("{o:.4}"));
    let _ = writeln!(out, "overlap@{}: {overlap}", report.limit);
    let _ = writeln!(out, "lexical_degenerate: {}", report.lexical_degenerate);
    let _ = writeln!(out, "lifecycle_enabled: {}", report.lifecycle_enabled);
    if let Some(note) = &report.dense_note {
        let _ = writeln!(out, "dense: {}", escaped(note));
    }
    if let Some(model) = &report.dense_model {
        let _ = writeln!(
            out,
            "dense_model: {} (FUSION_LEX and SIMILARITY min-max normalised over the candidates; FUSED = {} x FUSION_LEX + {} x SIMILARITY)",
            escaped(model),
            cao_rank::FUSION_LEXICAL_WEIGHT,
            cao_rank::FUSION_DENSE_WEIGHT
        );
    }
    let errors = if report.eligibility_errors.is_empty() {
        "none".to_owned()
    } else {
        report
            .eligibility_errors
            .iter()
            .map(|e| escaped(e))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(out, "eligibility_errors: {errors}");
    let r = &report.recency;
    let _ = writeln!(
        out,
        "recency: floor {} + weight {} / (1 + days_old / {}) for {}; every other row 1.0",
        r.floor, r.weight, r.half_life_days, r.applies_to
    );
    out
}

/// Index of `LEXICAL` in [`COLUMNS`]: the dense columns follow it.
const LEXICAL_AT: usize = 6;
/// The columns of the hybrid text ranking, shown when the report has a `dense_model`: the candidate's
/// [`cao_rank::DenseComponents`] (`lexical`, `similarity`, `fused`), `-` for a candidate without them.
const DENSE_COLUMNS: [&str; 3] = ["FUSION_LEX", "SIMILARITY", "FUSED"];

/// The cells of one candidate row, in [`COLUMNS`] order (with [`DENSE_COLUMNS`] after `LEXICAL` when `dense`).
fn cells(c: &ExplainCandidate, dense: bool) -> Vec<String> {
    let rank = |r: Option<usize>| r.map_or_else(|| "-".to_owned(), |n| n.to_string());
    let mut flags = Vec::new();
    if c.recovered {
        flags.push("recovered");
    }
    if c.superseded {
        flags.push("superseded");
    }
    let injection = match c.injection {
        Injection::Eligible => "eligible",
        Injection::Excluded => "excluded",
        Injection::Unknown => "unknown",
    };
    let injection = if c.exclusion_reasons.is_empty() {
        injection.to_owned()
    } else {
        let reasons: Vec<String> = c.exclusion_reasons.iter().map(|r| escaped(r)).collect();
        format!("{injection} [{}]", reasons.join(", "))
    };
    let mut row = vec![
        rank(c.relevance_rank),
        rank(c.recency_rank),
        escaped(&c.key),
        c.scope.as_str().to_owned(),
        c.scope_id.as_deref().map_or_else(|| "-".to_owned(), escaped),
        escaped(c.tier),
        format!("{:.4}", c.lexical),
        format!("{:.4}", c.recency_factor),
        format!("{:.4}", c.relevance),
        if flags.is_empty() {
            "-".to_owned()
        } else {
            flags.join(",")
        },
        injection,
    ];
    if dense {
        let d = c.dense.as_ref();
        let value =
            |f: fn(&cao_rank::DenseComponents) -> f64| d.map_or_else(|| "-".to_owned(), |d| format!("{:.4}", f(d)));
        row.splice(
            LEXICAL_AT + 1..LEXICAL_AT + 1,
            [value(|d| d.lexical), value(|d| d.similarity), value(|d| d.fused)],
        );
    }
    row
}

/// One table line: every cell but the last left-aligned to its column width, two spaces apart.
fn line(cells: &[String], widths: &[usize]) -> String {
    let mut s = String::new();
    let last = cells.len() - 1;
    for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
        if i == last {
            s.push_str(cell);
        } else {
            let _ = write!(s, "{cell:<w$}  ");
        }
    }
    s
}

/// `s` with control characters (and backslashes) escaped, so a cell is one line of printable text.
fn escaped(s: &str) -> String {
    if !s.chars().any(|c| c.is_control() || c == '\\') {
        return s.to_owned();
    }
    s.chars().flat_map(char::escape_default).collect()
}

/// `s` as a double-quoted string with quotes, backslashes and control characters escaped.
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::{MemoryType, Scope, SearchMode};
    use cao_rank::{EXPLAIN_SCHEMA, PoolCounts, RecencyConstants};

    fn candidate(key: &str, rel: Option<usize>, def: Option<usize>) -> ExplainCandidate {
        ExplainCandidate {
            key: key.to_owned(),
            scope: Scope::Project,
            scope_id: Some("test-proj".to_owned()),
            source_kind: cao_core::SourceKind::Native,
            tier: "all_term",
            lexical: 1.0,
            recency_factor: 0.95,
            relevance: 0.95,
            relevance_rank: rel,
            recency_rank: def,
            recovered: def.is_none(),
            superseded: false,
            injection: Injection::Eligible,
            exclusion_reasons: Vec::new(),
            dense: None,
        }
    }

    fn report(candidates: Vec<ExplainCandidate>) -> ExplainReport {
        ExplainReport {
            schema: EXPLAIN_SCHEMA,
            query: "kafka streams".to_owned(),
            limit: 10,
            scope: None,
            memory_type: None,
            all: false,
            search_mode: SearchMode::Hybrid,
            lifecycle_enabled: false,
            pool: PoolCounts {
                size: candidates.len(),
                all_term: candidates.len(),
                partial: 0,
                per_source: 50,
            },
            recency: RecencyConstants {
                floor: 0.85,
                weight: 0.15,
                half_life_days: 30.0,
                applies_to: "native project memories",
            },
            overlap: if candidates.is_empty() { None } else { Some(0.5) },
            lexical_degenerate: false,
            eligibility_errors: Vec::new(),
            candidates,
            dense_model: None,
            dense_note: None,
        }
    }

    #[test]
    fn table_has_header_rows_and_footer() {
        let mut global = candidate("team-notes", Some(2), Some(1));
        global.scope = Scope::Global;
        global.scope_id = None;
        global.tier = "partial";
        global.lexical = 0.12345;
        global.recency_factor = 1.0;
        global.relevance = 0.1235;
        let r = report(vec![candidate("kafka-setup", Some(1), None), global]);
        let text = render_explain_table(&r);
        let expected = "\
cao.memory.explain/1  query: \"kafka streams\"  limit: 10  scope: any  type: any  all: false  search_mode: hybrid
REL#  DEF#  KEY          SCOPE    SCOPE_ID   TIER      LEXICAL  AGE     RELEVANCE  FLAGS      INJECTION
-------------------------------------------------------------------------------------------------------
1     -     kafka-setup  project  test-proj  all_term  1.0000   0.9500  0.9500     recovered  eligible
2     1     team-notes   global   -          partial   0.1235   1.0000  0.1235     -          eligible
pool: 2 (all_term 2, partial 0); per source: 50
overlap@10: 0.5000
lexical_degenerate: false
lifecycle_enabled: false
eligibility_errors: none
recency: floor 0.85 + weight 0.15 / (1 + days_old / 30) for native project memories; every other row 1.0
";
        assert_eq!(text, expected, "\n{text}");
    }

    #[test]
    fn with_a_dense_model_the_hybrid_components_follow_lexical() {
        let mut near = candidate("kafka-setup", Some(1), Some(1));
        near.dense = Some(cao_rank::DenseComponents {
            lexical: 1.0,
            similarity: 0.25,
            fused: 0.625,
        });
        let mut r = report(vec![near, candidate("no-vector", Some(2), None)]);
        r.dense_model = Some("all-MiniLM-L6-v2".to_owned());
        let text = render_explain_table(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[1].starts_with(
                "REL#  DEF#  KEY          SCOPE    SCOPE_ID   TIER      LEXICAL  FUSION_LEX  SIMILARITY  FUSED   AGE"
            ),
            "{text}"
        );
        assert!(
            lines[3].contains(" 1.0000   1.0000      0.2500      0.6250  0.9500 "),
            "{text}"
        );
        assert!(
            lines[4].contains(" 1.0000   -           -           -       0.9500 "),
            "{text}"
        );
        assert!(
            lines.iter().any(|l| l.starts_with("dense_model: all-MiniLM-L6-v2 (")),
            "{text}"
        );
        // Without a model the table keeps its columns.
        r.dense_model = None;
        assert!(!render_explain_table(&r).contains("SIMILARITY"));
    }

    #[test]
    fn a_call_made_while_the_model_loads_says_it_was_lexical() {
        let mut r = report(vec![candidate("kafka-setup", Some(1), Some(1))]);
        r.dense_note = Some(crate::dense::NOTE_LOADING.to_owned());
        let text = render_explain_table(&r);
        assert!(
            text.lines()
                .any(|l| l == format!("dense: {}", crate::dense::NOTE_LOADING)),
            "{text}"
        );
        assert!(
            !text.contains("SIMILARITY"),
            "no dense columns without dense components: {text}"
        );
        let json = serde_json::to_value(&r).expect("json");
        assert_eq!(json["dense_note"], crate::dense::NOTE_LOADING);
        r.dense_note = None;
        let json = serde_json::to_value(&r).expect("json");
        assert!(
            json.get("dense_note").is_none(),
            "absent unless a model was configured: {json}"
        );
    }

    #[test]
    fn empty_pool_prints_header_no_candidates_and_footer() {
        let mut r = report(Vec::new());
        r.scope = Some(Scope::Global);
        r.memory_type = Some(MemoryType::Feedback);
        r.all = true;
        let text = render_explain_table(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "cao.memory.explain/1  query: \"kafka streams\"  limit: 10  scope: global  type: feedback  all: true  search_mode: hybrid"
        );
        assert_eq!(lines[1], "no candidates");
        assert!(lines.contains(&"overlap@10: n/a"), "{text}");
        assert!(lines.contains(&"lexical_degenerate: false"), "{text}");
        assert!(
            lines.contains(&"pool: 0 (all_term 0, partial 0); per source: 50"),
            "{text}"
        );
        assert!(text.ends_with('\n'));
    }

    #[test]
    fn flags_injection_reasons_errors_and_degenerate_are_shown() {
        let mut c = candidate("old-plan", Some(3), Some(2));
        c.superseded = true;
        c.recovered = true;
        c.injection = Injection::Excluded;
        c.exclusion_reasons = vec!["superseded".to_owned()];
        let mut u = candidate("other", Some(1), None);
        u.injection = Injection::Unknown;
        let mut r = report(vec![u, c]);
        r.lexical_degenerate = true;
        r.lifecycle_enabled = true;
        r.eligibility_errors = vec!["lifecycle.supersedes".to_owned()];
        let text = render_explain_table(&r);
        let row = text.lines().find(|l| l.contains("old-plan")).unwrap_or_default();
        assert!(row.contains(" recovered,superseded "), "{row}");
        assert!(row.ends_with(" excluded [superseded]"), "{row}");
        let row = text.lines().find(|l| l.contains("other")).unwrap_or_default();
        assert!(row.ends_with(" unknown"), "{row}");
        for want in [
            "lexical_degenerate: true",
            "lifecycle_enabled: true",
            "eligibility_errors: lifecycle.supersedes",
        ] {
            assert!(text.lines().any(|l| l == want), "{want}:\n{text}");
        }
    }

    #[test]
    fn columns_are_padded_to_the_widest_cell_never_cut() {
        let long_id = "a-very-long-project-identifier-that-is-wider-than-its-header".to_owned();
        let mut c = candidate("k", Some(100), Some(100));
        c.scope_id = Some(long_id.clone());
        let r = report(vec![c, candidate("kafka-setup-with-a-long-key", Some(1), Some(1))]);
        let text = render_explain_table(&r);
        assert!(text.contains(&long_id), "{text}");
        assert!(text.contains("kafka-setup-with-a-long-key"), "{text}");
        // Every column starts at the same offset in the header and in each row.
        let lines: Vec<&str> = text.lines().skip(1).take(4).collect();
        let header = lines[0];
        for col in ["DEF#", "KEY", "SCOPE_ID", "TIER", "RELEVANCE", "INJECTION"] {
            let at = header.find(col).unwrap_or(usize::MAX);
            for row in &lines[2..] {
                assert_eq!(
                    row.as_bytes().get(at.saturating_sub(1)),
                    Some(&b' '),
                    "{col} at {at} in {row:?}"
                );
                assert_ne!(row.as_bytes().get(at), Some(&b' '), "{col} at {at} in {row:?}");
            }
        }
        assert_eq!(lines[1].len(), header.len(), "dash line as long as the header");
        assert!(
            !header.ends_with(' ') && !lines[2].ends_with(' '),
            "no trailing padding"
        );
    }

    #[test]
    fn operator_and_stored_values_cannot_break_a_line() {
        let mut r = report(vec![candidate("k", Some(1), Some(1))]);
        r.query = "a\nb\u{1b}[31m \"q\"".to_owned();
        r.candidates[0].scope_id = Some("x\ty\r".to_owned());
        let text = render_explain_table(&r);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\t') && !text.contains('\r'),
            "{text:?}"
        );
        assert!(
            text.starts_with("cao.memory.explain/1  query: \"a\\nb\\u{1b}[31m \\\"q\\\"\"  limit: 10"),
            "{text}"
        );
        assert!(text.contains(" x\\ty\\r "), "{text}");
        assert_eq!(text.lines().count(), 10, "header, table (3), footer (6):\n{text}");
    }

    #[test]
    fn table_omits_what_the_json_omits() {
        // The report type has no content, tags, paths or timestamps to leak; the table adds only fixed words.
        let text = render_explain_table(&report(vec![candidate("k", Some(1), Some(1))]));
        for absent in ["T00:", "2026-", "wiki", ".md", "access", "bm25"] {
            assert!(!text.contains(absent), "{absent:?} in\n{text}");
        }
    }
}
