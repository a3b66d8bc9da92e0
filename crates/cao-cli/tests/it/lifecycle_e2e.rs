//! The supersedes lifecycle end to end, through the real `cao` binary and the MCP tool layer (in process): store A
//! and B with `memory_store`, mark B supersedes A (a human proposal promoted with `cao memory relationships
//! promote`), then check recall order and labels, `cao memory list`/`show` and `cao memory context` with the flag
//! off and on (`cao config set` and the environment), reject the edge, and check that a compiler recompute does not
//! bring it back.

use crate::common::{PROJECT, cao, cao_env, json};
use cao_core::{CaoHome, Scope, SystemClock, TerminalContext};
use cao_lifecycle::{NewRelationship, ProducerEdgeInput, RelOrigin, RelStatus, RelType, RelationshipService};
use cao_mcp::{FixedContext, FlushSignal, MemoryTools, ServiceHandle};
use cao_memory::MemoryService;
use cao_testkit::TempHome;
use serde_json::{Value, json};
use std::sync::Arc;

struct Mcp {
    rt: tokio::runtime::Runtime,
    tools: MemoryTools,
    ctx: TerminalContext,
}

impl Mcp {
    fn new(home: &TempHome) -> Self {
        let ctx = TerminalContext {
            cwd: Some(home.cwd().to_path_buf()),
            project_id: Some(PROJECT.to_owned()),
            ..Default::default()
        };
        let tools = MemoryTools::new(
            ServiceHandle::lazy(CaoHome::new(home.home())),
            Arc::new(FixedContext(ctx.clone())),
            FlushSignal::new(),
        );
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        Self { rt, tools, ctx }
    }

    fn call(&self, tool: &str, args: Value) -> Value {
        let Value::Object(map) = args else {
            panic!("arguments must be an object")
        };
        let out = self
            .rt
            .block_on(self.tools.call(tool, Some(map), self.ctx.clone()))
            .unwrap_or_else(|e| panic!("{tool}: {e:?}"));
        assert_eq!(out["success"], json!(true), "{tool}: {out}");
        out
    }

