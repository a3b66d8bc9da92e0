//! Surgical edits of a JSON config file's text: a member or array element is inserted, replaced or removed by
//! splicing the bytes around it, so everything else in the file (key order, indentation, spacing, line endings,
//! other entries) stays byte for byte as it was.
//!
//! Why not parse, change and re-render: a re-rendered file loses the user's formatting (indent width, CRLF, a
//! missing final newline, the order of keys), and `--remove` could not give back the file as it was before
//! `setup`. Here the document is parsed twice, by `serde_json` (strict JSON, the judge of validity: its error gives
//! the line and column) and by `jsonc_parser` (an AST with the byte range of every node, to know where to splice).
//!
//! Invariants:
//! - Inserting is the exact inverse of removing: a member is added after the last member of its object as
//!   `,<nl><indent>"key": <value>` (the indent of the last member, the file's own line break), and removing a member
//!   that is not the first deletes from the end of the previous member's value to the end of its own value. So a
//!   file that setup changed and `--remove` changed back is byte-identical, whatever else is in it.
//! - A container (object or array) created to hold the entry is rendered in one piece, and one emptied by a removal
//!   is removed with it, up to the document root; a root left empty means the file goes. A container that was
//!   already there but empty (`"mcpServers": {}`) therefore goes too when its only member is removed: the one case
//!   where the bytes differ afterwards (the meaning does not).
//! - New text follows the file: its line break (`\r\n` when the first line break is one), its indent unit (the
//!   indent of the root's first member, else two spaces), one-line objects get one-line insertions.
//! - Every edit re-parses its result; callers compare meanings with `serde_json` values.

use jsonc_parser::ast;
use jsonc_parser::common::Ranged;
use jsonc_parser::{CollectOptions, ParseOptions};
use serde_json::Value;
use std::fmt::Write as _;

/// A JSON value to write, keeping the order its members are given in (serde_json's map would sort them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Node {
    /// A string.
    Str(String),
    /// An array.
    Arr(Vec<Node>),
    /// An object, members in this order.
    Obj(Vec<(String, Node)>),
}

