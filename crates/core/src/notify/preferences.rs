//! Per-user notification preferences: muted categories and types.
//!
//! The Data API document (`{collection}_preferences`, `_id` = owner) is the truth; a Redis set
//! (`np:{owner}`, members `c:{category}` / `t:{type}`) mirrors it so the create path checks it
//! inside the dedup reservation's EVALSHA — no extra round trip. The mirror is written after the
//! document on every PUT and refreshed after every GET (read repair), so a lost mirror write
//! heals on the next read. Without Redis, muting is stored but not enforced (`enforced: false`),
//! and if Redis is down events are delivered: a notification shown by mistake beats one lost.
//!
//! Every mirror write carries the document's [`Revision`], and the mirror only moves forward:
//! a read repair runs after its response, so a GET that read the document before a PUT can
//! land after the PUT's own write, and without the revision it would put the old mutes back.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{NotifyConfig, NotifyError};
use crate::backend::{BackendError, DataApiClient, HttpClient, RedisRestClient, Script};

/// Most entries in each muted list.
pub const MAX_MUTED: usize = super::limits::MUTED;

/// Replaces the mirror set in one atomic script call unless it holds a newer revision.
/// ARGV = since, rev, members…; the set keeps `v:{since}:{rev}` beside the members (the create
/// path's `SISMEMBER` asks only for `c:`/`t:` members). Answers the members written, or -1
/// when the mirror is newer and was left alone.
const PUBLISH_LUA: &str = include_str!("publish_mutes.lua");

/// What a user muted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", try_from = "Object")]
pub struct Preferences {
    /// Muted `categoryType`s.
    #[serde(default)]
    pub muted_categories: Vec<String>,
    /// Muted `notificationType`s.
    #[serde(default)]
    pub muted_types: Vec<String>,
}

/// The body as a JSON object only: a derived struct also takes an array of its fields
/// (`[[], []]`), which the OpenAPI document does not allow.
#[derive(Deserialize)]
struct Object(serde_json::Map<String, Value>);

/// `PUT /v1/notifications/preferences`: replaces both lists (an absent one is empty).
#[derive(Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreferencesInput {
    /// Categories to mute.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::muted_categories")
    )]
    muted_categories: Vec<String>,
    /// Notification types to mute.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::muted_types")
    )]
    muted_types: Vec<String>,
}

impl TryFrom<Object> for Preferences {
    type Error = serde_json::Error;

    fn try_from(o: Object) -> Result<Self, Self::Error> {
        let w: PreferencesInput = serde_json::from_value(Value::Object(o.0))?;
        Ok(Self {
            muted_categories: w.muted_categories,
            muted_types: w.muted_types,
        })
    }
}

impl Preferences {
    /// Checks sizes and names; sorts and de-duplicates.
    ///
    /// # Errors
    /// `field_too_long`, `invalid_characters`, `unknown_category`.
    pub fn normalized(mut self, cfg: &NotifyConfig) -> Result<Self, NotifyError> {
        for (field, list) in [
            ("mutedCategories", &mut self.muted_categories),
            ("mutedTypes", &mut self.muted_types),
        ] {
            if list.len() > MAX_MUTED {
                return Err(NotifyError::TooLong {
                    field,
                    max: MAX_MUTED,
                });
            }
            list.sort();
            list.dedup();
        }
        for c in &self.muted_categories {
            if !cfg.categories.contains(c) {
                return Err(NotifyError::UnknownCategory { value: c.clone() });
            }
        }
        for t in &self.muted_types {
            super::event::ident("mutedTypes", t, super::event::limits::KIND)?;
        }
        Ok(self)
    }

    /// The mirror set's members.
    #[must_use]
    pub fn members(&self) -> Vec<String> {
        let c = self.muted_categories.iter().map(|c| format!("c:{c}"));
        c.chain(self.muted_types.iter().map(|t| format!("t:{t}")))
            .collect()
    }
}

/// Which save of the document a mirror write copies: compared as (`since`, `rev`).
/// `rev` counts saves (`$inc`, so two saves in one millisecond still differ); `since` is the
/// first save's clock, so a document created again after an erasure outranks a read repair of
/// the erased one that lands late. A document saved before revisions existed is (0, 0).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Revision {
    /// The clock of the document's first save (ms).
    pub since_ms: i64,
    /// How many times the document was saved.
    pub rev: i64,
}

/// The stored document: the preferences and the save they come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// What the owner muted.
    pub preferences: Preferences,
    /// The save it comes from.
    pub revision: Revision,
}

/// Redis key of an owner's muted set.
#[must_use]
pub fn mute_key(owner: &str) -> String {
    format!("np:{owner}")
}