    fn store(&self, key: &str, content: &str) {
        self.call(
            "memory_store",
            json!({"key": key, "content": content, "scope": "project", "memory_type": "project"}),
        );
        // Distinct updated_at values, whatever the clock resolution.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }

    /// `(key, lifecycle_status)` of a recall, in order.
    fn recall(&self, sort: &str, query: Option<&str>) -> Vec<(String, Option<String>)> {
        let mut args = json!({"scope": "project", "sort_by": sort});
        if let Some(q) = query {
            args["query"] = json!(q);
        }
        self.call("memory_recall", args)["memories"]
            .as_array()
            .expect("memories")
            .iter()
            .map(|m| {
                (
                    m["key"].as_str().expect("key").to_owned(),
                    m.get("lifecycle_status")
                        .map(|s| s.as_str().expect("string").to_owned()),
                )
            })
            .collect()
    }
}

fn plain(keys: &[&str]) -> Vec<(String, Option<String>)> {
    keys.iter().map(|k| ((*k).to_owned(), None)).collect()
}

fn sup(key: &str) -> (String, Option<String>) {
    (key.to_owned(), Some("superseded".to_owned()))
}

fn ok(out: &cao_testkit::RunOutput) -> &str {
    assert_eq!(out.code, Some(0), "{}", out.transcript());
    &out.stdout
}

fn context(home: &TempHome, env: &[(&str, &str)]) -> String {
    ok(&cao_env(home, &["memory", "context"], env)).to_owned()
}

#[test]
fn supersedes_lifecycle_from_the_cli_and_the_mcp_tools() {
    let home = TempHome::new().expect("temp home");
    let mcp = Mcp::new(&home);
    mcp.store("deploy-old", "deploy deploy deploy with make deploy");
    mcp.store("deploy-new", "deploy with cargo xtask");
    mcp.store("deploy-old", "deploy deploy deploy with make deploy, on the old host");
    mcp.store("unrelated", "the team meets on mondays");

    let svc = MemoryService::open(CaoHome::new(home.home())).expect("service");
    let rel = RelationshipService::new(svc.storage().clone(), Arc::new(SystemClock));
    // Each stdio store returned after its related pass: the two deploy notes relate, the unrelated one does not.
    let compiled: Vec<(String, String)> = rel
        .list(&cao_lifecycle::RelationshipFilter::default())
        .expect("edges")
        .into_iter()
        .filter(|e| e.origin == RelOrigin::Compiler && e.rel_type == RelType::RelatesTo)
        .map(|e| (e.source_key, e.target_key))
        .collect();
    assert_eq!(
        compiled,
        [
            ("deploy-new".to_owned(), "deploy-old".to_owned()),
            ("deploy-old".to_owned(), "deploy-new".to_owned())
        ]
    );
    // From here only the supersedes edges are under test.
    crate::common::forget_compiled_relations(&svc, Arc::new(SystemClock));
    let edge = rel
        .create(NewRelationship {
            scope: Scope::Project,
            scope_id: Some(PROJECT.to_owned()),
            source_key: "deploy-new".into(),
            target_key: "deploy-old".into(),
            rel_type: "supersedes".into(),
            origin: None,
            status: Some("proposal".into()),
            confidence: None,
            rank: None,
            attributes: None,
        })
        .expect("human proposal");
    assert_eq!(edge.origin, RelOrigin::Human);

    // A proposal changes nothing: score ranks the stronger lexical match first.
    assert_eq!(
        mcp.recall("score", Some("deploy")),
        plain(&["deploy-old", "deploy-new"])
    );
    let block = context(&home, &[]);
    assert!(block.contains("] deploy-old: "), "{block}");

    let promoted = ok(&cao(&home, &["memory", "relationships", "promote", &edge.id])).to_owned();
    assert!(promoted.contains("active"), "{promoted}");

    // Flag off: score demotes the active target (always), without a label; recency and injection are unchanged.
    assert_eq!(
        mcp.recall("score", Some("deploy")),
        plain(&["deploy-new", "deploy-old"])
    );
    assert_eq!(
        mcp.recall("recency", None),
        plain(&["unrelated", "deploy-old", "deploy-new"])
    );
    let block = context(&home, &[]);
    assert!(block.contains("- [project] deploy-old: "), "{block}");
    let list = ok(&cao(&home, &["memory", "list"])).to_owned();
    assert!(!list.contains("[superseded]"), "{list}");
    let show = ok(&cao(&home, &["memory", "show", "deploy-old"])).to_owned();
    assert!(!show.contains("Status:"), "{show}");

    // Flag on through the environment: injection leaves it out.
    let env = [("CAO_MEMORY_LIFECYCLE_ENABLED", "true")];
    let block = context(&home, &env);
    assert!(!block.contains("deploy-old"), "{block}");
    assert!(block.contains("- [project] deploy-new: "), "{block}");

    // Flag on through the settings file.
    ok(&cao(&home, &["config", "set", "memory.lifecycle.enabled", "true"]));
    let block = context(&home, &[]);
    assert!(!block.contains("deploy-old"), "{block}");
    assert!(
        block.contains("- [project] deploy-new: ") && block.contains("- [project] unrelated: "),
        "{block}"
    );
    assert_eq!(
        mcp.recall("recency", None),
        vec![
            ("unrelated".to_owned(), None),
            ("deploy-new".to_owned(), None),
            sup("deploy-old")
        ],
        "recency keeps membership and moves the superseded memory last"
    );
    assert_eq!(
        mcp.recall("score", Some("deploy")),
        vec![("deploy-new".to_owned(), None), sup("deploy-old")]
    );
    let list = ok(&cao(&home, &["memory", "list"])).to_owned();
    let marked: Vec<&str> = list.lines().filter(|l| l.ends_with(" [superseded]")).collect();
    assert_eq!(marked.len(), 1, "{list}");
    assert!(marked[0].starts_with("deploy-old "), "{list}");
    let show = ok(&cao(&home, &["memory", "show", "deploy-old"])).to_owned();
    assert!(show.contains("\nStatus:  superseded\n"), "{show}");
    let shown = json(&cao(&home, &["memory", "show", "deploy-old", "--format", "json"]));
    assert_eq!(shown["lifecycle_status"], "superseded");
    let topic = std::fs::read_to_string(shown["file_path"].as_str().expect("path")).expect("topic file");
    assert!(!topic.contains("superseded"), "the label is never written: {topic}");

    // Reject: the edge no longer applies, on the next call.
    let rejected = ok(&cao(&home, &["memory", "relationships", "reject", &edge.id])).to_owned();
    assert!(rejected.contains("rejected"), "{rejected}");
    let block = context(&home, &[]);
    assert!(block.contains("- [project] deploy-old: "), "{block}");
    assert_eq!(
        mcp.recall("recency", None),
        plain(&["unrelated", "deploy-old", "deploy-new"])
    );

    // A compiler recompute proposing the same link does not bring the human edge back, and once its own edge is
    // rejected, reporting it active again is refused and reported.
    let propose = |status| {
        rel.recompute(
            Scope::Project,
            Some(PROJECT),
            "deploy-new",
            RelOrigin::Compiler,
            RelType::Supersedes,
            vec![ProducerEdgeInput {
                target_key: "deploy-old".into(),
                status,
                confidence: Some(0.9),
                rank: None,
                attributes: None,
            }],
        )
        .expect("recompute")
    };
    let first = propose(RelStatus::Proposal);
    assert_eq!(first.added, 1, "{first:?}");
    let compiled = rel
        .list(&cao_lifecycle::RelationshipFilter::default())
        .expect("edges")
        .into_iter()
        .find(|e| e.origin == RelOrigin::Compiler && e.rel_type == RelType::Supersedes)
        .expect("compiler edge");
    ok(&cao(&home, &["memory", "relationships", "reject", &compiled.id]));
    let again = propose(RelStatus::Active);
    assert_eq!((again.added, again.updated), (0, 0), "{again:?}");
    assert_eq!(again.preserved.len(), 1, "the refusal is reported: {again:?}");
    let inspected = json(&cao(
        &home,
        &["memory", "relationships", "inspect", &edge.id, "--format", "json"],
    ));
    assert_eq!(inspected["status"], "rejected", "{inspected}");
    let statuses: Vec<RelStatus> = rel
        .list(&cao_lifecycle::RelationshipFilter::default())
        .expect("edges")
        .into_iter()
        .map(|e| e.status)
        .collect();
    assert_eq!(statuses, [RelStatus::Rejected, RelStatus::Rejected]);
    let block = context(&home, &[]);
    assert!(block.contains("- [project] deploy-old: "), "{block}");
    assert!(
        mcp.recall("recency", None).iter().all(|(_, s)| s.is_none()),
        "no label once nothing supersedes it"
    );
}
