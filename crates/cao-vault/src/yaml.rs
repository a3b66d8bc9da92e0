//! A bounded YAML 1.1 loader with PyYAML `safe_load` semantics, for the frontmatter of vault notes
//! (spec/vault-facts.md section 2 "Frontmatter"; docs/decisions/0013-vault-frontmatter-yaml.md).
//!
//! The reference loads frontmatter with PyYAML's `SafeLoader` (YAML 1.1): `on`/`off`/`yes`/`no` are booleans,
//! `010` is 8, `1_000` is 1000, `1:30` is 90, dates and timestamps are values, `!!binary`, `!!set`, `!!omap` and
//! `!!pairs` load, duplicate keys keep the last value (at the first key's position), keys may be any hashable
//! value, `<<` merges mappings. This module reproduces that on the event stream of `granit-parser` (the YAML parser
//! under `serde-saphyr`): the events are composed into nodes, and the nodes are resolved and constructed by
//! PyYAML's rules (implicit resolvers for plain scalars, constructors per tag).
//!
//! Refusals, in the reference's order:
//! 1. Any anchor (`&a`) or alias (`*a`) token anywhere is [`YamlError::Unsafe`], before anything is parsed (so a
//!    billion-laughs document costs one token scan).
//! 2. [`YamlError::Malformed`]: a syntax error, a tab outside quoted or block scalars and comments (PyYAML never
//!    skips a tab as separation), more than one document, nesting deeper than [`MAX_NESTING`] flow or block
//!    levels, an unknown or misapplied tag, an unhashable key (a sequence, mapping or set), an impossible date, or a
//!    value a constructor cannot read (`!!int abc`, a plain `=`).
//!
//! Budgets: the input is at most the vault's `max_frontmatter_bytes` (64 KiB at most, checked by the caller), no
//! alias can expand it, nesting is bounded, so the node tree is linear in the input. Errors never carry input
//! text.

use base64::Engine as _;
use chrono::{NaiveDate, NaiveDateTime, NaiveTime};
use granit_parser::{Event, Parser, ScalarStyle, Scanner, StrInput, TokenType};
use regex::Regex;
use std::sync::LazyLock;

/// Deepest flow or block nesting read (granit-parser's limit). PyYAML's own limit is the Python recursion limit
/// (about 490 levels); deeper frontmatter is refused here (docs/conformance.md).
pub const MAX_NESTING: usize = 255;

/// A loaded YAML value, with PyYAML's types.
#[derive(Debug, Clone, PartialEq)]
pub enum Yaml {
    /// `null`, `~`, an empty plain scalar.
    Null,
    /// A YAML 1.1 boolean (`true`, `yes`, `on`, ... in three casings).
    Bool(bool),
    /// An integer that fits `i128`.
    Int(i128),
    /// An integer beyond `i128` (Python ints are unbounded), as the digits written (underscores removed).
    BigInt(String),
    /// A float (`.inf`, `.nan` included).
    Float(f64),
    /// A string.
    Str(String),
    /// `!!binary`.
    Bytes(Vec<u8>),
    /// A date without a time (`2020-02-02`).
    Date(NaiveDate),
    /// A timestamp: the wall-clock time as written and the UTC offset in seconds when one was given (`Z` is 0).
    DateTime {
        /// Date and time as written (fraction truncated to microseconds).
        naive: NaiveDateTime,
        /// Offset east of UTC in seconds, `None` for a naive timestamp.
        offset_secs: Option<i32>,
    },
    /// A sequence.
    Seq(Vec<Yaml>),
    /// A mapping, in insertion order (a duplicate key keeps its first position and its last value).
    Map(Vec<(Yaml, Yaml)>),
    /// `!!set`: the keys of a mapping.
    Set(Vec<Yaml>),
    /// `!!omap` / `!!pairs`: a list of key-value pairs.
    Pairs(Vec<(Yaml, Yaml)>),
}

