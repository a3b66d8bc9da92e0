//! Reading a bundle topic file: the frontmatter split and the three fields an import uses (`type`, `tags`,
//! `timestamp`), over untrusted text.
//!
//! # Split ([`split`])
//! As the reference's `python-frontmatter` does it: the text is stripped (Python `strip()`); it has frontmatter
//! only if it *starts* with a boundary line and contains a second one, a boundary being the regex
//! `^-{3,}\s*$` (multiline). The YAML is the text between the two boundaries, the body everything after the
//! second one, stripped. Without frontmatter the import rejects the file (the reference then finds no `type`).
//! `python-frontmatter`'s JSON (`{` ... `}`) and TOML (`+++`) forms are not read (docs/conformance.md).
//!
//! # YAML ([`parse_yaml`])
//! Parsed with `serde-saphyr` (docs/decisions/0005-okf-frontmatter-yaml.md) under tight budgets, because a
//! bundle is untrusted: at most [`MAX_FRONTMATTER_BYTES`] of YAML, nesting depth 16, 10,000 nodes, 1,000 anchors
//! and aliases, 20,000 replayed alias events, one document, and unknown tags refused (like PyYAML's
//! `SafeLoader`). Duplicate keys keep the last value and `<<` merge keys are applied, as PyYAML does. Only
//! `type`, `tags` and `timestamp` are read; every other key is skipped without building its value.
//! - A document that is empty or not a mapping has no fields (so no `type`), as in the reference.
//! - `type`: absent or null is missing; a string is kept; any other value counts as present but unknown.
//! - `tags`: a sequence of scalars, each taken as the text written (PyYAML would first turn `yes` into `True`
//!   and `~` into `None`; docs/conformance.md), or one comma-separated string; anything else means no tags. A
//!   sequence item that is itself a collection makes the frontmatter invalid. The text is capped at
//!   [`MAX_FRONTMATTER_BYTES`] after alias expansion.
//! - `timestamp`: a string, read by [`parse_timestamp`]; anything else means no timestamp.
//!
//! Parse errors are reported by line and column only, never with the offending text (it could be a secret).

use crate::pytext;
use chrono::{DateTime, FixedOffset, NaiveDate, NaiveDateTime, NaiveTime, TimeZone, Utc};
use regex::Regex;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::fmt;
use std::sync::LazyLock;

/// Largest frontmatter (the YAML between the boundaries) that is parsed, in bytes (64 KiB). Our exports write a
/// few hundred bytes; a description is at most 200 characters.
pub const MAX_FRONTMATTER_BYTES: usize = 64 * 1024;

/// The boundary line of `python-frontmatter`'s YAML handler (`^-{3,}\s*$`, multiline), with Python's `\s`.
static BOUNDARY: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| Regex::new(r"(?m)^-{3,}[\s\x1C-\x1F]*$"));

/// A topic file split into its frontmatter and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split<'a> {
    /// The YAML text between the two boundary lines (unparsed).
    pub yaml: &'a str,
    /// The text after the second boundary, stripped (Python `strip()`).
    pub body: &'a str,
}

/// Split a topic file's text into frontmatter and body (rules in the module docs). `None` when the text has no
/// frontmatter: it does not start with a boundary line, or has no second one. The reference reads newlines
/// universally, so callers should pass text whose `\r\n` and `\r` are already `\n` ([`universal_newlines`]).
pub fn split(text: &str) -> Option<Split<'_>> {
    let text = pytext::strip(text);
    let re = BOUNDARY.as_ref().ok()?;
    let mut found = re.find_iter(text);
    let first = found.next().filter(|m| m.start() == 0)?;
    let second = found.next()?;
    Some(Split {
        yaml: &text[first.end()..second.start()],
        body: pytext::strip(&text[second.end()..]),
    })
}

