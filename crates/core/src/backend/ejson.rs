//! The slice of MongoDB Extended JSON we need: dates out, and any dialect of numbers/dates back in.
//!
//! Requests use canonical dates (`{"$date":{"$numberLong":"…"}}`, valid for any instant);
//! responses may be relaxed (ISO strings) or canonical (`$numberInt`…): [`normalize`] folds both
//! into plain JSON numbers and `{"$date": <ms>}` so callers see one shape.

use serde_json::{json, Map, Value};

/// An EJSON date for `ms` since the Unix epoch (a real BSON date server-side, so TTL indexes work).
#[must_use]
pub fn date(ms: i64) -> Value {
    json!({ "$date": { "$numberLong": ms.to_string() } })
}

/// The schema of a stored date, as [`normalize`] hands it to readers (`{"$date": ms}`).
#[cfg(not(target_arch = "wasm32"))]
#[derive(schemars::JsonSchema)]
#[allow(dead_code)] // a schema only
pub struct Date {
    /// Milliseconds since the Unix epoch.
    #[serde(rename = "$date")]
    ms: i64,
}

/// Milliseconds from any EJSON date form (`{"$date": ms | "ISO" | {"$numberLong": "ms"}}`).
#[must_use]
pub fn date_ms(v: &Value) -> Option<i64> {
    match v.get("$date")? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => parse_iso_ms(s),
        Value::Object(o) => o.get("$numberLong")?.as_str()?.parse().ok(),
        _ => None,
    }
}

/// Rewrites canonical/relaxed EJSON into plain JSON numbers and `{"$date": ms}` dates, recursively.
#[must_use]
pub fn normalize(v: Value) -> Value {
    match v {
        Value::Array(a) => Value::Array(a.into_iter().map(normalize).collect()),
        Value::Object(o) => normalize_object(o),
        other => other,
    }
}

fn normalize_object(o: Map<String, Value>) -> Value {
    if o.len() == 1 {
        let (k, inner) = o.iter().next().expect("len 1");
        let folded = match (k.as_str(), inner) {
            ("$numberInt" | "$numberLong", Value::String(s)) => {
                s.parse::<i64>().ok().map(Value::from)
            }
            // NaN/Infinity have no JSON form: keep the EJSON wrapper for those.
            ("$numberDouble", Value::String(s)) => s
                .parse::<f64>()
                .ok()
                .and_then(|f| serde_json::Number::from_f64(f).map(Value::Number)),
            ("$date", _) => date_ms(&Value::Object(o.clone())).map(|ms| json!({ "$date": ms })),
            _ => None,
        };
        if let Some(v) = folded {
            return v;
        }
    }
    Value::Object(o.into_iter().map(|(k, v)| (k, normalize(v))).collect())
}

/// Parses an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)`, what relaxed EJSON
/// emits) to epoch ms, through chrono (already in the worker's tree through `worker`).
#[must_use]
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_dates_parse_to_epoch_ms() {
        assert_eq!(parse_iso_ms("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_iso_ms("2024-02-29T12:34:56.789Z"),
            Some(1_709_210_096_789)
        );
        assert_eq!(
            parse_iso_ms("2024-02-29T14:34:56.7+02:00"),
            Some(1_709_210_096_700)
        );
        assert_eq!(parse_iso_ms("1969-12-31T23:59:59.999Z"), Some(-1));
        assert_eq!(parse_iso_ms("2024-13-01T00:00:00Z"), None);
        assert_eq!(parse_iso_ms("2024-02-30T00:00:00Z"), None);
        assert_eq!(parse_iso_ms("2024-01-01T00:00:00"), None);
        // Lower-case and space separators, as RFC 3339 allows; more than 3 fraction digits.
        assert_eq!(parse_iso_ms("1970-01-01t00:00:01.0019z"), Some(1001));
        assert_eq!(parse_iso_ms("1970-01-01 00:00:00-00:30"), Some(1_800_000));
        // A leap second is the next minute's first millisecond's neighbour, never an error.
        assert_eq!(parse_iso_ms("1970-01-01T00:00:60Z"), Some(60_000));
    }

    #[test]
    fn normalize_folds_canonical_and_relaxed_forms() {
        let v = json!({
            "n": {"$numberInt": "3"}, "l": {"$numberLong": "-9"}, "f": {"$numberDouble": "1.5"},
            "d1": {"$date": {"$numberLong": "1700000000000"}}, "d2": {"$date": "2023-11-14T22:13:20Z"},
            "nan": {"$numberDouble": "NaN"}, "oid": {"$oid": "65a1b2c3d4e5f6a7b8c9d0e1"},
            "arr": [{"$numberInt": "1"}]
        });
        let n = normalize(v);
        assert_eq!(n["n"], 3);
        assert_eq!(n["l"], -9);
        assert_eq!(n["f"], 1.5);
        assert_eq!(n["d1"], json!({"$date": 1_700_000_000_000_i64}));
        assert_eq!(n["d2"], json!({"$date": 1_700_000_000_000_i64}));
        assert_eq!(n["nan"], json!({"$numberDouble": "NaN"}));
        assert_eq!(n["oid"]["$oid"], "65a1b2c3d4e5f6a7b8c9d0e1");
        assert_eq!(n["arr"][0], 1);
        assert_eq!(date_ms(&date(42)), Some(42));
    }
}
