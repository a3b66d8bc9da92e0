//! `bench --only mcp`: latency as an agent sees it, through a real `cao-mcp-server` process over stdio, driven by
//! rmcp's client (the official Rust MCP SDK), optionally with a local embedding model configured.
//!
//! What is measured, on a fresh home (issue 33's MCP goals; the model rows only with `--model DIR`):
//! - `memory_store` of LoCoMo turns into the project scope, one call at a time (the client waits for each answer);
//! - with a model, how long after the last store the background worker has stored every vector (decision 0011:
//!   stores do not wait for their embedding; the memory is recallable lexically at once);
//! - `memory_recall` of LoCoMo questions with the tool's defaults (hybrid search, recency order), once every vector
//!   is stored;
//! - start-up, over `restarts` fresh processes on the same home: spawn to the `initialize` answer, then the first
//!   `memory_recall` (with a model configured the model loads on a thread of its own as the process starts, so
//!   this call does not wait for it).
//!
//! Each sample is the wall time of one JSON-RPC round trip as the client sees it (request written, answer parsed).

use crate::Stats;
use anyhow::{Context, Result, bail};
use rmcp::ServiceExt as _;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{RoleClient, RunningService};
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The project id the server is started with (`CAO_PROJECT_ID`).
const PROJECT: &str = "bench-project";

/// How long the model rows wait for the background worker to store every vector before failing.
const DENSE_WAIT: Duration = Duration::from_secs(600);

/// The measured rows of one run.
#[derive(Debug, Default)]
pub struct McpBench {
    /// Memories stored (one `memory_store` each).
    pub stored: usize,
    /// Whether a model was configured.
    pub model: bool,
    /// `memory_store` round trips.
    pub store: Stats,
    /// With a model: from the answer of the last store until every stored memory had a vector.
    pub dense_catch_up: Option<Duration>,
    /// `memory_recall` round trips (default mode and order).
    pub recall: Stats,
    /// Spawn of a fresh process until its `initialize` answer.
    pub start: Stats,
    /// The first `memory_recall` of a fresh process (after `initialize`).
    pub first_call: Stats,
}