impl Node {
    /// An object from `(key, value)` pairs.
    pub(crate) fn obj<const N: usize>(members: [(&str, Node); N]) -> Node {
        Node::Obj(members.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// A string node.
    pub(crate) fn str(s: impl Into<String>) -> Node {
        Node::Str(s.into())
    }

    /// The same value as `serde_json` sees it (to compare with what a file holds).
    pub(crate) fn to_value(&self) -> Value {
        match self {
            Node::Str(s) => Value::String(s.clone()),
            Node::Arr(items) => Value::Array(items.iter().map(Node::to_value).collect()),
            Node::Obj(members) => Value::Object(members.iter().map(|(k, v)| (k.clone(), v.to_value())).collect()),
        }
    }

    /// Pretty text: nested lines indented by `base` plus one `unit` per level, broken with `nl`.
    fn pretty(&self, base: &str, style: &Style) -> String {
        let inner = format!("{base}{}", style.unit);
        match self {
            Node::Str(s) => quote(s),
            Node::Arr(items) if items.is_empty() => "[]".to_owned(),
            Node::Obj(members) if members.is_empty() => "{}".to_owned(),
            Node::Arr(items) => {
                let parts: Vec<String> = items
                    .iter()
                    .map(|i| format!("{inner}{}", i.pretty(&inner, style)))
                    .collect();
                format!(
                    "[{nl}{}{nl}{base}]",
                    parts.join(&format!(",{}", style.nl)),
                    nl = style.nl
                )
            }
            Node::Obj(members) => {
                let parts: Vec<String> = members
                    .iter()
                    .map(|(k, v)| format!("{inner}{}: {}", quote(k), v.pretty(&inner, style)))
                    .collect();
                format!(
                    "{{{nl}{}{nl}{base}}}",
                    parts.join(&format!(",{}", style.nl)),
                    nl = style.nl
                )
            }
        }
    }

    /// One-line text (`{"a": "b", "c": []}`).
    fn compact(&self) -> String {
        match self {
            Node::Str(s) => quote(s),
            Node::Arr(items) => format!("[{}]", items.iter().map(Node::compact).collect::<Vec<_>>().join(", ")),
            Node::Obj(members) => {
                let mut out = String::from("{");
                for (i, (k, v)) in members.iter().enumerate() {
                    let _ = write!(out, "{}{}: {}", if i == 0 { "" } else { ", " }, quote(k), v.compact());
                }
                out.push('}');
                out
            }
        }
    }
}

/// `s` as a JSON string literal.
fn quote(s: &str) -> String {
    Value::String(s.to_owned()).to_string()
}

/// The line break and indent unit new text uses in one file.
#[derive(Debug, Clone)]
struct Style {
    nl: &'static str,
    unit: String,
}

impl Style {
    fn of(text: &str, root: &ast::Object<'_>) -> Style {
        let nl = match text.find('\n') {
            Some(i) if i > 0 && text.as_bytes()[i - 1] == b'\r' => "\r\n",
            _ => "\n",
        };
        let unit = root
            .properties
            .first()
            .and_then(|p| indent_at(text, p.start()))
            .filter(|u| !u.is_empty())
            .unwrap_or("  ")
            .to_owned();
        Style { nl, unit }
    }
}

/// The whitespace between the start of `pos`'s line and `pos`, when only whitespace precedes it on its line.
fn indent_at(text: &str, pos: usize) -> Option<&str> {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[start..pos];
    lead.chars().all(|c| c == ' ' || c == '\t').then_some(lead)
}

/// The leading whitespace of the line holding `pos`.
fn line_indent(text: &str, pos: usize) -> &str {
    let start = text[..pos].rfind('\n').map_or(0, |i| i + 1);
    let line = &text[start..];
    let n = line.len() - line.trim_start_matches([' ', '\t']).len();
    &line[..n]
}

/// Parse `text` as strict JSON (the value) and as an AST (the ranges). The root must be an object.
///
/// Errors: the parse error with its line and column, or the root's kind.
pub(crate) fn parse(text: &str) -> Result<Value, String> {
    let value: Value = serde_json::from_str(text).map_err(|e| {
        format!(
            "is not valid JSON (line {}, column {}: {})",
            e.line(),
            e.column(),
            strip_position(&e)
        )
    })?;
    if !value.is_object() {
        return Err(format!("holds {}, not a JSON object", kind_of(&value)));
    }
    Ok(value)
}

/// serde_json's message without its trailing " at line L column C" (the caller says where).
fn strip_position(e: &serde_json::Error) -> String {
    let s = e.to_string();
    match s.rfind(" at line ") {
        Some(i) => s[..i].to_owned(),
        None => s,
    }
}

fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn ast_kind(v: &ast::Value<'_>) -> &'static str {
    match v {
        ast::Value::StringLit(_) => "a string",
        ast::Value::NumberLit(_) => "a number",
        ast::Value::BooleanLit(_) => "a boolean",
        ast::Value::Object(_) => "an object",
        ast::Value::Array(_) => "an array",
        ast::Value::NullKeyword(_) => "null",
    }
}

fn root(text: &str) -> Result<ast::Object<'_>, String> {
    parse(text)?;
    let strict = ParseOptions {
        allow_comments: false,
        allow_loose_object_property_names: false,
        allow_trailing_commas: false,
    };
    let parsed = jsonc_parser::parse_to_ast(text, &CollectOptions::default(), &strict)
        .map_err(|e| format!("is not valid JSON ({e})"))?;
    match parsed.value {
        Some(ast::Value::Object(o)) => Ok(o),
        _ => Err("is not a JSON object".to_owned()),
    }
}

/// How a path is shown in messages: `mcpServers.cao-memory`, `projects["/home/me/app"].mcpServers`.
pub(crate) fn show_path(path: &[&str]) -> String {
    let mut out = String::new();
    for (i, p) in path.iter().enumerate() {
        if !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
            if i > 0 {
                out.push('.');
            }
            out.push_str(p);
        } else {
            out.push('[');
            out.push_str(&quote(p));
            out.push(']');
        }
    }
    out
}

/// The object at `path` (every step an object), `None` when a step is missing.
///
/// Errors: a step that is not an object.
fn object_at<'t, 'a>(root: &'a ast::Object<'t>, path: &[&str]) -> Result<Option<&'a ast::Object<'t>>, String> {
    let mut cur = root;
    for (d, key) in path.iter().enumerate() {
        match cur.get(key) {
            None => return Ok(None),
            Some(prop) => match &prop.value {
                ast::Value::Object(o) => cur = o,
                other => {
                    return Err(format!(
                        "`{}` is {}, not an object",
                        show_path(&path[..=d]),
                        ast_kind(other)
                    ));
                }
            },
        }
    }
    Ok(Some(cur))
}

fn splice(text: &str, from: usize, to: usize, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    out.push_str(&text[..from]);
    out.push_str(with);
    out.push_str(&text[to..]);
    out
}

/// The new text of a file that does not exist yet, holding `path` = `value`.
fn new_file(path: &[&str], value: &Node) -> String {
    let style = Style {
        nl: "\n",
        unit: "  ".to_owned(),
    };
    let mut node = value.clone();
    for key in path.iter().rev() {
        node = Node::Obj(vec![((*key).to_owned(), node)]);
    }
    format!("{}\n", node.pretty("", &style))
}

/// `text` with the member `key` = `value` added to `obj` (which has no such member).
fn insert_member(text: &str, obj: &ast::Object<'_>, key: &str, value: &Node, style: &Style) -> String {
    match obj.properties.last() {
        Some(last) => {
            let first = &obj.properties[0];
            let multi_line = text[obj.start()..first.start()].contains('\n');
            match indent_at(text, last.start()).filter(|_| multi_line) {
                Some(ind) => {
                    let add = format!(",{}{ind}{}: {}", style.nl, quote(key), value.pretty(ind, style));
                    splice(text, last.end(), last.end(), &add)
                }
                None => splice(
                    text,
                    last.end(),
                    last.end(),
                    &format!(", {}: {}", quote(key), value.compact()),
                ),
            }
        }
        None => {
            let pind = line_indent(text, obj.start());
            let ind = format!("{pind}{}", style.unit);
            let inner = format!(
                "{nl}{ind}{}: {}{nl}{pind}",
                quote(key),
                value.pretty(&ind, style),
                nl = style.nl
            );
            splice(text, obj.start() + 1, obj.end() - 1, &inner)
        }
    }
}

/// `text` with `value` appended to `arr`.
fn insert_element(text: &str, arr: &ast::Array<'_>, value: &Node, style: &Style) -> String {
    match arr.elements.last() {
        Some(last) => {
            let multi_line = text[arr.start()..arr.elements[0].start()].contains('\n');
            match indent_at(text, last.start()).filter(|_| multi_line) {
                Some(ind) => {
                    let add = format!(",{}{ind}{}", style.nl, value.pretty(ind, style));
                    splice(text, last.end(), last.end(), &add)
                }
                None => splice(text, last.end(), last.end(), &format!(", {}", value.compact())),
            }
        }
        None => {
            let pind = line_indent(text, arr.start());
            let ind = format!("{pind}{}", style.unit);
            let inner = format!("{nl}{ind}{}{nl}{pind}", value.pretty(&ind, style), nl = style.nl);
            splice(text, arr.start() + 1, arr.end() - 1, &inner)
        }
    }
}

/// `text` without the `i`th of `ranges` (the members or elements of one container), `None` when it is the only one
/// (the container must go).
fn cut(text: &str, ranges: &[(usize, usize)], i: usize) -> Option<String> {
    if ranges.len() < 2 {
        return None;
    }
    Some(if i > 0 {
        splice(text, ranges[i - 1].1, ranges[i].1, "")
    } else {
        splice(text, ranges[0].0, ranges[1].0, "")
    })
}

/// Set `path` to `value` in the file's text (`None`: no file), creating the objects on the way. The new text, or
/// `None` when the member already holds exactly `value`.
///
/// Errors: the file is not a JSON object, or a step of `path` is not an object.
pub(crate) fn set(text: Option<&str>, path: &[&str], value: &Node) -> Result<Option<String>, String> {
    let Some(text) = text else {
        return Ok(Some(new_file(path, value)));
    };
    let root = root(text)?;
    let style = Style::of(text, &root);
    let (last, parents) = path.split_last().ok_or("empty path")?;
    // The deepest object on the path that exists, and where the path leaves the file.
    let mut cur = &root;
    for (d, key) in parents.iter().enumerate() {
        match cur.get(key) {
            None => {
                let mut node = value.clone();
                for k in path[d + 1..].iter().rev() {
                    node = Node::Obj(vec![((*k).to_owned(), node)]);
                }
                return Ok(Some(insert_member(text, cur, key, &node, &style)));
            }
            Some(prop) => match &prop.value {
                ast::Value::Object(o) => cur = o,
                other => {
                    return Err(format!(
                        "`{}` is {}, not an object",
                        show_path(&path[..=d]),
                        ast_kind(other)
                    ));
                }
            },
        }
    }
    match cur.get(last) {
        None => Ok(Some(insert_member(text, cur, last, value, &style))),
        Some(prop) => {
            let whole = parse(text)?;
            let old = path.iter().try_fold(&whole, |v, k| v.get(*k));
            if old == Some(&value.to_value()) {
                return Ok(None);
            }
            let with = match indent_at(text, prop.start()) {
                Some(ind) => value.pretty(ind, &style),
                None => value.compact(),
            };
            Ok(Some(splice(text, prop.value.start(), prop.value.end(), &with)))
        }
    }
}

/// Remove the member at `path`, and every container that this leaves empty. `Ok(None)` when the member is not
/// there; `Ok(Some(None))` when the root is left empty (the file should go).
///
/// Errors: the file is not a JSON object, or a step of `path` is not an object.
pub(crate) fn remove(text: &str, path: &[&str]) -> Result<Option<Option<String>>, String> {
    let root = root(text)?;
    let (last, parents) = path.split_last().ok_or("empty path")?;
    let Some(obj) = object_at(&root, parents)? else {
        return Ok(None);
    };
    let Some(i) = obj.properties.iter().position(|p| p.name.as_str() == *last) else {
        return Ok(None);
    };
    let ranges: Vec<(usize, usize)> = obj.properties.iter().map(|p| (p.start(), p.end())).collect();
    Ok(Some(match cut(text, &ranges, i) {
        Some(t) => Some(t),
        None if parents.is_empty() => None,
        None => remove(text, parents)?.flatten(),
    }))
}

/// The elements of the array at `path` as values; empty when the array is not there.
///
/// Errors: the file is not a JSON object, or a step of `path` is not an object, or the member is not an array.
pub(crate) fn elements(text: Option<&str>, path: &[&str]) -> Result<Vec<Value>, String> {
    let Some(text) = text else {
        return Ok(Vec::new());
    };
    let value = parse(text)?;
    let root = root(text)?;
    let (last, parents) = path.split_last().ok_or("empty path")?;
    let Some(obj) = object_at(&root, parents)? else {
        return Ok(Vec::new());
    };
    match obj.get(last).map(|p| &p.value) {
        None => Ok(Vec::new()),
        Some(ast::Value::Array(_)) => {
            let mut v = &value;
            for key in path {
                v = &v[*key];
            }
            Ok(v.as_array().cloned().unwrap_or_default())
        }
        Some(other) => Err(format!("`{}` is {}, not an array", show_path(path), ast_kind(other))),
    }
}

/// Append `value` to the array at `path`, creating it (and the objects on the way) when missing.
///
/// Errors: as [`elements`].
pub(crate) fn append(text: Option<&str>, path: &[&str], value: &Node) -> Result<String, String> {
    let Some(t) = text else {
        return Ok(new_file(path, &Node::Arr(vec![value.clone()])));
    };
    let root = root(t)?;
    let style = Style::of(t, &root);
    let (last, parents) = path.split_last().ok_or("empty path")?;
    match object_at(&root, parents)?.and_then(|o| o.get(last)).map(|p| &p.value) {
        Some(ast::Value::Array(arr)) => Ok(insert_element(t, arr, value, &style)),
        Some(other) => Err(format!("`{}` is {}, not an array", show_path(path), ast_kind(other))),
        None => set(text, path, &Node::Arr(vec![value.clone()]))?.ok_or_else(|| "nothing to append to".to_owned()),
    }
}

/// Remove element `index` of the array at `path`, and every container this leaves empty; `None` when the root is
/// left empty (the file should go).
///
/// Errors: as [`elements`], or no such element.
pub(crate) fn remove_element(text: &str, path: &[&str], index: usize) -> Result<Option<String>, String> {
    let root = root(text)?;
    let (last, parents) = path.split_last().ok_or("empty path")?;
    let arr = match object_at(&root, parents)?.and_then(|o| o.get(last)).map(|p| &p.value) {
        Some(ast::Value::Array(arr)) if index < arr.elements.len() => arr,
        _ => return Err(format!("`{}` has no element {index}", show_path(path))),
    };
    let ranges: Vec<(usize, usize)> = arr.elements.iter().map(|e| (e.start(), e.end())).collect();
    match cut(text, &ranges, index) {
        Some(t) => Ok(Some(t)),
        None => Ok(remove(text, path)?.flatten()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> Node {
        Node::obj([("command", Node::str("cao-mcp-server")), ("args", Node::Arr(vec![]))])
    }

    #[test]
    fn a_member_added_then_removed_leaves_the_same_bytes() {
        for original in [
            "{\n  \"a\": 1,\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"}\n  }\n}\n",
            "{\r\n\t\"z\": [1, 2],\r\n\t\"a\": {}\r\n}",
            "{\"a\": 1, \"mcpServers\": {\"other\": {}}}",
            "{\n    \"mcpServers\": {\n        \"other\": {\n            \"command\": \"é\"\n        }\n    },\n    \"z\": true\n}\n",
            "{}",
            "{\n}\n",
        ] {
            let path = ["mcpServers", "cao-memory"];
            let added = set(Some(original), &path, &entry()).expect("set").expect("changed");
            let value = parse(&added).expect("still JSON");
            assert_eq!(value["mcpServers"]["cao-memory"], entry().to_value(), "{added}");
            assert_eq!(set(Some(&added), &path, &entry()).expect("set"), None, "idempotent");
            let removed = remove(&added, &path).expect("remove").expect("was there");
            if original
                .trim_start_matches('{')
                .trim_end()
                .trim_end_matches('}')
                .trim()
                .is_empty()
            {
                assert_eq!(removed, None, "the root is empty again: the file goes");
            } else {
                assert_eq!(removed.as_deref(), Some(original), "{added}");
            }
        }
    }

