//! Writing `settings.json`: [`set`] and [`unset`] one known setting.
//!
//! Invariants:
//! - The key and value are validated before any I/O; an invalid one writes nothing.
//! - Every other key and value in the file is kept, unknown keys included, in their original order.
//! - An unreadable or unparsable file (or one that is not a JSON object) is never overwritten: the call fails
//!   naming the file and nothing is written. The same holds when a parent of the key holds a non-object value.
//! - The update is a read-modify-write under an exclusive lock on `<home>/.settings.json.lock`, so concurrent
//!   writers never lose each other's keys; the new file replaces the old atomically ([`crate::fs::atomic_write`]:
//!   temp file in the same directory, fsync, rename, directory fsync) and has mode 0600. A missing home directory
//!   is created (0700).
//! - The file is written as two-space indented JSON followed by a newline.

use super::keys::{SettingKey, lookup, parse_value};
use crate::error::CoreError;
use crate::fs::{atomic_write, create_private_dir_all, lock_exclusive};
use crate::home::CaoHome;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};
use std::fmt;
use std::fs;
use std::io;
use std::path::PathBuf;

/// What [`set`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct SetOutcome {
    /// The setting written.
    pub key: &'static SettingKey,
    /// The value now stored in the file.
    pub value: Value,
    /// The value the file held before (`None`: absent).
    pub previous: Option<Value>,
    /// The file written.
    pub path: PathBuf,
}

/// Store `raw` (parsed for the key's type, see [`parse_value`]) as the file value of the setting `name` in
/// `<home>/settings.json`, creating the file and parent objects as needed.
///
/// Errors: [`CoreError::UnknownSetting`] / [`CoreError::InvalidSettingValue`] (before any I/O);
/// [`CoreError::SettingsUnusable`] when the existing file cannot be read or parsed, is not an object, or a parent
/// of the key holds a non-object value (nothing written); [`CoreError::SettingsWrite`] when writing fails.
pub fn set(home: &CaoHome, name: &str, raw: &str) -> Result<SetOutcome, CoreError> {
    let key = lookup(name)?;
    let value = parse_value(key, raw)?;
    let path = home.settings_path();
    let previous = update(home, key, Mode::Set, |parent, leaf| {
        parent.insert(leaf, Doc::from_value(&value))
    })?;
    Ok(SetOutcome {
        key,
        value,
        previous,
        path,
    })
}

/// Remove the file value of the setting `name` from `<home>/settings.json` (parent objects are kept, even when
/// they become empty). Returns the removed value, `None` when the key was absent (then nothing is written).
///
/// Errors: as [`set`].
pub fn unset(home: &CaoHome, name: &str) -> Result<Option<Value>, CoreError> {
    let key = lookup(name)?;
    update(home, key, Mode::Unset, |parent, leaf| parent.remove(leaf))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Create missing parent objects; always write.
    Set,
    /// Never create anything; write only when a value was removed.
    Unset,
}