/// Run the measurement: `server` is the `cao-mcp-server` binary, `root` an empty scratch directory, `turns` stored
/// in order (the first `n_store`), `questions` asked (the first `n_recall`), `restarts` fresh processes for the
/// start-up rows. With `model` (a model directory) the home's settings name it.
///
/// Errors: the process cannot start, a call fails or answers `success: false`, or the vectors are not all stored
/// within 600 s.
pub fn measure(
    server: &Path,
    root: &Path,
    model: Option<&Path>,
    turns: &[String],
    questions: &[String],
    (n_store, n_recall, restarts): (usize, usize, usize),
) -> Result<McpBench> {
    let home = root.join("home");
    cao_core::fs::create_private_dir_all(&home)?;
    let model_id = match model {
        Some(dir) => Some(cao_embed::inspect_dir(dir)?.model_id),
        None => None,
    };
    if let Some(dir) = model {
        let dir = dir.to_str().context("the model directory is not UTF-8")?;
        cao_core::fs::atomic_write(
            &home.join("settings.json"),
            json!({"memory": {"embeddings": {"model_dir": dir}}})
                .to_string()
                .as_bytes(),
        )?;
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    rt.block_on(async {
        let mut out = McpBench {
            model: model.is_some(),
            ..McpBench::default()
        };
        let (client, mut child) = start(server, &home, root).await?;
        // Wait for the model to load before timing stores (the first-call rows below measure the loading start).
        if model.is_some() {
            call(&client, "memory_recall", json!({"query": "warm up"})).await?;
        }
        for (i, turn) in turns.iter().take(n_store).enumerate() {
            let t = Instant::now();
            call(
                &client,
                "memory_store",
                json!({"content": turn, "key": format!("turn-{i}"), "scope": "project"}),
            )
            .await?;
            out.store.push(t.elapsed());
            out.stored += 1;
        }
        if let Some(id) = &model_id {
            let t = Instant::now();
            loop {
                if vectors_missing(&home, id)? == 0 {
                    break;
                }
                if t.elapsed() > DENSE_WAIT {
                    bail!("the background worker did not embed every memory within {DENSE_WAIT:?}");
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            out.dense_catch_up = Some(t.elapsed());
        }
        for q in questions.iter().take(n_recall) {
            let t = Instant::now();
            call(&client, "memory_recall", json!({"query": q})).await?;
            out.recall.push(t.elapsed());
        }
        stop(client, &mut child).await?;
        for i in 0..restarts {
            let t = Instant::now();
            let (client, mut child) = start(server, &home, root).await?;
            out.start.push(t.elapsed());
            let t = Instant::now();
            call(
                &client,
                "memory_recall",
                json!({"query": questions.get(i % questions.len().max(1)).map_or("start", String::as_str)}),
            )
            .await?;
            out.first_call.push(t.elapsed());
            stop(client, &mut child).await?;
        }
        Ok(out)
    })
}

/// Spawn `server` on `home` and initialise an MCP session with it.
async fn start(
    server: &Path,
    home: &Path,
    cwd: &Path,
) -> Result<(RunningService<RoleClient, ()>, tokio::process::Child)> {
    let mut child = tokio::process::Command::new(server)
        .env("CAO_HOME", home)
        .env("CAO_PROJECT_ID", PROJECT)
        .env("CAO_MEMORY_SUMMARIZE", "false")
        .env_remove("CAO_MEMORY_ENABLED")
        .env_remove("CAO_EMBED_MODEL")
        .env_remove("CAO_MEMORY_COMPILE_MODE")
        .current_dir(cwd)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .with_context(|| format!("starting {}", server.display()))?;
    let stdin = child.stdin.take().context("the server's stdin")?;
    let stdout = child.stdout.take().context("the server's stdout")?;
    let client = ().serve((stdout, stdin)).await.context("MCP initialize")?;
    Ok((client, child))
}

/// End the session and wait for the process (killed if it does not exit on its own within 10 s).
async fn stop(client: RunningService<RoleClient, ()>, child: &mut tokio::process::Child) -> Result<()> {
    client.cancel().await.context("closing the MCP session")?;
    if tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .is_err()
    {
        child.kill().await?;
    }
    Ok(())
}

/// Call `tool` with `args`; its JSON payload, which must say `success: true`.
async fn call(client: &RunningService<RoleClient, ()>, tool: &'static str, args: Value) -> Result<Value> {
    let Value::Object(arguments) = args else {
        bail!("tool arguments must be an object")
    };
    let result = client
        .call_tool(CallToolRequestParams::new(tool).with_arguments(arguments))
        .await
        .with_context(|| format!("{tool} call"))?;
    let text = result
        .content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .with_context(|| format!("{tool} answered without text content"))?;
    let payload: Value = serde_json::from_str(&text).with_context(|| format!("{tool} payload: {text}"))?;
    if payload["success"] != Value::Bool(true) {
        bail!("{tool} failed: {text}");
    }
    Ok(payload)
}

/// Memories of the home without a vector of model `model_id`, read through a store of this process.
fn vectors_missing(home: &Path, model_id: &str) -> Result<usize> {
    let svc = cao_memory::MemoryService::open_with(
        cao_core::CaoHome::new(home),
        cao_core::Settings::default(),
        std::sync::Arc::new(cao_core::SystemClock),
    )?;
    Ok(svc.storage().read()?.vector_counts(model_id)?.without)
}

#[allow(clippy::print_stdout, reason = "the bench binary's table")]
/// Print the rows as the bench table (`| memories | operation | p50 | p95 | p99 | n |`).
pub fn print(b: &McpBench) {
    let n = b.stored;
    let with = if b.model { "with the model" } else { "lexical" };
    let row = |op: &str, st: &Stats| st.print_row(n, op);
    row(&format!("MCP stdio memory_store, {with}"), &b.store);
    if let Some(d) = b.dense_catch_up {
        let mut once = Stats::default();
        once.push(d);
        row("MCP stdio: last store's answer until every vector is stored", &once);
    }
    row(&format!("MCP stdio memory_recall (hybrid/recency), {with}"), &b.recall);
    row(
        &format!("MCP stdio: spawn until the initialize answer, {with}"),
        &b.start,
    );
    row(
        &format!("MCP stdio: first memory_recall after start, {with}"),
        &b.first_call,
    );
}
