//! Rendering stored documents: the one-line summary and the API view.

use serde_json::{json, Map, Value};

use super::template::{self, Piece};
use crate::backend::ejson;

/// "Ana", "Ana and Ben", "Ana and 3 others": newest origin first, `originsCount` for the rest.
fn actor(doc: &Value) -> Option<String> {
    let count = doc.get("originsCount").and_then(Value::as_i64).unwrap_or(0);
    let names: Vec<&str> = doc
        .get("origins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|o| o.get("n")?.as_str())
        .collect();
    Some(match (names.as_slice(), count) {
        (_, c) if c <= 0 => return None,
        ([], c) => format!("{c} {}", if c == 1 { "person" } else { "people" }),
        ([first, ..], 1) => (*first).to_owned(),
        ([first, second, ..], 2) => format!("{first} and {second}"),
        ([first, ..], 2) => format!("{first} and 1 other"),
        ([first, ..], c) => format!("{first} and {} others", c - 1),
    })
}

/// The item's one-line text, re-rendered after merges and retractions; `None` for an empty item.
///
/// One pass over pre-parsed pieces: a name or argument value is never read as a template itself,
/// so `{post}` in a sender's name stays literal and nested arguments cannot grow the text (found
/// by review while fuzzing, fuzz/regressions/body_parsing/). A document missing an argument
/// (stored before its template named it) gets the generic text rather than a hole.
#[must_use]
pub fn summary(doc: &Value) -> Option<String> {
    let kind = doc
        .get("notificationType")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let actor = actor(doc)?;
    let args = doc.get("messageArguments").and_then(Value::as_object);
    let arg = |n: &str| args.and_then(|a| a.get(n)?.as_str());
    let (mut pieces, needs) = template::template(kind);
    if needs.iter().any(|n| arg(n).is_none()) {
        pieces = template::fallback();
    }
    let mut text = String::new();
    for p in pieces {
        match p {
            Piece::Text(t) => text.push_str(t),
            Piece::Actor => text.push_str(&actor),
            Piece::Arg(n) => text.push_str(arg(n).unwrap_or_default()),
        }
    }
    Some(text)
}

/// The API shape of a stored (normalized) document: long names, dates as epoch ms, a summary.
#[must_use]
pub fn view(doc: &Value) -> Value {
    let origins: Vec<Value> = doc
        .get("origins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|o| {
            let mut m = Map::new();
            m.insert(
                "senderId".into(),
                o.get("s").cloned().unwrap_or(Value::Null),
            );
            m.insert("name".into(), o.get("n").cloned().unwrap_or(Value::Null));
            for (short, long) in [("a", "avatar"), ("l", "landing")] {
                if let Some(v) = o.get(short) {
                    m.insert(long.into(), v.clone());
                }
            }
            m.insert(
                "createdTimeMsec".into(),
                o.get("t").cloned().unwrap_or(Value::Null),
            );
            Value::Object(m)
        })
        .collect();
    let field = |k: &str| doc.get(k).cloned().unwrap_or(Value::Null);
    let ms = |k: &str| {
        doc.get(k)
            .and_then(ejson::date_ms)
            .map_or(Value::Null, Value::from)
    };
    json!({
        "notificationId": field("_id"),
        "itemKey": field("itemKey"),
        "serviceType": field("serviceType"),
        "categoryType": field("categoryType"),
        "notificationType": field("notificationType"),
        "templateType": field("templateType"),
        "createdTimeMsec": ms("createdTime"),
        "expireAtMsec": ms("expireAt"),
        "revision": field("revision"),
        "originsCount": field("originsCount"),
        "origins": origins,
        "read": field("read"),
        "seen": field("seen"),
        "archived": field("archived"),
        "landing": field("landing"),
        "messageArguments": doc.get("messageArguments").cloned().unwrap_or_else(|| json!({})),
        "summary": summary(doc),
    })
}

/// A change-feed entry: the item's view, or `{itemKey, deleted: true}` for a tombstone or an
/// item past its expiry (which the cron has not turned into a tombstone yet).
#[must_use]
pub fn change_view(doc: &Value, now_ms: i64) -> Value {
    let gone = doc.get("deleted").and_then(Value::as_bool) == Some(true)
        || doc
            .get("expireAt")
            .and_then(ejson::date_ms)
            .is_some_and(|t| t <= now_ms);
    if gone {
        json!({ "itemKey": doc.get("itemKey").cloned().unwrap_or(Value::Null), "deleted": true })
    } else {
        view(doc)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(kind: &str, count: i64, names: &[&str]) -> Value {
        let origins: Vec<Value> = names
            .iter()
            .map(|n| json!({"s": n, "n": n, "t": 1}))
            .collect();
        json!({"notificationType": kind, "originsCount": count, "origins": origins})
    }

    #[test]
    fn summaries_follow_count_and_newest_origin() {
        assert_eq!(
            summary(&doc("like", 1, &["Ana"])).unwrap(),
            "Ana liked your post"
        );
        assert_eq!(
            summary(&doc("like", 2, &["Ana", "Ben"])).unwrap(),
            "Ana and Ben liked your post"
        );
        assert_eq!(
            summary(&doc("comment", 4, &["Ana", "Ben", "Cy"])).unwrap(),
            "Ana and 3 others commented on your post"
        );
        assert_eq!(
            summary(&doc("like", 2, &["Ana"])).unwrap(),
            "Ana and 1 other liked your post"
        );
        assert_eq!(
            summary(&doc("odd", 1, &["Ana"])).unwrap(),
            "Ana sent you a notification"
        );
        assert_eq!(
            summary(&doc("like", 5, &[])).unwrap(),
            "5 people liked your post"
        );
        assert_eq!(summary(&doc("like", 0, &[])), None);
        let mut d = doc("like", 1, &["{post} {actor}"]);
        d["messageArguments"] = json!({"post": "x"});
        assert_eq!(summary(&d).unwrap(), "{post} {actor} liked your post");
        let mut r = doc("reply", 1, &["Ana"]);
        r["messageArguments"] = json!({"excerpt": "{actor}!"});
        assert_eq!(summary(&r).unwrap(), "Ana replied: {actor}!");
        r["messageArguments"] = json!({});
        assert_eq!(summary(&r).unwrap(), "Ana sent you a notification");
    }

    #[test]
    fn view_expands_short_names_and_dates() {
        let d = json!({"_id": "n1", "origins": [{"s": "s1", "n": "Ana", "a": "https://x/a.png", "t": 5, "e": "e1"}],
            "originsCount": 1, "notificationType": "like", "createdTime": {"$date": 5}, "messageArguments": {"post": "Hi"}});
        let v = view(&d);
        assert_eq!(v["notificationId"], "n1");
        assert_eq!(v["createdTimeMsec"], 5);
        assert_eq!(
            v["origins"][0],
            json!({"senderId": "s1", "name": "Ana", "avatar": "https://x/a.png", "createdTimeMsec": 5})
        );
        assert_eq!(v["summary"], "Ana liked your post");
    }
}