impl Yaml {
    /// The value of the string key `key` when `self` is a mapping.
    pub fn get(&self, key: &str) -> Option<&Yaml> {
        match self {
            Yaml::Map(pairs) => pairs
                .iter()
                .find(|(k, _)| matches!(k, Yaml::Str(s) if s == key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The string, when `self` is one.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Yaml::Str(s) => Some(s),
            _ => None,
        }
    }

    /// Whether Python could use this value as a dict key (sequences, mappings, sets and pair lists cannot).
    fn hashable(&self) -> bool {
        !matches!(self, Yaml::Seq(_) | Yaml::Map(_) | Yaml::Set(_) | Yaml::Pairs(_))
    }

    /// Python `==` between two hashable keys: `True == 1 == 1.0`, aware timestamps compare as instants.
    fn key_eq(&self, other: &Yaml) -> bool {
        fn num(v: &Yaml) -> Option<f64> {
            match v {
                Yaml::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
                #[allow(clippy::cast_precision_loss, reason = "Python compares int and float numerically")]
                Yaml::Int(i) => Some(*i as f64),
                Yaml::Float(f) => Some(*f),
                _ => None,
            }
        }
        match (self, other) {
            (Yaml::Int(a), Yaml::Int(b)) => a == b,
            (
                Yaml::DateTime {
                    naive: a,
                    offset_secs: Some(x),
                },
                Yaml::DateTime {
                    naive: b,
                    offset_secs: Some(y),
                },
            ) => *a - chrono::Duration::seconds(i64::from(*x)) == *b - chrono::Duration::seconds(i64::from(*y)),
            (
                Yaml::DateTime {
                    naive: a,
                    offset_secs: None,
                },
                Yaml::DateTime {
                    naive: b,
                    offset_secs: None,
                },
            ) => a == b,
            (Yaml::DateTime { .. }, Yaml::DateTime { .. }) => false,
            _ => match (num(self), num(other)) {
                (Some(a), Some(b)) => a == b,
                (None, None) => self == other,
                _ => false,
            },
        }
    }
}

/// Why frontmatter YAML was refused. Carries no input text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum YamlError {
    /// An anchor or alias token: `frontmatter_unsafe` "YAML anchor or alias".
    #[error("YAML anchor or alias")]
    Unsafe,
    /// Anything else PyYAML's safe loader refuses: `frontmatter_malformed` "invalid YAML".
    #[error("invalid YAML")]
    Malformed,
}

/// Load one YAML document the way PyYAML's `safe_load` does (module docs). `Ok(None)` for an empty or
/// comment-only document.
///
/// Errors: [`YamlError`].
pub fn load(text: &str) -> Result<Option<Yaml>, YamlError> {
    precheck(text)?;
    let Some(node) = compose(text)? else {
        return Ok(None);
    };
    construct(node, 0).map(Some)
}

/// Step 1 of [`load`]: anchors and aliases (unsafe), then tabs outside quoted and block scalars and comments
/// (malformed). A scanner error before an anchor is left to the parser to report (malformed).
fn precheck(text: &str) -> Result<(), YamlError> {
    let mut allowed: Vec<(usize, usize)> = Vec::new();
    let mut scan_failed = false;
    for token in Scanner::new(StrInput::new(text)) {
        let Ok(token) = token else {
            scan_failed = true;
            break;
        };
        let span = token.span();
        match token.token_type() {
            TokenType::Anchor(_) | TokenType::Alias(_) => return Err(YamlError::Unsafe),
            TokenType::Scalar(style, _) if *style != ScalarStyle::Plain => {
                allowed.push((span.start.index(), span.end.index()));
            }
            TokenType::Comment(..) => allowed.push((span.start.index(), span.end.index())),
            _ => {}
        }
    }
    if scan_failed {
        return Err(YamlError::Malformed);
    }
    if text.contains('\t') {
        for (i, c) in text.chars().enumerate() {
            if c == '\t' && !allowed.iter().any(|(s, e)| (*s..*e).contains(&i)) {
                return Err(YamlError::Malformed);
            }
        }
    }
    Ok(())
}

/// A tag as written after resolution: the full URI (`tag:yaml.org,2002:int`, `!foo`, `!` for the non-specific tag).
type TagName = Option<String>;

/// A composed node (PyYAML's `Node`), before construction.
#[derive(Debug)]
enum Node {
    Scalar { value: String, plain: bool, tag: TagName },
    Seq { tag: TagName, items: Vec<Node> },
    Map { tag: TagName, pairs: Vec<(Node, Node)> },
}

/// Compose the single document of `text` into a node tree; `None` when the stream has no document.
fn compose(text: &str) -> Result<Option<Node>, YamlError> {
    let options = granit_parser::options! {
        flow_nesting_limit: MAX_NESTING,
        block_nesting_limit: MAX_NESTING,
        emit_comments: false,
    };
    let mut stack: Vec<Node> = Vec::new();
    let mut pending_key: Vec<Option<Node>> = Vec::new();
    let mut root: Option<Node> = None;
    let mut documents = 0usize;
    for item in Parser::new_from_str_with_options(text, options) {
        let (event, _span) = item.map_err(|_| YamlError::Malformed)?;
        let node = match event {
            Event::StreamStart | Event::StreamEnd | Event::DocumentEnd => continue,
            Event::DocumentStart(..) => {
                documents += 1;
                if documents > 1 {
                    return Err(YamlError::Malformed);
                }
                continue;
            }
            Event::Alias(_) | Event::UnresolvedAlias(_) | Event::Anchor(..) => return Err(YamlError::Unsafe),
            Event::Comment(..) => continue,
            Event::Scalar(value, style, _, tag) => Node::Scalar {
                value: value.into_owned(),
                plain: style == ScalarStyle::Plain,
                tag: tag.map(|t| format!("{}{}", t.handle(), t.suffix())),
            },
            Event::SequenceStart(_, _, tag) => {
                stack.push(Node::Seq {
                    tag: tag.map(|t| format!("{}{}", t.handle(), t.suffix())),
                    items: Vec::new(),
                });
                pending_key.push(None);
                continue;
            }
            Event::MappingStart(_, _, tag) => {
                stack.push(Node::Map {
                    tag: tag.map(|t| format!("{}{}", t.handle(), t.suffix())),
                    pairs: Vec::new(),
                });
                pending_key.push(None);
                continue;
            }
            Event::SequenceEnd | Event::MappingEnd => {
                pending_key.pop();
                match stack.pop() {
                    Some(n) => n,
                    None => return Err(YamlError::Malformed),
                }
            }
            _ => return Err(YamlError::Malformed),
        };
        // Attach the finished node to its parent (or make it the document's root).
        match stack.last_mut() {
            None => {
                if root.is_some() {
                    return Err(YamlError::Malformed);
                }
                root = Some(node);
            }
            Some(Node::Seq { items, .. }) => items.push(node),
            Some(Node::Map { pairs, .. }) => {
                let slot = pending_key.last_mut().ok_or(YamlError::Malformed)?;
                match slot.take() {
                    None => *slot = Some(node),
                    Some(key) => pairs.push((key, node)),
                }
            }
            Some(Node::Scalar { .. }) => return Err(YamlError::Malformed),
        }
    }
    if !stack.is_empty() {
        return Err(YamlError::Malformed);
    }
    Ok(root)
}

const CORE: &str = "tag:yaml.org,2002:";

/// The tag PyYAML's resolver gives a node (explicit tags win; `!` and untagged non-plain scalars are defaults).
fn resolved_tag(node: &Node) -> String {
    match node {
        Node::Scalar { value, plain, tag } => match tag.as_deref() {
            Some(t) if t != "!" => t.to_owned(),
            Some(_) => format!("{CORE}str"),
            None if *plain => format!("{CORE}{}", implicit_scalar_tag(value)),
            None => format!("{CORE}str"),
        },
        Node::Seq { tag, .. } => match tag.as_deref() {
            Some(t) if t != "!" => t.to_owned(),
            _ => format!("{CORE}seq"),
        },
        Node::Map { tag, .. } => match tag.as_deref() {
            Some(t) if t != "!" => t.to_owned(),
            _ => format!("{CORE}map"),
        },
    }
}

macro_rules! lazy_regex {
    ($name:ident, $re:expr) => {
        static $name: LazyLock<Option<Regex>> = LazyLock::new(|| Regex::new($re).ok());
    };
}

lazy_regex!(
    BOOL_RE,
    r"^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF)$"
);
lazy_regex!(
    FLOAT_RE,
    r"^(?:[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?|\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
);
lazy_regex!(
    INT_RE,
    r"^(?:[-+]?0b[0-1_]+|[-+]?0[0-7_]+|[-+]?(?:0|[1-9][0-9_]*)|[-+]?0x[0-9a-fA-F_]+|[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+)$"
);
lazy_regex!(NULL_RE, r"^(?:~|null|Null|NULL|)$");
lazy_regex!(
    TIMESTAMP_RE,
    r"^(?:[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]|[0-9][0-9][0-9][0-9]-[0-9][0-9]?-[0-9][0-9]?(?:[Tt]|[ \t]+)[0-9][0-9]?:[0-9][0-9]:[0-9][0-9](?:\.[0-9]*)?(?:[ \t]*(?:Z|[-+][0-9][0-9]?(?::[0-9][0-9])?))?)$"
);
lazy_regex!(
    TIMESTAMP_PARTS_RE,
    r"^([0-9][0-9][0-9][0-9])-([0-9][0-9]?)-([0-9][0-9]?)(?:(?:[Tt]|[ \t]+)([0-9][0-9]?):([0-9][0-9]):([0-9][0-9])(?:\.([0-9]*))?(?:[ \t]*(Z|([-+])([0-9][0-9]?)(?::([0-9][0-9]))?))?)?$"
);

fn is(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

/// PyYAML's implicit resolvers for a plain scalar, in their order (bool, float, int, merge, null, timestamp,
/// value), each tried only when the first character is one it lists; otherwise `str`.
pub(crate) fn implicit_scalar_tag(v: &str) -> &'static str {
    let first = v.chars().next();
    let starts = |set: &str| first.is_some_and(|c| set.contains(c));
    if starts("yYnNtTfFoO") && is(&BOOL_RE, v) {
        "bool"
    } else if starts("-+0123456789.") && is(&FLOAT_RE, v) {
        "float"
    } else if starts("-+0123456789") && is(&INT_RE, v) {
        "int"
    } else if v == "<<" {
        "merge"
    } else if (first.is_none() || starts("~nN")) && is(&NULL_RE, v) {
        "null"
    } else if starts("0123456789") && is(&TIMESTAMP_RE, v) {
        "timestamp"
    } else if v == "=" {
        "value"
    } else {
        "str"
    }
}

/// Construct a value from a node with PyYAML's `SafeConstructor`.
fn construct(node: Node, depth: usize) -> Result<Yaml, YamlError> {
    if depth > 2 * MAX_NESTING + 2 {
        return Err(YamlError::Malformed);
    }
    let tag = resolved_tag(&node);
    let short = tag.strip_prefix(CORE).ok_or(YamlError::Malformed)?;
    match node {
        Node::Scalar { value, .. } => construct_scalar(short, &value),
        Node::Seq { items, .. } => match short {
            "seq" => items
                .into_iter()
                .map(|n| construct(n, depth + 1))
                .collect::<Result<Vec<_>, _>>()
                .map(Yaml::Seq),
            "omap" | "pairs" => {
                let mut pairs = Vec::with_capacity(items.len());
                for item in items {
                    let Node::Map { pairs: mut inner, .. } = item else {
                        return Err(YamlError::Malformed);
                    };
                    if inner.len() != 1 {
                        return Err(YamlError::Malformed);
                    }
                    let (k, v) = inner.pop().ok_or(YamlError::Malformed)?;
                    pairs.push((construct(k, depth + 1)?, construct(v, depth + 1)?));
                }
                Ok(Yaml::Pairs(pairs))
            }
            _ => Err(YamlError::Malformed),
        },
        Node::Map { pairs, .. } => match short {
            "map" => construct_mapping(pairs, depth).map(Yaml::Map),
            "set" => construct_mapping(pairs, depth).map(|m| Yaml::Set(m.into_iter().map(|(k, _)| k).collect())),
            _ => Err(YamlError::Malformed),
        },
    }
}

/// Flatten `<<` merge keys (PyYAML `flatten_mapping`): merged pairs come first, so explicit keys win; a `=` key
/// becomes a string.
fn flatten(pairs: Vec<(Node, Node)>) -> Result<Vec<(Node, Node)>, YamlError> {
    let mut merged: Vec<(Node, Node)> = Vec::new();
    let mut own: Vec<(Node, Node)> = Vec::with_capacity(pairs.len());
    for (key, value) in pairs {
        let tag = resolved_tag(&key);
        if tag == format!("{CORE}merge") {
            match value {
                Node::Map { pairs, .. } => merged.extend(flatten(pairs)?),
                Node::Seq { items, .. } => {
                    let mut sub: Vec<Vec<(Node, Node)>> = Vec::new();
                    for item in items {
                        let Node::Map { pairs, .. } = item else {
                            return Err(YamlError::Malformed);
                        };
                        sub.push(flatten(pairs)?);
                    }
                    for group in sub.into_iter().rev() {
                        merged.extend(group);
                    }
                }
                Node::Scalar { .. } => return Err(YamlError::Malformed),
            }
        } else if tag == format!("{CORE}value") {
            let Node::Scalar { value: v, plain, .. } = key else {
                return Err(YamlError::Malformed);
            };
            own.push((
                Node::Scalar {
                    value: v,
                    plain,
                    tag: Some(format!("{CORE}str")),
                },
                value,
            ));
        } else {
            own.push((key, value));
        }
    }
    merged.extend(own);
    Ok(merged)
}

fn construct_mapping(pairs: Vec<(Node, Node)>, depth: usize) -> Result<Vec<(Yaml, Yaml)>, YamlError> {
    let pairs = flatten(pairs)?;
    let mut out: Vec<(Yaml, Yaml)> = Vec::with_capacity(pairs.len());
    for (k, v) in pairs {
        let key = construct(k, depth + 1)?;
        if !key.hashable() {
            return Err(YamlError::Malformed);
        }
        let value = construct(v, depth + 1)?;
        match out.iter_mut().find(|(existing, _)| existing.key_eq(&key)) {
            Some(slot) => slot.1 = value,
            None => out.push((key, value)),
        }
    }
    Ok(out)
}

fn construct_scalar(tag: &str, value: &str) -> Result<Yaml, YamlError> {
    match tag {
        "str" => Ok(Yaml::Str(value.to_owned())),
        "null" => Ok(Yaml::Null),
        "bool" => match value.to_lowercase().as_str() {
            "yes" | "true" | "on" => Ok(Yaml::Bool(true)),
            "no" | "false" | "off" => Ok(Yaml::Bool(false)),
            _ => Err(YamlError::Malformed),
        },
        "int" => construct_int(value),
        "float" => construct_float(value),
        "timestamp" => construct_timestamp(value),
        "binary" => {
            let cleaned: String = value
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '/' | '='))
                .collect();
            base64::engine::general_purpose::STANDARD
                .decode(cleaned.as_bytes())
                .map(Yaml::Bytes)
                .map_err(|_| YamlError::Malformed)
        }
        _ => Err(YamlError::Malformed),
    }
}