/// Python's universal-newline reading (`Path.read_text`): `\r\n` and lone `\r` become `\n`.
pub fn universal_newlines(text: &str) -> std::borrow::Cow<'_, str> {
    if text.contains('\r') {
        std::borrow::Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        std::borrow::Cow::Borrowed(text)
    }
}

/// The `type` field of a frontmatter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeField {
    /// A string value (known or not).
    Text(String),
    /// A non-null value that is not a string (a number, a boolean, a collection): an unknown type.
    Other,
}

/// The `tags` field of a frontmatter.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TagsField {
    /// Absent, or a value that is neither a sequence nor a string.
    #[default]
    None,
    /// A sequence: the text of each scalar item, in order (empty items included).
    List(Vec<String>),
    /// A string, taken as comma-separated tags.
    Csv(String),
    /// The tags' text exceeded [`MAX_FRONTMATTER_BYTES`] (only possible through aliases).
    TooLarge,
}

/// The fields an import reads from a frontmatter mapping.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Frontmatter {
    /// `type`: `None` when absent, null, or when the document is not a mapping.
    pub memory_type: Option<TypeField>,
    /// `tags`.
    pub tags: TagsField,
    /// `timestamp` when it is a string (unparsed).
    pub timestamp: Option<String>,
}

/// Why a frontmatter could not be read. Displays line and column only.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FrontmatterError {
    /// The YAML is larger than [`MAX_FRONTMATTER_BYTES`].
    #[error("frontmatter is {0} bytes; the maximum is {MAX_FRONTMATTER_BYTES}")]
    TooLarge(usize),
    /// The YAML exceeds a parser budget (aliases, anchors, nesting, node count).
    #[error("frontmatter exceeds the parser's limits on aliases, nesting or size{}", at(*.0))]
    Limits(Option<(u64, u64)>),
    /// The YAML is malformed, uses an unsupported tag, or has a collection where a tag was expected.
    #[error("frontmatter is not valid YAML{}", at(*.0))]
    Invalid(Option<(u64, u64)>),
}

fn at(loc: Option<(u64, u64)>) -> String {
    loc.map(|(l, c)| format!(" (line {l}, column {c})")).unwrap_or_default()
}

fn options() -> serde_saphyr::Options {
    let mut budget = serde_saphyr::Budget::default();
    budget.max_reader_input_bytes = Some(MAX_FRONTMATTER_BYTES);
    budget.flow_nesting_limit = 16;
    budget.max_depth = 16;
    budget.max_events = 50_000;
    budget.max_nodes = 10_000;
    budget.max_aliases = 1_000;
    budget.max_anchors = 1_000;
    budget.max_documents = 1;
    budget.max_merge_keys = 100;
    budget.max_total_scalar_bytes = 4 * MAX_FRONTMATTER_BYTES;
    budget.max_recorded_anchor_events = 20_000;
    budget.max_recorded_anchor_bytes = 4 * MAX_FRONTMATTER_BYTES;
    let mut alias_limits = serde_saphyr::options::AliasLimits::default();
    alias_limits.max_total_replayed_events = 20_000;
    alias_limits.max_replay_stack_depth = 16;
    let mut o = serde_saphyr::Options::default();
    o.budget = Some(budget);
    o.alias_limits = alias_limits;
    o.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::LastWins;
    o.reject_unsupported_tags = true;
    o.strict_booleans = true;
    o.null_as_string = true;
    // A plain scalar such as `1e310` overflows f64: PyYAML reads it as a string (its float pattern needs a
    // dot) and the reference exports keys like it unquoted (`title: 1e310`). Where a value is only classified
    // or skipped, hand the overflow to the visitor instead of failing the whole frontmatter.
    o.non_finite_float_policy = serde_saphyr::options::NonFiniteFloatPolicy::PassThrough;
    o
}