    #[test]
    fn new_text_follows_the_file_style() {
        let added = set(Some("{\r\n\t\"a\": 1\r\n}"), &["mcpServers", "cao-memory"], &entry()).expect("set");
        assert_eq!(
            added.as_deref(),
            Some(
                "{\r\n\t\"a\": 1,\r\n\t\"mcpServers\": {\r\n\t\t\"cao-memory\": {\r\n\t\t\t\"command\": \
                 \"cao-mcp-server\",\r\n\t\t\t\"args\": []\r\n\t\t}\r\n\t}\r\n}"
            )
        );
        let one_line = set(Some("{\"a\": 1}"), &["b"], &Node::str("c")).expect("set");
        assert_eq!(one_line.as_deref(), Some("{\"a\": 1, \"b\": \"c\"}"));
        assert_eq!(
            new_file(&["x", "y"], &Node::str("z")),
            "{\n  \"x\": {\n    \"y\": \"z\"\n  }\n}\n"
        );
    }

    #[test]
    fn replacing_a_member_keeps_its_place() {
        let text = "{\n  \"mcpServers\": {\n    \"cao-memory\": {\"command\": \"old\"},\n    \"b\": {}\n  }\n}\n";
        let out = set(
            Some(text),
            &["mcpServers", "cao-memory"],
            &Node::obj([("command", Node::str("new"))]),
        )
        .expect("set")
        .expect("changed");
        assert_eq!(
            out,
            "{\n  \"mcpServers\": {\n    \"cao-memory\": {\n      \"command\": \"new\"\n    },\n    \"b\": {}\n  }\n}\n"
        );
    }

