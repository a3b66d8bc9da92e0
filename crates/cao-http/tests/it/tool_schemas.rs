//! One wire type per tool: for every tool, the MCP `inputSchema` (`tools/list`) and the OpenAPI request body of its
//! internal route (`/openapi.json`) describe the same arguments: the same property names, JSON types, enumerated
//! values and required set, once `$ref`s are resolved (the route's body adds only the caller's `context`).

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use cao_core::CaoHome;
use cao_http::{HttpConfig, router};
use cao_mcp::{MemoryTools, ServiceHandle, Tool};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use tower::ServiceExt as _;

/// The served OpenAPI document.
async fn openapi() -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let app = router(ServiceHandle::lazy(CaoHome::new(dir.path())), HttpConfig::default());
    let req = Request::get("/openapi.json")
        .header("host", "127.0.0.1")
        .body(Body::empty())
        .expect("request");
    let resp = app.oneshot(req).await.expect("router is infallible");
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = to_bytes(resp.into_body(), 1 << 24).await.expect("body");
    serde_json::from_slice(&bytes).expect("JSON document")
}

/// `v` with its `$ref` (a JSON pointer into `root`, e.g. `#/components/schemas/Scope`) followed, repeatedly.
fn resolve<'a>(root: &'a Value, mut v: &'a Value) -> &'a Value {
    while let Some(r) = v.get("$ref").and_then(Value::as_str) {
        let pointer = r.strip_prefix('#').unwrap_or_else(|| panic!("external reference {r}"));
        v = root
            .pointer(pointer)
            .unwrap_or_else(|| panic!("dangling reference {r}"));
    }
    v
}

/// An object schema's properties and required names, `allOf` members merged (a flattened field is an `allOf`).
fn object(root: &Value, schema: &Value) -> (BTreeMap<String, Value>, BTreeSet<String>) {
    let schema = resolve(root, schema);
    let mut props = BTreeMap::new();
    let mut required = BTreeSet::new();
    for part in schema.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        let (p, r) = object(root, part);
        props.extend(p);
        required.extend(r);
    }
    if let Some(p) = schema.get("properties").and_then(Value::as_object) {
        props.extend(p.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    if let Some(r) = schema.get("required").and_then(Value::as_array) {
        required.extend(r.iter().map(|n| n.as_str().expect("a required name").to_owned()));
    }
    (props, required)
}

/// What a property accepts: its JSON types (`null` included when it may be null) and, for an enumeration, its
/// values (JSON text, without `null`). `oneOf` / `anyOf` / `allOf` members are united.
#[derive(Debug, Default, PartialEq, Eq)]
struct Shape {
    types: BTreeSet<String>,
    values: Option<BTreeSet<String>>,
}

fn shape(root: &Value, prop: &Value) -> Shape {
    let prop = resolve(root, prop);
    let mut s = Shape::default();
    for key in ["oneOf", "anyOf", "allOf"] {
        for member in prop.get(key).and_then(Value::as_array).into_iter().flatten() {
            let m = shape(root, member);
            s.types.extend(m.types);
            if let Some(v) = m.values {
                s.values.get_or_insert_with(BTreeSet::new).extend(v);
            }
        }
    }
    match prop.get("type") {
        Some(Value::String(t)) => {
            s.types.insert(t.clone());
        }
        Some(Value::Array(ts)) => s
            .types
            .extend(ts.iter().map(|t| t.as_str().expect("type name").to_owned())),
        _ => {}
    }
    for v in prop.get("enum").and_then(Value::as_array).into_iter().flatten() {
        if v.is_null() {
            s.types.insert("null".into());
        } else {
            s.values.get_or_insert_with(BTreeSet::new).insert(v.to_string());
        }
    }
    s
}

/// The arguments a schema describes: each property's shape, and the required names.
type Described = (BTreeMap<String, Shape>, BTreeSet<String>);

fn described(root: &Value, schema: &Value) -> Described {
    let (props, required) = object(root, schema);
    let shapes = props.iter().map(|(k, v)| (k.clone(), shape(root, v))).collect();
    (shapes, required)
}

/// The MCP `inputSchema` of `tool`.
fn mcp_schema(tool: Tool) -> Value {
    let def = MemoryTools::tools()
        .into_iter()
        .find(|t| t.name == tool.name())
        .unwrap_or_else(|| panic!("{tool} is listed"));
    Value::Object(def.input_schema.as_ref().clone())
}

/// The arguments of `tool`'s internal route in `doc`: its request body without the caller's `context`.
fn route_arguments(doc: &Value, tool: Tool) -> Described {
    let op = &doc["paths"][tool.internal_path()]["post"];
    let body = &op["requestBody"]["content"]["application/json"]["schema"];
    assert!(
        body.is_object(),
        "{tool}: {} documents a JSON request body",
        tool.internal_path()
    );
    let (mut shapes, mut required) = described(doc, body);
    let context = shapes.remove("context");
    assert!(
        context.is_some(),
        "{tool}: the route's body carries the caller's context"
    );
    assert!(!required.remove("context"), "{tool}: the context is optional");
    (shapes, required)
}

#[tokio::test]
async fn every_tools_mcp_input_schema_is_its_internal_routes_request_body() {
    let doc = openapi().await;
    for tool in Tool::ALL {
        let mcp = mcp_schema(tool);
        let (mcp_shapes, mcp_required) = described(&mcp, &mcp);
        assert!(!mcp_shapes.is_empty(), "{tool} has arguments");
        assert!(
            mcp_shapes.values().all(|s| !s.types.is_empty()),
            "{tool}: every MCP argument has a type: {mcp_shapes:?}"
        );
        let (http_shapes, http_required) = route_arguments(&doc, tool);
        assert_eq!(
            mcp_shapes.keys().collect::<Vec<_>>(),
            http_shapes.keys().collect::<Vec<_>>(),
            "{tool}: the same argument names"
        );
        for (name, s) in &mcp_shapes {
            assert_eq!(s, &http_shapes[name], "{tool}.{name}: the same types and values");
        }
        assert_eq!(mcp_required, http_required, "{tool}: the same required arguments");
    }
}

#[tokio::test]
async fn the_comparison_tells_different_tools_apart() {
    // The equality above is not vacuous: one tool's schema never matches another's route, and enumerations count.
    let doc = openapi().await;
    let store = described(&mcp_schema(Tool::Store), &mcp_schema(Tool::Store));
    assert_ne!(store, route_arguments(&doc, Tool::Recall));
    assert_ne!(store, route_arguments(&doc, Tool::StoreLesson));
    let scope = &store.0["scope"];
    assert_eq!(
        scope.values.as_ref().map(BTreeSet::len),
        Some(5),
        "the five scopes: {scope:?}"
    );
    assert!(
        scope.types.contains("null") && scope.types.contains("string"),
        "{scope:?}"
    );
    let (recall, _) = route_arguments(&doc, Tool::Recall);
    assert_eq!(
        recall["sort_by"].values,
        Some(
            ["\"recency\"", "\"score\"", "\"usage\"", "\"relevance\""]
                .map(String::from)
                .into()
        )
    );
}