/// Parse frontmatter YAML (rules in the module docs). Never panics.
///
/// Errors: [`FrontmatterError`] (too large, over a budget, or invalid), with a line and column when known.
pub fn parse_yaml(yaml: &str) -> Result<Frontmatter, FrontmatterError> {
    if yaml.len() > MAX_FRONTMATTER_BYTES {
        return Err(FrontmatterError::TooLarge(yaml.len()));
    }
    if pytext::strip(yaml).is_empty() {
        return Ok(Frontmatter::default());
    }
    serde_saphyr::from_str_with_options::<Document>(yaml, options())
        .map(|d| d.0)
        .map_err(|e| {
            let loc = e.location().map(|l| (l.line(), l.column()));
            let mut inner = &e;
            while let serde_saphyr::Error::AliasError { error, .. } | serde_saphyr::Error::WithSnippet { error, .. } =
                inner
            {
                inner = error;
            }
            if matches!(
                inner,
                serde_saphyr::Error::Budget { .. }
                    | serde_saphyr::Error::AliasReplayCounterOverflow { .. }
                    | serde_saphyr::Error::AliasReplayLimitExceeded { .. }
                    | serde_saphyr::Error::AliasExpansionLimitExceeded { .. }
                    | serde_saphyr::Error::AliasReplayStackDepthExceeded { .. }
            ) || inner.to_string().contains("recursion limit")
            {
                FrontmatterError::Limits(loc)
            } else {
                FrontmatterError::Invalid(loc)
            }
        })
}

/// The whole YAML document: a mapping yields its fields, anything else none.
struct Document(Frontmatter);

impl<'de> Deserialize<'de> for Document {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(DocumentVisitor).map(Document)
    }
}

struct DocumentVisitor;

impl<'de> Visitor<'de> for DocumentVisitor {
    type Value = Frontmatter;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML document")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Frontmatter, A::Error> {
        let mut fm = Frontmatter::default();
        while let Some(name) = map.next_key::<FieldName>()? {
            match name {
                FieldName::Type => fm.memory_type = map.next_value::<TypeValue>()?.0,
                FieldName::Tags => fm.tags = map.next_value::<TagsValue>()?.0,
                FieldName::Timestamp => fm.timestamp = map.next_value::<TimestampValue>()?.0,
                FieldName::Other => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(fm)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Frontmatter, A::Error> {
        IgnoredAny.visit_seq(seq).map(|_| Frontmatter::default())
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Frontmatter, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<Frontmatter, A::Error> {
        IgnoredAny.visit_enum(data).map(|_| Frontmatter::default())
    }
    fn visit_unit<E>(self) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_none<E>(self) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_bool<E>(self, _: bool) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_i64<E>(self, _: i64) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_u64<E>(self, _: u64) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_i128<E>(self, _: i128) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_u128<E>(self, _: u128) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_f64<E>(self, _: f64) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
    fn visit_str<E>(self, _: &str) -> Result<Frontmatter, E> {
        Ok(Frontmatter::default())
    }
}

/// A mapping key: one of the three read fields, or anything else.
enum FieldName {
    Type,
    Tags,
    Timestamp,
    Other,
}

impl<'de> Deserialize<'de> for FieldName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(Classify(|s: Option<&str>| match s {
            Some("type") => FieldName::Type,
            Some("tags") => FieldName::Tags,
            Some("timestamp") => FieldName::Timestamp,
            _ => FieldName::Other,
        }))
    }
}

/// What a value is, at the level the fields need.
enum Shape<'a> {
    Null,
    Str(&'a str),
    Other,
}

/// A visitor that accepts any value, drains collections without building them, and maps its [`Shape`].
struct ShapeVisitor<F>(F);

macro_rules! other_scalars {
    ($($name:ident: $ty:ty),*) => {
        $(fn $name<E>(self, _: $ty) -> Result<T, E> { Ok((self.0)(Shape::Other)) })*
    };
}

impl<'de, T, F: FnOnce(Shape<'_>) -> T> Visitor<'de> for ShapeVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok((self.0)(Shape::Null))
    }
    fn visit_none<E>(self) -> Result<T, E> {
        Ok((self.0)(Shape::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(Shape::Str(v)))
    }
    other_scalars!(visit_bool: bool, visit_i64: i64, visit_u64: u64, visit_i128: i128, visit_u128: u128, visit_f64: f64);
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        IgnoredAny.visit_seq(seq)?;
        Ok((self.0)(Shape::Other))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        IgnoredAny.visit_map(map)?;
        Ok((self.0)(Shape::Other))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<T, A::Error> {
        IgnoredAny.visit_enum(data)?;
        Ok((self.0)(Shape::Other))
    }
}