/// PyYAML `construct_yaml_int`: underscores removed, sign, `0`, `0b`, `0x`, leading-`0` octal, `:` base 60,
/// else decimal.
fn construct_int(raw: &str) -> Result<Yaml, YamlError> {
    let cleaned: String = raw.trim().chars().filter(|c| *c != '_').collect();
    let (negative, digits) = match cleaned.as_bytes().first() {
        Some(b'-') => (true, &cleaned[1..]),
        Some(b'+') => (false, &cleaned[1..]),
        _ => (false, cleaned.as_str()),
    };
    let parsed: Option<i128> = if digits == "0" {
        Some(0)
    } else if let Some(b) = digits.strip_prefix("0b") {
        i128::from_str_radix(b, 2).ok()
    } else if let Some(h) = digits.strip_prefix("0x") {
        i128::from_str_radix(h, 16).ok()
    } else if digits.starts_with('0') && digits.len() > 1 {
        i128::from_str_radix(&digits[1..], 8).ok()
    } else if digits.contains(':') {
        let mut total: Option<i128> = Some(0);
        for part in digits.split(':') {
            let p = part.parse::<i128>().ok();
            total = total
                .and_then(|t| t.checked_mul(60))
                .and_then(|t| p.and_then(|p| t.checked_add(p)));
        }
        total
    } else {
        digits.parse::<i128>().ok()
    };
    match parsed {
        Some(v) => Ok(Yaml::Int(if negative { -v } else { v })),
        None if !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) => Ok(Yaml::BigInt(if negative {
            format!("-{digits}")
        } else {
            digits.to_owned()
        })),
        None => Err(YamlError::Malformed),
    }
}