/// Lock, read, apply `edit` to the object holding the key's last segment, write back (see [`Mode`]). `edit`
/// returns the key's previous value, which is returned as JSON.
fn update(
    home: &CaoHome,
    key: &SettingKey,
    mode: Mode,
    edit: impl FnOnce(&mut Object, &str) -> Option<Doc>,
) -> Result<Option<Value>, CoreError> {
    let path = home.settings_path();
    let write_err = |e: io::Error| CoreError::SettingsWrite {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let unusable = |reason: String| CoreError::SettingsUnusable {
        path: path.display().to_string(),
        reason,
    };
    if mode == Mode::Set {
        create_private_dir_all(home.root()).map_err(write_err)?;
    } else if !home.root().is_dir() {
        return Ok(None);
    }
    let _lock = lock_exclusive(&home.root().join(".settings.json.lock")).map_err(write_err)?;

    let mut root = match fs::read_to_string(&path) {
        Ok(text) => match serde_json::from_str::<Doc>(&text) {
            Ok(Doc::Object(map)) => map,
            Ok(_) => return Err(unusable("it is not a JSON object".to_owned())),
            Err(e) => return Err(unusable(format!("it is not valid JSON ({e})"))),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if mode == Mode::Unset {
                return Ok(None);
            }
            Object::default()
        }
        Err(e) => return Err(unusable(format!("it cannot be read ({e})"))),
    };
    let mut parts: Vec<&str> = key.name.split('.').collect();
    let leaf = parts.pop().unwrap_or(key.name);
    let previous = match parent_mut(&mut root, &parts, mode == Mode::Set).map_err(|(walked, found)| {
        unusable(format!(
            "{walked} holds {found}, not an object, so {} cannot be stored under it; fix or remove {walked} first",
            key.name
        ))
    })? {
        Some(parent) => edit(parent, leaf),
        None => None,
    };
    if mode == Mode::Set || previous.is_some() {
        let mut text = serde_json::to_string_pretty(&Doc::Object(root)).map_err(|e| write_err(io::Error::other(e)))?;
        text.push('\n');
        atomic_write(&path, text.as_bytes()).map_err(write_err)?;
    }
    Ok(previous.map(|d| d.to_value()))
}

/// The object at `parents` below `cur` (created when `create`); `Ok(None)` when absent and not created;
/// `Err((dotted path, compact value))` when one of them holds a non-object.
fn parent_mut<'a>(
    mut cur: &'a mut Object,
    parents: &[&str],
    create: bool,
) -> Result<Option<&'a mut Object>, (String, String)> {
    let mut walked = String::new();
    for part in parents {
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(part);
        if create && cur.get(part).is_none() {
            cur.insert(part, Doc::Object(Object::default()));
        }
        cur = match cur.get_mut(part) {
            Some(Doc::Object(map)) => map,
            Some(other) => return Err((walked, other.to_value().to_string())),
            None => return Ok(None),
        };
    }
    Ok(Some(cur))
}

/// A JSON object that keeps its keys in file order (a later duplicate key replaces the value in place, as
/// Python's `json` does).
#[derive(Debug, Clone, Default, PartialEq)]
struct Object(Vec<(String, Doc)>);

impl Object {
    fn get(&self, k: &str) -> Option<&Doc> {
        self.0.iter().find(|(n, _)| n == k).map(|(_, v)| v)
    }
    fn get_mut(&mut self, k: &str) -> Option<&mut Doc> {
        self.0.iter_mut().find(|(n, _)| n == k).map(|(_, v)| v)
    }
    /// Set `k` (in place when present, else appended); returns the old value.
    fn insert(&mut self, k: &str, v: Doc) -> Option<Doc> {
        match self.get_mut(k) {
            Some(slot) => Some(std::mem::replace(slot, v)),
            None => {
                self.0.push((k.to_owned(), v));
                None
            }
        }
    }
    fn remove(&mut self, k: &str) -> Option<Doc> {
        let i = self.0.iter().position(|(n, _)| n == k)?;
        Some(self.0.remove(i).1)
    }
}

/// A JSON document that round-trips object key order (serde_json's `Value` sorts keys).
#[derive(Debug, Clone, PartialEq)]
enum Doc {
    Null,
    Bool(bool),
    Number(Number),
    String(String),
    Array(Vec<Doc>),
    Object(Object),
}

impl Doc {
    fn from_value(v: &Value) -> Doc {
        match v {
            Value::Null => Doc::Null,
            Value::Bool(b) => Doc::Bool(*b),
            Value::Number(n) => Doc::Number(n.clone()),
            Value::String(s) => Doc::String(s.clone()),
            Value::Array(a) => Doc::Array(a.iter().map(Doc::from_value).collect()),
            Value::Object(m) => Doc::Object(Object(m.iter().map(|(k, v)| (k.clone(), Doc::from_value(v))).collect())),
        }
    }