/// A key classifier: strings by their text, anything else as `None`.
struct Classify<F>(F);

impl<'de, T, F: FnOnce(Option<&str>) -> T> Visitor<'de> for Classify<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a mapping key")
    }
    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok((self.0)(Some(v)))
    }
    fn visit_unit<E>(self) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_none<E>(self) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        d.deserialize_any(ShapeVisitor(|s: Shape<'_>| match s {
            Shape::Str(v) => (self.0)(Some(v)),
            _ => (self.0)(None),
        }))
    }
    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_i64<E>(self, _: i64) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_u64<E>(self, _: u64) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_i128<E>(self, _: i128) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_u128<E>(self, _: u128) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok((self.0)(None))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        IgnoredAny.visit_seq(seq)?;
        Ok((self.0)(None))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        IgnoredAny.visit_map(map)?;
        Ok((self.0)(None))
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<T, A::Error> {
        IgnoredAny.visit_enum(data)?;
        Ok((self.0)(None))
    }
}

struct TypeValue(Option<TypeField>);

impl<'de> Deserialize<'de> for TypeValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor(|s: Shape<'_>| {
            TypeValue(match s {
                Shape::Null => None,
                Shape::Str(v) => Some(TypeField::Text(v.to_owned())),
                Shape::Other => Some(TypeField::Other),
            })
        }))
    }
}

struct TimestampValue(Option<String>);

impl<'de> Deserialize<'de> for TimestampValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ShapeVisitor(|s: Shape<'_>| {
            TimestampValue(match s {
                Shape::Str(v) => Some(v.to_owned()),
                _ => None,
            })
        }))
    }
}

struct TagsValue(TagsField);

impl<'de> Deserialize<'de> for TagsValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(TagsVisitor).map(TagsValue)
    }
}

struct TagsVisitor;

