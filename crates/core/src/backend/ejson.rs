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

/// Parses `YYYY-MM-DDTHH:MM:SS[.fff…](Z|±HH:MM)` (what relaxed EJSON emits) to epoch ms.
#[must_use]
pub fn parse_iso_ms(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = b.get(r)?;
        t.iter()
            .all(u8::is_ascii_digit)
            .then(|| t.iter().fold(0i64, |a, d| a * 10 + i64::from(d - b'0')))
    };
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't' | b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let (y, mo, d, h, mi, sec) = (
        num(0..4)?,
        num(5..7)?,
        num(8..10)?,
        num(11..13)?,
        num(14..16)?,
        num(17..19)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut ms = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            if i - start < 3 {
                ms = ms * 10 + i64::from(b[i] - b'0');
            }
            i += 1;
        }
        if i == start {
            return None;
        }
        for _ in (i - start)..3 {
            ms *= 10;
        }
    }
    let offset_min = match b.get(i)? {
        b'Z' | b'z' if i + 1 == b.len() => 0,
        sign @ (b'+' | b'-') if b.len() == i + 6 && b[i + 3] == b':' => {
            let m = num(i + 1..i + 3)? * 60 + num(i + 4..i + 6)?;
            if *sign == b'-' {
                -m
            } else {
                m
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some(((days * 24 + h) * 60 + mi - offset_min) * 60_000 + sec * 1000 + ms)
}

/// Days since 1970-01-01 for a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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
        assert_eq!(parse_iso_ms("2024-01-01T00:00:00"), None);
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
