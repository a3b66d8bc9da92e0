//! Timestamp formats shared by the wiki files, the index and the payloads.
//!
//! Wiki headings and `index.md` use `YYYY-MM-DDTHH:MM:SSZ` (UTC, second precision), as the reference writes
//! them (spec/reference-facts.md, "Topic file": "Timestamps are UTC, second precision, `Z` suffix"). Every output
//! uses that one format too: payloads (`updated_at`), HTTP bodies and the JSON the CLI prints, so a time reads the
//! same whether its row was written live (the index keeps sub-second times) or rebuilt from the files. Serialised
//! types mark their time fields with [`serde_ts`] / [`serde_ts_opt`].

use chrono::{DateTime, NaiveDateTime, SecondsFormat, TimeZone, Utc};

/// Format `t` as `YYYY-MM-DDTHH:MM:SSZ` (sub-second part dropped).
pub fn format_ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// `#[serde(serialize_with = "cao_core::time::serde_ts")]`: a time as [`format_ts`] writes it.
///
/// Errors: only the serializer's own.
pub fn serde_ts<S: serde::Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&format_ts(*t))
}

/// `#[serde(serialize_with = "cao_core::time::serde_ts_opt")]`: an optional time as [`format_ts`] writes it, or
/// `null`.
///
/// Errors: only the serializer's own.
pub fn serde_ts_opt<S: serde::Serializer>(t: &Option<DateTime<Utc>>, s: S) -> Result<S::Ok, S::Error> {
    match t {
        Some(t) => s.serialize_str(&format_ts(*t)),
        None => s.serialize_none(),
    }
}

/// Parse a wiki timestamp `YYYY-MM-DDTHH:MM:SSZ`. Returns `None` for anything else.
pub fn parse_ts(s: &str) -> Option<DateTime<Utc>> {
    let naive = NaiveDateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%SZ").ok()?;
    Some(Utc.from_utc_datetime(&naive))
}

/// Truncate `t` to whole seconds (what a wiki heading can represent).
pub fn truncate_secs(t: DateTime<Utc>) -> DateTime<Utc> {
    parse_ts(&format_ts(t)).unwrap_or(t)
}

/// Age of `then` at `now` in fractional days; a future `then` counts as age 0
/// (spec/reference-facts.md, "Ranking": future dates count as age 0).
pub fn days_old(now: DateTime<Utc>, then: DateTime<Utc>) -> f64 {
    let secs = (now - then).num_milliseconds() as f64 / 1000.0;
    (secs / 86_400.0).max(0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_second_precision() {
        let t = parse_ts("2026-04-16T10:30:00Z").expect("valid");
        assert_eq!(format_ts(t), "2026-04-16T10:30:00Z");
        assert!(parse_ts("2026-04-16 10:30:00").is_none());
        assert!(parse_ts("2026-04-16T10:30:00+00:00").is_none());
    }

    #[test]
    fn serialised_times_have_second_precision() {
        #[derive(serde::Serialize)]
        struct T {
            #[serde(serialize_with = "serde_ts")]
            at: DateTime<Utc>,
            #[serde(serialize_with = "serde_ts_opt")]
            maybe: Option<DateTime<Utc>>,
            #[serde(serialize_with = "serde_ts_opt")]
            never: Option<DateTime<Utc>>,
        }
        let at = parse_ts("2026-04-16T10:30:00Z").expect("valid") + chrono::TimeDelta::microseconds(123_456);
        let json = serde_json::to_string(&T {
            at,
            maybe: Some(at),
            never: None,
        })
        .expect("json");
        assert_eq!(
            json,
            r#"{"at":"2026-04-16T10:30:00Z","maybe":"2026-04-16T10:30:00Z","never":null}"#
        );
    }

    #[test]
    fn future_is_age_zero() {
        let now = parse_ts("2026-01-02T00:00:00Z").expect("valid");
        let later = parse_ts("2026-01-05T00:00:00Z").expect("valid");
        assert_eq!(days_old(now, later), 0.0);
        assert_eq!(days_old(later, now), 3.0);
    }
}