/// The members that mute an event of this category and type.
#[must_use]
pub fn mute_members(category: &str, notification_type: &str) -> [String; 2] {
    [format!("c:{category}"), format!("t:{notification_type}")]
}

fn collection(cfg: &NotifyConfig) -> String {
    cfg.collections().preferences
}

/// Reads an owner's stored preferences (one call; `None`: nothing stored, nothing muted).
///
/// # Errors
/// Backend failures.
pub async fn load<H: HttpClient>(
    api: &DataApiClient<H>,
    cfg: &NotifyConfig,
    owner: &str,
) -> Result<Option<Stored>, NotifyError> {
    let doc = api
        .find_one(&collection(cfg), &json!({ "_id": owner }), None, None)
        .await?;
    Ok(doc.as_ref().map(stored))
}

fn stored(d: &Value) -> Stored {
    let list = |k: &str| -> Vec<String> {
        d.get(k)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    let int = |k: &str| d.get(k).and_then(Value::as_i64).unwrap_or(0);
    Stored {
        preferences: Preferences {
            muted_categories: list("mutedCategories"),
            muted_types: list("mutedTypes"),
        },
        revision: Revision {
            since_ms: int("since"),
            rev: int("rev"),
        },
    }
}

/// Stores an owner's preferences and reads the document back (two calls: an upsert that counts
/// the save, then a find, because the Data API's update does not answer the document). The
/// read-back is what the mirror copies; `None` when the document is gone again (an erasure ran
/// in between).
///
/// # Errors
/// Backend failures.
pub async fn save<H: HttpClient>(
    api: &DataApiClient<H>,
    cfg: &NotifyConfig,
    owner: &str,
    prefs: &Preferences,
    now_ms: i64,
) -> Result<Option<Stored>, NotifyError> {
    let update = json!({
        "$set": { "mutedCategories": prefs.muted_categories, "mutedTypes": prefs.muted_types },
        "$inc": { "rev": 1 },
        "$setOnInsert": { "since": now_ms },
        "$currentDate": { "updatedAt": true },
    });
    api.update_one(&collection(cfg), &json!({ "_id": owner }), &update, true)
        .await?;
    load(api, cfg, owner).await
}

/// Copies a stored document to the Redis mirror (one script call); a mirror already holding a
/// newer revision is left alone.
///
/// # Errors
/// Backend failures.
pub async fn publish<H: HttpClient>(
    redis: &RedisRestClient<H>,
    owner: &str,
    doc: &Stored,
) -> Result<(), BackendError> {
    redis
        .evalsha_or_eval(
            &Script::new(PUBLISH_LUA),
            &[&mute_key(owner)],
            &refs(&publish_args(doc)),
        )
        .await
        .map(|_| ())
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// The publish script's ARGV: since, rev, then the members.
fn publish_args(doc: &Stored) -> Vec<String> {
    let r = doc.revision;
    [r.since_ms.to_string(), r.rev.to_string()]
        .into_iter()
        .chain(doc.preferences.members())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_body_is_an_object_of_known_lists() {
        let p = |b: &str| serde_json::from_str::<super::Preferences>(b);
        assert!(p("[[], []]").is_err());
        assert!(p(r#"{"mutedTypes": ["like"], "x": 1}"#).is_err());
        assert_eq!(
            p(r#"{"mutedTypes": ["like"]}"#).unwrap().muted_types,
            ["like"]
        );
        assert_eq!(p("{}").unwrap(), super::Preferences::default());
    }

    use super::*;

    #[test]
    fn preferences_are_checked_and_normalized() {
        let cfg = NotifyConfig::default();
        let p = Preferences {
            muted_categories: vec!["social".into(), "home".into(), "social".into()],
            muted_types: vec!["like".into()],
        }
        .normalized(&cfg)
        .unwrap();
        assert_eq!(p.muted_categories, ["home", "social"]);
        assert_eq!(p.members(), ["c:home", "c:social", "t:like"]);
        let bad = |p: Preferences| p.normalized(&cfg).unwrap_err().kind();
        assert_eq!(
            bad(Preferences {
                muted_categories: vec!["nope".into()],
                ..Preferences::default()
            }),
            "unknown_category"
        );
        assert_eq!(
            bad(Preferences {
                muted_types: vec!["a b".into()],
                ..Preferences::default()
            }),
            "invalid_chars"
        );
        assert_eq!(
            bad(Preferences {
                muted_types: (0..33).map(|i| format!("t{i}")).collect(),
                ..Preferences::default()
            }),
            "too_long"
        );
        assert_eq!(mute_members("social", "like"), ["c:social", "t:like"]);
    }
}