    fn to_value(&self) -> Value {
        match self {
            Doc::Null => Value::Null,
            Doc::Bool(b) => Value::Bool(*b),
            Doc::Number(n) => Value::Number(n.clone()),
            Doc::String(s) => Value::String(s.clone()),
            Doc::Array(a) => Value::Array(a.iter().map(Doc::to_value).collect()),
            Doc::Object(m) => Value::Object(m.0.iter().map(|(k, v)| (k.clone(), v.to_value())).collect()),
        }
    }
}

impl Serialize for Doc {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Doc::Null => s.serialize_unit(),
            Doc::Bool(b) => s.serialize_bool(*b),
            Doc::Number(n) => n.serialize(s),
            Doc::String(v) => s.serialize_str(v),
            Doc::Array(a) => {
                let mut seq = s.serialize_seq(Some(a.len()))?;
                for v in a {
                    seq.serialize_element(v)?;
                }
                seq.end()
            }
            Doc::Object(m) => {
                let mut map = s.serialize_map(Some(m.0.len()))?;
                for (k, v) in &m.0 {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Doc {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Doc, D::Error> {
        d.deserialize_any(DocVisitor)
    }
}

struct DocVisitor;

impl<'de> Visitor<'de> for DocVisitor {
    type Value = Doc;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_unit<E: de::Error>(self) -> Result<Doc, E> {
        Ok(Doc::Null)
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Doc, E> {
        Ok(Doc::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Doc, E> {
        Ok(Doc::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Doc, E> {
        Ok(Doc::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Doc, E> {
        Number::from_f64(v)
            .map(Doc::Number)
            .ok_or_else(|| E::custom("a number that is not finite"))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Doc, E> {
        Ok(Doc::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Doc, E> {
        Ok(Doc::String(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Doc, A::Error> {
        let mut out = Vec::new();
        while let Some(v) = seq.next_element()? {
            out.push(v);
        }
        Ok(Doc::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Doc, A::Error> {
        let mut out = Object::default();
        while let Some((k, v)) = map.next_entry::<String, Doc>()? {
            out.insert(&k, v);
        }
        Ok(Doc::Object(out))
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "test setup writes fixture files directly")]
mod tests {
    use super::*;
    use serde_json::json;

    fn home() -> (tempfile::TempDir, CaoHome) {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = CaoHome::new(dir.path().join("home"));
        (dir, home)
    }

    fn read(home: &CaoHome) -> String {
        fs::read_to_string(home.settings_path()).expect("settings.json exists")
    }

    #[test]
    fn set_creates_the_file_private_and_nested() {
        let (_d, home) = home();
        let out = set(&home, "memory.lifecycle.enabled", "true").expect("set");
        assert_eq!((out.value, out.previous), (json!(true), None));
        assert_eq!(
            read(&home),
            "{\n  \"memory\": {\n    \"lifecycle\": {\n      \"enabled\": true\n    }\n  }\n}\n"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(home.settings_path()).expect("stat").permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
        }
        let names: Vec<String> = fs::read_dir(home.root())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.ends_with(".tmp")), "{names:?}");
    }

    #[test]
    fn set_keeps_every_other_key_in_order() {
        let (_d, home) = home();
        fs::create_dir_all(home.root()).expect("mkdir");
        let before = "{\"zeta\": [1, 2.5, {\"b\": null, \"a\": \"x\"}], \"memory\": {\"vault\": {\"enabled\": false}, \
                      \"enabled\": true, \"flush_threshold\": 0.85}, \"agent_dirs\": {}}";
        fs::write(home.settings_path(), before).expect("write");
        let out = set(&home, "memory.enabled", "false").expect("set");
        assert_eq!(out.previous, Some(json!(true)));
        set(&home, "memory.project_id", "acme").expect("set");
        let text = read(&home);
        let after: Value = serde_json::from_str(&text).expect("valid json");
        let mut expected: Value = serde_json::from_str(before).expect("valid json");
        expected["memory"]["enabled"] = json!(false);
        expected["memory"]["project_id"] = json!("acme");
        assert_eq!(after, expected);
        let order = [
            "\"zeta\"",
            "\"b\"",
            "\"a\"",
            "\"memory\"",
            "\"vault\"",
            "\"enabled\": false",
            "\"flush_threshold\"",
            "\"project_id\"",
            "\"agent_dirs\"",
        ];
        let pos: Vec<Option<usize>> = order.iter().map(|k| text.find(k)).collect();
        assert!(
            pos.iter().all(Option::is_some) && pos.windows(2).all(|w| w[0] < w[1]),
            "{text}"
        );
    }

    #[test]
    fn refuses_to_overwrite_an_unusable_file() {
        let (_d, home) = home();
        fs::create_dir_all(home.root()).expect("mkdir");
        for bad in [
            "{not json",
            "[1, 2]",
            "{\"memory\": {\"lifecycle\": true}}",
            "{\"memory\": 3}",
        ] {
            fs::write(home.settings_path(), bad).expect("write");
            let err = set(&home, "memory.lifecycle.enabled", "true").expect_err(bad);
            assert!(matches!(err, CoreError::SettingsUnusable { .. }), "{bad}: {err:?}");
            let msg = err.to_string();
            assert!(msg.contains(&home.settings_path().display().to_string()), "{msg}");
            assert!(msg.contains("nothing was written"), "{msg}");
            assert_eq!(read(&home), bad, "untouched");
        }
    }

    #[test]
    fn invalid_input_touches_nothing() {
        let (_d, home) = home();
        assert!(matches!(
            set(&home, "memory.nope", "true"),
            Err(CoreError::UnknownSetting { .. })
        ));
        assert!(matches!(
            set(&home, "memory.enabled", "yes"),
            Err(CoreError::InvalidSettingValue { .. })
        ));
        assert!(matches!(
            set(&home, "memory.project_id", "a/b"),
            Err(CoreError::InvalidSettingValue { .. })
        ));
        assert!(!home.root().exists(), "no directory created");
    }

    #[test]
    fn unset_removes_only_that_key() {
        let (_d, home) = home();
        assert_eq!(unset(&home, "memory.project_id"), Ok(None), "missing home");
        assert!(!home.root().exists());
        set(&home, "memory.project_id", "acme").expect("set");
        set(&home, "memory.enabled", "true").expect("set");
        assert_eq!(unset(&home, "memory.project_id"), Ok(Some(json!("acme"))));
        let v: Value = serde_json::from_str(&read(&home)).expect("json");
        assert_eq!(v, json!({"memory": {"enabled": true}}));
        assert_eq!(unset(&home, "memory.lifecycle.enabled"), Ok(None));
        assert_eq!(
            read(&home),
            "{\n  \"memory\": {\n    \"enabled\": true\n  }\n}\n",
            "absent parents not created"
        );
    }

    #[test]
    fn concurrent_writers_keep_each_others_keys() {
        let (_d, home) = home();
        let handles: Vec<_> = KEYS_FOR_RACE
            .iter()
            .map(|(k, v)| {
                let home = home.clone();
                std::thread::spawn(move || set(&home, k, v).expect("set"))
            })
            .collect();
        for h in handles {
            h.join().expect("thread");
        }
        let v: Value = serde_json::from_str(&read(&home)).expect("json");
        assert_eq!(
            v["memory"],
            json!({"enabled": false, "non_accessing_inspection": true, "explain_enabled": false,
                   "lifecycle": {"enabled": true}, "project_id": "p"})
        );
    }

    const KEYS_FOR_RACE: &[(&str, &str)] = &[
        ("memory.enabled", "false"),
        ("memory.non_accessing_inspection", "true"),
        ("memory.explain_enabled", "false"),
        ("memory.lifecycle.enabled", "true"),
        ("memory.project_id", "p"),
    ];
}