/// PyYAML `construct_yaml_float`: underscores removed, lowercased, sign, `.inf`, `.nan`, `:` base 60, else
/// Python `float()`.
fn construct_float(raw: &str) -> Result<Yaml, YamlError> {
    let cleaned: String = raw
        .trim()
        .chars()
        .filter(|c| *c != '_')
        .collect::<String>()
        .to_lowercase();
    let (sign, body) = match cleaned.as_bytes().first() {
        Some(b'-') => (-1.0, &cleaned[1..]),
        Some(b'+') => (1.0, &cleaned[1..]),
        _ => (1.0, cleaned.as_str()),
    };
    let v = if body == ".inf" {
        f64::INFINITY
    } else if body == ".nan" {
        f64::NAN
    } else if body.contains(':') {
        let mut total = 0.0f64;
        for part in body.split(':') {
            total = total * 60.0 + part.parse::<f64>().map_err(|_| YamlError::Malformed)?;
        }
        total
    } else {
        body.parse::<f64>().map_err(|_| YamlError::Malformed)?
    };
    Ok(Yaml::Float(sign * v))
}

/// PyYAML `construct_yaml_timestamp`: a date, or a date and time with an optional fraction (kept to
/// microseconds) and offset (`Z`, `+h`, `+hh:mm`; less than 24 hours).
fn construct_timestamp(raw: &str) -> Result<Yaml, YamlError> {
    let re = TIMESTAMP_PARTS_RE.as_ref().ok_or(YamlError::Malformed)?;
    let c = re.captures(raw).ok_or(YamlError::Malformed)?;
    let num = |i: usize| -> Result<u32, YamlError> {
        c.get(i)
            .ok_or(YamlError::Malformed)?
            .as_str()
            .parse::<u32>()
            .map_err(|_| YamlError::Malformed)
    };
    let year = i32::try_from(num(1)?).map_err(|_| YamlError::Malformed)?;
    if year < 1 {
        return Err(YamlError::Malformed);
    }
    let date = NaiveDate::from_ymd_opt(year, num(2)?, num(3)?).ok_or(YamlError::Malformed)?;
    if c.get(4).is_none() {
        return Ok(Yaml::Date(date));
    }
    let micros = match c.get(7).map(|m| m.as_str()) {
        None => 0,
        Some(f) => {
            let six: String = f.chars().chain(std::iter::repeat('0')).take(6).collect();
            six.parse::<u32>().map_err(|_| YamlError::Malformed)?
        }
    };
    let time = NaiveTime::from_hms_micro_opt(num(4)?, num(5)?, num(6)?, micros).ok_or(YamlError::Malformed)?;
    let offset_secs = match (c.get(8).map(|m| m.as_str()), c.get(9).map(|m| m.as_str())) {
        (Some("Z"), _) => Some(0),
        (Some(_), Some(sign)) => {
            let hours = i32::try_from(num(10)?).map_err(|_| YamlError::Malformed)?;
            let minutes = match c.get(11) {
                Some(m) => m.as_str().parse::<i32>().map_err(|_| YamlError::Malformed)?,
                None => 0,
            };
            let secs = hours * 3600 + minutes * 60;
            if secs >= 86_400 {
                return Err(YamlError::Malformed);
            }
            Some(if sign == "-" { -secs } else { secs })
        }
        _ => None,
    };
    Ok(Yaml::DateTime {
        naive: NaiveDateTime::new(date, time),
        offset_secs,
    })
}