impl<'de> Visitor<'de> for TagsVisitor {
    type Value = TagsField;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of tags or a comma-separated string")
    }
    fn visit_str<E>(self, v: &str) -> Result<TagsField, E> {
        Ok(TagsField::Csv(v.to_owned()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<TagsField, A::Error> {
        let mut items = Vec::new();
        let mut total = 0usize;
        while let Some(TagItem(item)) = seq.next_element::<TagItem>()? {
            total = total.saturating_add(item.len() + 1);
            if total > MAX_FRONTMATTER_BYTES {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(TagsField::TooLarge);
            }
            items.push(item);
        }
        Ok(TagsField::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<TagsField, A::Error> {
        IgnoredAny.visit_map(map).map(|_| TagsField::None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<TagsField, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_enum<A: de::EnumAccess<'de>>(self, data: A) -> Result<TagsField, A::Error> {
        IgnoredAny.visit_enum(data).map(|_| TagsField::None)
    }
    fn visit_unit<E>(self) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_none<E>(self) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_bool<E>(self, _: bool) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_i128<E>(self, _: i128) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_u128<E>(self, _: u128) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<TagsField, E> {
        Ok(TagsField::None)
    }
}

/// One item of a tag sequence: the text of a scalar as written (a collection is a type error).
struct TagItem(String);

impl<'de> Deserialize<'de> for TagItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(TagItem)
    }
}

/// The YAML 1.1 timestamp shape with a time part (what PyYAML turns into a `datetime`): date, `T`/`t` or spaces,
/// time, optional fraction, optional `Z` or offset. A date alone is a `date` in PyYAML and gives no timestamp.
static TIMESTAMP: LazyLock<Result<Regex, regex::Error>> = LazyLock::new(|| {
    Regex::new(
        r"^([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})(?:[Tt]|[ \t]+)([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9]{1,2})(?::([0-9]{2}))?))?$",
    )
});

/// What a frontmatter `timestamp` string means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timestamp {
    /// A date and time, converted to UTC (no offset means UTC).
    At(DateTime<Utc>),
    /// Not a timestamp (the entry is recorded at import time).
    Absent,
    /// Timestamp-shaped but impossible (month 13, hour 25, year 0): PyYAML refuses the whole file.
    Invalid,
}

/// Read a frontmatter `timestamp` value: the YAML 1.1 timestamp forms that carry a time (date, `T`/`t` or
/// spaces, time, optional fraction, optional `Z` or `+hh[:mm]` offset: `2025-01-02T03:04:05Z`,
/// `2025-01-02 03:04:05.5 +02:00`, ...), converted to UTC, fractions kept to the nanosecond. A date alone is
/// [`Timestamp::Absent`] (PyYAML makes it a `date`, which the reference ignores).
pub fn parse_timestamp(text: &str) -> Timestamp {
    let Some(re) = TIMESTAMP.as_ref().ok() else {
        return Timestamp::Absent;
    };
    let Some(c) = re.captures(text) else {
        return Timestamp::Absent;
    };
    let num = |i: usize| c.get(i).and_then(|m| m.as_str().parse::<u32>().ok());
    let build = || -> Option<DateTime<Utc>> {
        let year = i32::try_from(num(1)?).ok().filter(|y| *y >= 1)?;
        let date = NaiveDate::from_ymd_opt(year, num(2)?, num(3)?)?;
        let nanos = match c.get(7).map(|m| m.as_str()) {
            None | Some("") => 0,
            Some(f) => {
                let digits: String = f.chars().chain(std::iter::repeat('0')).take(9).collect();
                digits.parse::<u32>().ok()?
            }
        };
        let time = NaiveTime::from_hms_nano_opt(num(4)?, num(5)?, num(6)?, nanos)?;
        let naive = NaiveDateTime::new(date, time);
        match c.get(9).map(|m| m.as_str()) {
            None => Some(Utc.from_utc_datetime(&naive)),
            Some(sign) => {
                let hours = num(10)?;
                let minutes = c.get(11).map_or(Some(0), |m| m.as_str().parse::<u32>().ok())?;
                let secs = i32::try_from(hours * 3600 + minutes * 60).ok()?;
                let offset = FixedOffset::east_opt(if sign == "-" { -secs } else { secs })?;
                offset
                    .from_local_datetime(&naive)
                    .single()
                    .map(|t| t.with_timezone(&Utc))
            }
        }
    };
    match build() {
        Some(t) => Timestamp::At(t),
        None => Timestamp::Invalid,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cao_core::time::parse_ts;

    #[test]
    fn split_follows_python_frontmatter() {
        let s = split("---\ntype: project\n---\n\n# alpha\n\nAlpha body.\n").expect("has frontmatter");
        assert_eq!(s.yaml, "\ntype: project\n");
        assert_eq!(s.body, "# alpha\n\nAlpha body.");
        // Leading whitespace is stripped first; longer dash lines and trailing spaces are boundaries.
        let s = split("\n  \n----  \ntype: x\n-----\t\nbody").expect("has frontmatter");
        assert_eq!(s.yaml, "\ntype: x\n");
        assert_eq!(s.body, "body");
        // The second boundary may be the last line.
        assert_eq!(split("---\ntype: x\n---").map(|s| s.body), Some(""));
        for none in [
            "# bare\n\nJust markdown.\n",
            "---\ntype: x\n",
            "--\ntype: x\n---\n",
            "---x\ntype: y\n---\n",
            "x\n---\ntype: y\n---\n",
        ] {
            assert_eq!(split(none), None, "{none:?}");
        }
    }

    #[test]
    fn fields_are_read_like_pyyaml() {
        let fm =
            parse_yaml("type: project\ntitle: alpha\ntags: [x, y]\ntimestamp: 2025-01-02T03:04:05Z\n").expect("parses");
        assert_eq!(fm.memory_type, Some(TypeField::Text("project".into())));
        assert_eq!(fm.tags, TagsField::List(vec!["x".into(), "y".into()]));
        assert_eq!(fm.timestamp.as_deref(), Some("2025-01-02T03:04:05Z"));

        for (yaml, want) in [
            ("type:\n", None),
            ("type: ~\n", None),
            ("type: null\n", None),
            ("type: 'null'\n", Some(TypeField::Text("null".into()))),
            ("type: \"\"\n", Some(TypeField::Text(String::new()))),
            ("type: 3\n", Some(TypeField::Other)),
            ("type: [a]\n", Some(TypeField::Other)),
            ("title: x\n", None),
            ("- type\n", None),
            ("just text\n", None),
            ("# only a comment\n", None),
            ("type: user\ntype: feedback\n", Some(TypeField::Text("feedback".into()))),
            ("base: &b {type: user}\n<<: *b\n", Some(TypeField::Text("user".into()))),
        ] {
            assert_eq!(parse_yaml(yaml).expect("parses").memory_type, want, "{yaml:?}");
        }
    }

    #[test]
    fn tags_take_the_written_text() {
        let fm = parse_yaml("tags: [x, y, yes, ~, 0x10, 1.0, '', \"\\ud83d\\ude00\"]\n").expect("parses");
        assert_eq!(
            fm.tags,
            TagsField::List(
                ["x", "y", "yes", "~", "0x10", "1.0", "", "\u{1F600}"]
                    .map(String::from)
                    .to_vec()
            )
        );
        assert_eq!(
            parse_yaml("tags: a, b\n").expect("parses").tags,
            TagsField::Csv("a, b".into())
        );
        assert_eq!(parse_yaml("tags: 5\n").expect("parses").tags, TagsField::None);
        assert_eq!(parse_yaml("tags: {a: 1}\n").expect("parses").tags, TagsField::None);
        assert!(matches!(
            parse_yaml("tags: [a, [b]]\n"),
            Err(FrontmatterError::Invalid(Some((1, _))))
        ));
        // Our exporter's escaped tags read back exactly.
        let fm = parse_yaml("tags: [\"a:b\", \"c\\\"d\", \"#e\"]\n").expect("parses");
        assert_eq!(
            fm.tags,
            TagsField::List(["a:b", "c\"d", "#e"].map(String::from).to_vec())
        );
    }

    #[test]
    fn overflowing_numbers_are_values_not_errors() {
        // PyYAML reads `1e310` as a string (its float pattern needs a dot), and the reference exports such a key
        // unquoted: the frontmatter must still read, whichever field holds it.
        let fm = parse_yaml("title: 1e310\ntype: note\ndescription: -9e999\ntags: [1e310, x]\n").expect("parses");
        assert_eq!(fm.memory_type, Some(TypeField::Text("note".into())));
        assert_eq!(fm.tags, TagsField::List(["1e310", "x"].map(String::from).to_vec()));
        assert_eq!(
            parse_yaml("type: 1e310\n").expect("parses").memory_type,
            Some(TypeField::Other)
        );
        assert_eq!(parse_yaml("tags: 1e310\n").expect("parses").tags, TagsField::None);
    }

    #[test]
    fn hostile_yaml_is_refused_quickly() {
        let mut bomb = String::from("a: &a [x,x,x,x,x,x,x,x,x,x]\n");
        for (name, prev) in ["b", "c", "d", "e", "f", "g", "h", "i"]
            .iter()
            .zip(["a", "b", "c", "d", "e", "f", "g", "h"])
        {
            bomb.push_str(&format!(
                "{name}: &{name} [{}]\n",
                vec![format!("*{prev}"); 10].join(",")
            ));
        }
        bomb.push_str("type: project\n");
        assert!(
            matches!(parse_yaml(&bomb), Err(FrontmatterError::Limits(_))),
            "{:?}",
            parse_yaml(&bomb)
        );
        let tags_bomb = format!("s: &s {}\ntags: [{}]\n", "x".repeat(30_000), vec!["*s"; 1000].join(","));
        assert!(matches!(
            parse_yaml(&tags_bomb),
            Ok(Frontmatter {
                tags: TagsField::TooLarge,
                ..
            }) | Err(FrontmatterError::Limits(_))
        ));
        let deep = format!("type: {}{}\n", "[".repeat(20_000), "]".repeat(20_000));
        assert!(matches!(
            parse_yaml(&deep),
            Err(FrontmatterError::Limits(_) | FrontmatterError::TooLarge(_))
        ));
        let deep = format!("type: {}{}\n", "[".repeat(1_000), "]".repeat(1_000));
        assert!(matches!(
            parse_yaml(&deep),
            Err(FrontmatterError::Limits(_) | FrontmatterError::Invalid(_))
        ));
        assert_eq!(
            parse_yaml(&"#".repeat(MAX_FRONTMATTER_BYTES + 1)),
            Err(FrontmatterError::TooLarge(MAX_FRONTMATTER_BYTES + 1))
        );
        assert!(matches!(
            parse_yaml("type: !!python/object:os.system x\n"),
            Err(FrontmatterError::Invalid(_))
        ));
        assert!(matches!(
            parse_yaml("type: [unclosed\n"),
            Err(FrontmatterError::Invalid(_))
        ));
        assert!(parse_yaml("a: *nowhere\n").is_err());
        // The message never quotes the input.
        let e = parse_yaml("type: \"ghp_secretsecret\n").expect_err("unterminated");
        assert!(!e.to_string().contains("ghp_"), "{e}");
    }

    #[test]
    fn timestamps_follow_yaml_1_1() {
        let t = |s: &str| parse_ts(s).expect("valid");
        assert_eq!(
            parse_timestamp("2025-01-02T03:04:05Z"),
            Timestamp::At(t("2025-01-02T03:04:05Z"))
        );
        assert_eq!(
            parse_timestamp("2025-01-02 03:04:05"),
            Timestamp::At(t("2025-01-02T03:04:05Z"))
        );
        assert_eq!(
            parse_timestamp("2025-1-2t3:04:05+02:00"),
            Timestamp::At(t("2025-01-02T01:04:05Z"))
        );
        assert_eq!(
            parse_timestamp("2025-01-02T03:04:05 -1"),
            Timestamp::At(t("2025-01-02T04:04:05Z"))
        );
        match parse_timestamp("2025-01-02T03:04:05.5Z") {
            Timestamp::At(x) => assert_eq!(x.timestamp_subsec_millis(), 500),
            other => panic!("{other:?}"),
        }
        for absent in [
            "2025-01-02",
            "yesterday",
            "",
            "2025-01-02T03:04Z",
            "12025-01-02T03:04:05Z",
        ] {
            assert_eq!(parse_timestamp(absent), Timestamp::Absent, "{absent:?}");
        }
        for invalid in [
            "2025-13-02T03:04:05Z",
            "0000-01-01T00:00:00Z",
            "2025-02-30T00:00:00Z",
            "2025-01-01T25:00:00Z",
        ] {
            assert_eq!(parse_timestamp(invalid), Timestamp::Invalid, "{invalid:?}");
        }
    }
}
