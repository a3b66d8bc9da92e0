//! The background summarizer of long-running processes (`cao-server`, and `cao-mcp-server` while its session runs;
//! spec 001 "Summaries and spend"): it writes the journal's summary lines, two at a time per process, sharing the
//! work with every other process on the same home through leases (no line is written twice; a line whose model call
//! failed for a passing reason is tried again 10 s later by whichever process gets to it). One-shot commands never
//! run it.
//!
//! Each round is one blocking step: read the settings (`memory.enabled` and `memory.summarize`, default true, are
//! checked every round, so switching either off stops the work at the next round), then
//! `MemoryService::summarize_pass` with this process's model and lease holder. A round that wrote or tried
//! something is followed at once by the next; an idle round waits [`IDLE_PAUSE`]. The model is built from the
//! settings once, at the first round that needs it (`memory.model.*`; a process sees a change after a restart);
//! when it cannot be built, summaries pause and the reason is logged once. Nothing is created on disk: rounds do
//! nothing until the store exists.

use crate::handle::ServiceHandle;
use cao_memory::SummarizeWorker;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// How long the summarizer waits after a round that found nothing to do.
pub const IDLE_PAUSE: Duration = Duration::from_secs(2);

/// What one round did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Lines were written or tried: go again at once.
    Busy,
    /// Nothing to do (or summarizing is off, or the store does not exist yet).
    Idle,
}

/// This process's model and lease holder, built at the first round that needs them.
struct Summarizer {
    model: Option<(Box<dyn cao_model::Model>, SummarizeWorker)>,
    /// The reason the model cannot be built, logged once.
    failed: Option<String>,
}

impl Summarizer {
    /// One round (blocking; module docs).
    fn round(&mut self, svc: &ServiceHandle) -> Round {
        let settings = svc.settings();
        if !settings.memory_enabled() || !settings.summarize_enabled() {
            return Round::Idle;
        }
        if svc.opened().is_none() && !svc.home().db_path().is_file() {
            return Round::Idle;
        }
        if self.model.is_none() {
            if self.failed.is_some() {
                return Round::Idle;
            }
            let timeout = settings.model_settings().map(|m| m.timeout).unwrap_or_default();
            match cao_model::from_settings(&settings) {
                Ok(model) => {
                    tracing::info!(model = %model.info(), "summarizing the memory journals in the background");
                    self.model = Some((model, SummarizeWorker::new(timeout)));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "the summary model cannot be built; summaries pause until a restart");
                    self.failed = Some(e.to_string());
                    return Round::Idle;
                }
            }
        }
        let Some((model, worker)) = self.model.as_ref() else {
            return Round::Idle;
        };
        let svc = match svc.get() {
            Ok(s) => s.with_settings(settings),
            Err(e) => {
                tracing::warn!(error = %e, "the summarizer cannot open the store");
                return Round::Idle;
            }
        };
        match svc.summarize_pass(model.as_ref(), worker) {
            Ok(report) if report.idle() => Round::Idle,
            Ok(report) => {
                tracing::debug!(
                    written = report.written,
                    model_calls = report.model_calls,
                    retry_later = report.retry_later,
                    "summarized"
                );
                Round::Busy
            }
            Err(e) => {
                tracing::warn!(error = %e, "summarizing failed; trying again later");
                Round::Idle
            }
        }
    }
}

/// Summarize in the background until `stop` is cancelled (module docs). A round in progress finishes first (its
/// model calls are bounded by the model timeout).
pub async fn run_summarizer(svc: ServiceHandle, stop: CancellationToken) {
    let mut state = Some(Summarizer {
        model: None,
        failed: None,
    });
    while !stop.is_cancelled() {
        let Some(mut s) = state.take() else {
            return;
        };
        let handle = svc.clone();
        let step = tokio::task::spawn_blocking(move || {
            let round = s.round(&handle);
            (s, round)
        })
        .await;
        let round = match step {
            Ok((s, round)) => {
                state = Some(s);
                round
            }
            Err(e) => {
                tracing::warn!(error = %e, "the summarizer task failed; summaries stop");
                return;
            }
        };
        if round == Round::Idle {
            tokio::select! {
                () = tokio::time::sleep(IDLE_PAUSE) => {}
                () = stop.cancelled() => return,
            }
        } else {
            tokio::task::yield_now().await;
        }
    }
}