/// Render `pairs` as a block mapping the way PyYAML's `safe_dump(default_flow_style=False, allow_unicode=True,
/// sort_keys=False)` does, each line prefixed by `indent` spaces, nested mappings indented by `step` more, sequences
/// inside a mapping not indented (`key:` then `- item` at the key's column). Returns the lines (no line ends).
pub fn emit_mapping(pairs: &[(String, Yaml)], indent: usize, step: usize) -> Vec<String> {
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    for (k, v) in pairs {
        let key = emit_str(k);
        match v {
            Yaml::Seq(items) if !items.is_empty() => {
                out.push(format!("{pad}{key}:"));
                out.extend(emit_seq(items, indent, step));
            }
            Yaml::Map(inner) if !inner.is_empty() => {
                out.push(format!("{pad}{key}:"));
                let inner: Vec<(String, Yaml)> = inner
                    .iter()
                    .map(|(k, v)| (k.as_str().map_or_else(|| emit_scalar(k), str::to_owned), v.clone()))
                    .collect();
                out.extend(emit_mapping(&inner, indent + step, step));
            }
            other => out.push(format!("{pad}{key}: {}", emit_scalar(other))),
        }
    }
    out
}

fn emit_seq(items: &[Yaml], indent: usize, step: usize) -> Vec<String> {
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    for item in items {
        let nested = match item {
            Yaml::Map(inner) if !inner.is_empty() => {
                let inner: Vec<(String, Yaml)> = inner
                    .iter()
                    .map(|(k, v)| (k.as_str().map_or_else(|| emit_scalar(k), str::to_owned), v.clone()))
                    .collect();
                Some(emit_mapping(&inner, indent + 2, step))
            }
            Yaml::Seq(inner) if !inner.is_empty() => Some(emit_seq(inner, indent + 2, step)),
            _ => None,
        };
        match nested {
            Some(mut lines) => {
                if let Some(first) = lines.first_mut() {
                    *first = format!("{pad}- {}", &first[indent + 2..]);
                }
                out.extend(lines);
            }
            None => out.push(format!("{pad}- {}", emit_scalar(item))),
        }
    }
    out
}

