//! MCP tool arguments: arbitrary JSON into every tool, through the path an agent's `tools/call` takes
//! (cao-mcp `MemoryTools::call`: the arguments' shaping, the service's validation, the call itself) on a
//! service over a temporary home.
//!
//! Mode byte: which tool (`Tool::ALL[mode % 11]`; 255: every tool in turn); the rest is the JSON of the arguments
//! (anything that is not a JSON object is sent as no arguments). Properties: no panic, and every answer is a JSON
//! object with a boolean `success` (a failure is a payload the agent reads, never a protocol error for a known
//! tool). The home is recreated every 2,000 inputs so its size stays small.
#![no_main]

use cao_mcp::{FixedContext, FlushSignal, MemoryTools, ServiceHandle, Tool};
use cao_testkit::service::ServiceFixture;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use std::cell::RefCell;
use std::sync::Arc;

struct Harness {
    runtime: tokio::runtime::Runtime,
    fixture: ServiceFixture,
    tools: MemoryTools,
    calls: usize,
}

impl Harness {
    fn new() -> Self {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let fixture = ServiceFixture::builder()
            .project("fuzz-project")
            .session("fuzz-session")
            .agent("fuzz-agent")
            .open();
        let tools = MemoryTools::new(
            ServiceHandle::open(fixture.svc.clone()),
            Arc::new(FixedContext(fixture.ctx.clone())),
            FlushSignal::new(),
        );
        Self {
            runtime,
            fixture,
            tools,
            calls: 0,
        }
    }
}

thread_local! {
    static HARNESS: RefCell<Option<Harness>> = const { RefCell::new(None) };
}

fuzz_target!(|data: &[u8]| {
    let (mode, rest) = cao_fuzz::mode(data);
    let args = match serde_json::from_slice::<Value>(rest) {
        Ok(Value::Object(map)) => Some(map),
        _ => None,
    };
    let tools: Vec<Tool> = if mode == 255 {
        Tool::ALL.to_vec()
    } else {
        vec![Tool::ALL[usize::from(mode) % Tool::ALL.len()]]
    };
    HARNESS.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.as_ref().is_none_or(|h| h.calls >= 2_000) {
            *slot = None;
            *slot = Some(Harness::new());
        }
        let h = slot.as_mut().expect("harness set above");
        h.calls += 1;
        for tool in tools {
            let ctx = h.fixture.ctx.clone();
            let answer = h
                .runtime
                .block_on(h.tools.call(tool.name(), args.clone(), ctx))
                .expect("a known tool never answers a protocol error");
            let success = answer.get("success").and_then(Value::as_bool);
            assert!(success.is_some(), "{}: answer without a boolean success: {answer}", tool.name());
        }
    });
});