    #[test]
    fn elements_append_and_remove_invert() {
        let text = "{\n  \"hooks\": {\n    \"SessionStart\": [\n      {\"hooks\": []}\n    ]\n  }\n}\n";
        let group = Node::obj([("hooks", Node::Arr(vec![Node::obj([("type", Node::str("command"))])]))]);
        let added = append(Some(text), &["hooks", "SessionStart"], &group).expect("append");
        assert_eq!(
            elements(Some(&added), &["hooks", "SessionStart"]).expect("read").len(),
            2
        );
        assert_eq!(
            remove_element(&added, &["hooks", "SessionStart"], 1)
                .expect("remove")
                .as_deref(),
            Some(text)
        );
        let created = append(Some(text), &["hooks", "UserPromptSubmit"], &group).expect("append");
        assert_eq!(
            remove_element(&created, &["hooks", "UserPromptSubmit"], 0)
                .expect("remove")
                .as_deref(),
            Some(text)
        );
        // The only element of the only event of the only key: the file goes.
        let only = append(None, &["hooks", "SessionStart"], &group).expect("append");
        assert_eq!(
            remove_element(&only, &["hooks", "SessionStart"], 0).expect("remove"),
            None
        );
    }

    #[test]
    fn refusals_name_the_problem() {
        let e = set(Some("{\"a\": 1,}"), &["b"], &Node::str("c")).expect_err("trailing comma");
        assert!(e.starts_with("is not valid JSON (line 1, column 9: "), "{e}");
        let e = set(Some("[1]"), &["b"], &Node::str("c")).expect_err("array root");
        assert_eq!(e, "holds an array, not a JSON object");
        let e = set(
            Some("{\"mcpServers\": \"x\"}"),
            &["mcpServers", "cao-memory"],
            &Node::str("c"),
        )
        .expect_err("kind");
        assert_eq!(e, "`mcpServers` is a string, not an object");
        let e = append(
            Some("{\"hooks\": {\"SessionStart\": {}}}"),
            &["hooks", "SessionStart"],
            &Node::str("c"),
        )
        .expect_err("kind");
        assert_eq!(e, "`hooks.SessionStart` is an object, not an array");
        let e = set(
            Some("{\"projects\": {\"/a\": 3}}"),
            &["projects", "/a", "mcpServers"],
            &Node::str("c"),
        )
        .expect_err("kind");
        assert_eq!(e, "`projects[\"/a\"]` is a number, not an object");
        assert!(
            set(Some("// c\n{}"), &["b"], &Node::str("c")).is_err(),
            "comments are not JSON"
        );
        assert!(
            set(Some(""), &["b"], &Node::str("c")).is_err(),
            "an empty file is not JSON"
        );
    }
}