/// A scalar (or an empty collection) as PyYAML writes it in block style.
pub fn emit_scalar(v: &Yaml) -> String {
    match v {
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => if *b { "true" } else { "false" }.into(),
        Yaml::Int(i) => i.to_string(),
        Yaml::BigInt(s) => s.clone(),
        Yaml::Float(f) => emit_float(*f),
        Yaml::Str(s) => emit_str(s),
        Yaml::Bytes(b) => format!("!!binary {}", base64::engine::general_purpose::STANDARD.encode(b)),
        Yaml::Date(d) => d.format("%Y-%m-%d").to_string(),
        Yaml::DateTime { naive, offset_secs } => {
            let mut s = naive.format("%Y-%m-%d %H:%M:%S").to_string();
            let micros = naive.and_utc().timestamp_subsec_micros();
            if micros != 0 {
                s.push_str(&format!(".{micros:06}"));
            }
            if let Some(off) = offset_secs {
                let sign = if *off < 0 { '-' } else { '+' };
                let a = off.unsigned_abs();
                s.push_str(&format!("{sign}{:02}:{:02}", a / 3600, (a % 3600) / 60));
            }
            s
        }
        Yaml::Seq(_) | Yaml::Pairs(_) => "[]".into(),
        Yaml::Map(_) | Yaml::Set(_) => "{}".into(),
    }
}

/// Python `repr(float)` as PyYAML writes it (`.inf`, `.nan`, `1.0`, `1.0e-05`).
fn emit_float(f: f64) -> String {
    if f.is_nan() {
        return ".nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { ".inf".into() } else { "-.inf".into() };
    }
    let a = f.abs();
    let repr = if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let e = format!("{f:e}");
        let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
        let exp: i32 = exp.parse().unwrap_or(0);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.unsigned_abs())
    } else {
        let s = format!("{f}");
        if s.contains('.') { s } else { format!("{s}.0") }
    };
    if !repr.contains('.') && repr.contains('e') {
        repr.replacen('e', ".0e", 1)
    } else {
        repr
    }
}

/// A string as PyYAML writes it in block style: plain when that reads back as the same string, else single-quoted,
/// else (control or unprintable characters) double-quoted.
pub fn emit_str(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let printable = |c: char| {
        c == '\n'
            || (' '..='~').contains(&c)
            || ('\u{a0}'..='\u{d7ff}').contains(&c)
            || ('\u{e000}'..='\u{fffd}').contains(&c) && c != '\u{feff}'
            || ('\u{10000}'..'\u{10ffff}').contains(&c)
    };
    let special = chars.iter().any(|c| !printable(*c));
    let multiline = chars.contains(&'\n');
    let mut block_indicators = s.starts_with("---") || s.starts_with("...");
    let n = chars.len();
    for (i, c) in chars.iter().enumerate() {
        let followed_by_space = i + 1 == n || matches!(chars[i + 1], ' ' | '\t' | '\r' | '\n');
        let preceded_by_space = i == 0 || matches!(chars[i - 1], ' ' | '\t' | '\r' | '\n');
        if i == 0 {
            if "#,[]{}&*!|>'\"%@`".contains(*c) || ("?:-".contains(*c) && followed_by_space) {
                block_indicators = true;
            }
        } else if (*c == ':' && followed_by_space) || (*c == '#' && preceded_by_space) {
            block_indicators = true;
        }
    }
    let edge_space = chars.first().is_some_and(|c| *c == ' ') || chars.last().is_some_and(|c| *c == ' ');
    let plain =
        !s.is_empty() && !special && !multiline && !block_indicators && !edge_space && implicit_scalar_tag(s) == "str";
    if plain {
        return s.to_owned();
    }
    if !special && !multiline {
        return format!("'{}'", s.replace('\'', "''"));
    }
    let mut out = String::from("\"");
    for c in chars {
        match c {
            '\0' => out.push_str("\\0"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{b}' => out.push_str("\\v"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\u{1b}' => out.push_str("\\e"),
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{85}' => out.push_str("\\N"),
            '\u{a0}' => out.push_str("\\_"),
            '\u{2028}' => out.push_str("\\L"),
            '\u{2029}' => out.push_str("\\P"),
            c if printable(c) => out.push(c),
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(text: &str) -> Yaml {
        match load(text) {
            Ok(Some(Yaml::Map(mut m))) if m.len() == 1 => m.remove(0).1,
            other => panic!("{text:?}: {other:?}"),
        }
    }

    #[test]
    fn yaml_1_1_scalars() {
        assert_eq!(one("a: on"), Yaml::Bool(true));
        assert_eq!(one("a: 010"), Yaml::Int(8));
        assert_eq!(one("a: 09"), Yaml::Str("09".into()));
        assert_eq!(one("a: 1_000"), Yaml::Int(1000));
        assert_eq!(one("a: 1:30"), Yaml::Int(90));
        assert_eq!(one("a: -1:30"), Yaml::Int(-90));
        assert_eq!(one("a: 190:20:30"), Yaml::Int(685_230));
        assert_eq!(one("a: 1:60"), Yaml::Str("1:60".into()));
        assert_eq!(one("a: 0x_1f"), Yaml::Int(31));
        assert_eq!(one("a: 0b101"), Yaml::Int(5));
        assert_eq!(one("a: 0o17"), Yaml::Str("0o17".into()));
        assert_eq!(one("a: 1e3"), Yaml::Str("1e3".into()));
        assert_eq!(one("a: 1.0e+3"), Yaml::Float(1000.0));
        assert_eq!(one("a: .5"), Yaml::Float(0.5));
        assert_eq!(one("a: y"), Yaml::Str("y".into()));
        assert_eq!(one("a: nULL"), Yaml::Str("nULL".into()));
        assert_eq!(one("a: NULL"), Yaml::Null);
        assert_eq!(one("a:"), Yaml::Null);
        assert_eq!(one("a: !!str 12"), Yaml::Str("12".into()));
        assert_eq!(one("a: !!int \"12\""), Yaml::Int(12));
        assert_eq!(one("a: !!float 1"), Yaml::Float(1.0));
        assert_eq!(one("a: !!binary aGVsbG8="), Yaml::Bytes(b"hello".to_vec()));
        assert_eq!(
            one("a: 2020-02-02"),
            Yaml::Date(NaiveDate::from_ymd_opt(2020, 2, 2).expect("date"))
        );
        assert!(matches!(
            one("a: 2001-12-14t21:59:43.10-05:00"),
            Yaml::DateTime {
                offset_secs: Some(-18_000),
                ..
            }
        ));
        assert_eq!(one("a: '1'"), Yaml::Str("1".into()));
    }

    #[test]
    fn pyyaml_refusals() {
        for bad in [
            "a:\tb",
            "a: b\t",
            "a: =",
            "a: !foo x",
            "a: 2020-02-30",
            "? [1,2]\n: x",
            "a: [unclosed",
            "a: !!python/object:os.system {}",
            "a: 1\n---\nb: 2",
        ] {
            assert_eq!(load(bad), Err(YamlError::Malformed), "{bad:?}");
        }
        assert_eq!(load("a: &x 1\nb: *x"), Err(YamlError::Unsafe));
        assert_eq!(
            load("a: '\tb' # c\td"),
            Ok(Some(Yaml::Map(vec![(Yaml::Str("a".into()), Yaml::Str("\tb".into()))])))
        );
        let deep = format!("x: {}{}", "[".repeat(3000), "]".repeat(3000));
        assert_eq!(load(&deep), Err(YamlError::Malformed));
    }

    #[test]
    fn emitted_scalars_read_back() {
        for s in [
            "plain",
            "[[Other Note]]",
            "yes",
            "123",
            "",
            " lead",
            "a: b",
            "a #b",
            "-x",
            "- x",
            "it's",
            "tab\there",
            "line\nbreak",
            "2024-01-01",
            "=",
            "<<",
            "null",
            "café",
            "~",
        ] {
            let text = format!("k: {}", emit_str(s));
            assert_eq!(one(&text), Yaml::Str(s.into()), "{text:?}");
        }
        assert_eq!(emit_str("vault-start-here"), "vault-start-here");
        assert_eq!(emit_str(""), "''");
        assert_eq!(emit_float(0.9), "0.9");
        assert_eq!(emit_float(1.0), "1.0");
        assert_eq!(emit_float(1e-5), "1.0e-05");
        let lines = emit_mapping(
            &[
                (
                    "tags".into(),
                    Yaml::Seq(vec![Yaml::Str("a".into()), Yaml::Str("b".into())]),
                ),
                (
                    "links".into(),
                    Yaml::Seq(vec![Yaml::Map(vec![
                        (Yaml::Str("to".into()), Yaml::Str("x".into())),
                        (Yaml::Str("type".into()), Yaml::Str("supersedes".into())),
                    ])]),
                ),
                ("none".into(), Yaml::Seq(vec![])),
            ],
            2,
            2,
        );
        assert_eq!(
            lines,
            [
                "  tags:",
                "  - a",
                "  - b",
                "  links:",
                "  - to: x",
                "    type: supersedes",
                "  none: []"
            ]
        );
    }

    #[test]
    fn mappings_follow_python_dicts() {
        assert_eq!(
            load("{1: a, True: b, 1.0: c}"),
            Ok(Some(Yaml::Map(vec![(Yaml::Int(1), Yaml::Str("c".into()))])))
        );
        assert_eq!(
            load("<<: {x: 1}\ny: 2\nx: 3"),
            Ok(Some(Yaml::Map(vec![
                (Yaml::Str("x".into()), Yaml::Int(3)),
                (Yaml::Str("y".into()), Yaml::Int(2)),
            ])))
        );
        assert_eq!(load("# only a comment\n"), Ok(None));
        assert_eq!(load(""), Ok(None));
    }
}
