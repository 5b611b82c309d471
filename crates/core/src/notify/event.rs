//! The incoming event, validated once at the boundary; rules only ever see valid events.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{NotifyConfig, NotifyError};

pub(crate) use super::limits;

/// A retraction: remove one sender's origin from an item.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Retraction {
    /// Owner of the item.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::id")
    )]
    pub owner: String,
    /// The merged item.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::item_key")
    )]
    pub item_key: String,
    /// The sender whose origin is removed.
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::id")
    )]
    pub sender_id: String,
}

/// Raw sender as received (API JSON, camelCase).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = super::schema::new_sender_fields))]
pub struct NewSender {
    /// Sender id.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::id")
    )]
    pub id: String,
    /// Display name.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::name")
    )]
    pub name: String,
    /// Avatar URL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::url")
    )]
    pub avatar: Option<String>,
}

/// Raw event as received; validate with [`NotificationEvent::new`]. Serializes to the same JSON
/// (a queued event travels in this shape).
#[derive(Debug, Clone, Default, Deserialize, Serialize, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[cfg_attr(
    not(target_arch = "wasm32"),
    schemars(
        description = "Lengths are limits in UTF-8 bytes; a violated rule answers 422 with the field's name.",
        transform = super::schema::new_event_fields
    )
)]
#[serde(rename_all = "camelCase")]
pub struct NewEvent {
    /// Recipient.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::id")
    )]
    pub owner: String,
    /// Merge key: events with the same (owner, itemKey) become one item.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::item_key")
    )]
    pub item_key: String,
    /// Producing service.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::kind")
    )]
    pub service_type: String,
    /// Inbox category (must be configured).
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::category")
    )]
    pub category_type: String,
    /// Kind of activity (`like`, `comment`…); picks the summary template.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::kind")
    )]
    pub notification_type: String,
    /// Client layout.
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::kind")
    )]
    pub template_type: String,
    /// Producer's unique id of this event (dedup key).
    #[serde(default)]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::id")
    )]
    pub event_id: String,
    /// Who acted.
    #[serde(default)]
    pub sender: NewSender,
    /// Where a tap leads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::url")
    )]
    pub landing: Option<String>,
    /// Template arguments.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::message_arguments")
    )]
    pub message_arguments: BTreeMap<String, String>,
    /// Event time (ms since epoch), also the dedup bucket time.
    #[serde(default, deserialize_with = "integer")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "super::schema::created_time")
    )]
    pub created_time_msec: i64,
}

/// An integer as JSON Schema counts them: `5` or `5.0` (the same number in JSON's data model,
/// which the OpenAPI document's `"type": "integer"` allows), nothing with a fraction.
///
/// # Errors
/// Not a number, a fraction, or out of `T`'s range.
pub fn integer<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: TryFrom<i64>,
{
    use serde::de::Error as _;
    let n = serde_json::Number::deserialize(d)?;
    let whole = n.as_i64().or_else(|| {
        n.as_f64()
            // The range check first: `as` saturates, and 2^63 is exactly representable.
            .filter(|f| f.fract() == 0.0 && *f >= -(2f64.powi(63)) && *f < 2f64.powi(63))
            .map(|f| f as i64)
    });
    whole
        .and_then(|i| T::try_from(i).ok())
        .ok_or_else(|| D::Error::custom(format!("{n} is not an integer in range")))
}

/// A validated sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sender {
    pub(crate) id: String,
    pub(crate) name: String,
    pub(crate) avatar: Option<String>,
}

impl Sender {
    /// Sender id.
    #[must_use]
    pub fn id(&self) -> &str {
        &self.id
    }
    /// Display name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Avatar URL.
    #[must_use]
    pub fn avatar(&self) -> Option<&str> {
        self.avatar.as_deref()
    }
}

/// Back to the wire form, unchanged ([`NotificationEvent::new`] only checks and moves fields):
/// what a hot create hands to the queue.
impl From<NotificationEvent> for NewEvent {
    fn from(ev: NotificationEvent) -> Self {
        NewEvent {
            owner: ev.owner,
            item_key: ev.item_key,
            service_type: ev.service_type,
            category_type: ev.category_type,
            notification_type: ev.notification_type,
            template_type: ev.template_type,
            event_id: ev.event_id,
            sender: NewSender {
                id: ev.sender.id,
                name: ev.sender.name,
                avatar: ev.sender.avatar,
            },
            landing: ev.landing,
            message_arguments: ev.message_arguments,
            created_time_msec: ev.created_time_msec,
        }
    }
}

/// A validated notification event (private fields: only [`NotificationEvent::new`] makes one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationEvent {
    pub(crate) owner: String,
    pub(crate) item_key: String,
    pub(crate) service_type: String,
    pub(crate) category_type: String,
    pub(crate) notification_type: String,
    pub(crate) template_type: String,
    pub(crate) event_id: String,
    pub(crate) sender: Sender,
    pub(crate) landing: Option<String>,
    pub(crate) message_arguments: BTreeMap<String, String>,
    pub(crate) created_time_msec: i64,
}

impl NotificationEvent {
    /// Validates sizes, character sets, the category and the time (`now_ms` bounds future skew).
    ///
    /// # Errors
    /// The first violated rule, as a [`NotifyError`] with the API field name.
    pub fn new(raw: NewEvent, cfg: &NotifyConfig, now_ms: i64) -> Result<Self, NotifyError> {
        use limits::*;
        text("owner", &raw.owner, ID)?;
        text("itemKey", &raw.item_key, ITEM_KEY)?;
        ident("serviceType", &raw.service_type, KIND)?;
        ident("categoryType", &raw.category_type, KIND)?;
        ident("notificationType", &raw.notification_type, KIND)?;
        ident("templateType", &raw.template_type, KIND)?;
        text("eventId", &raw.event_id, ID)?;
        text("sender.id", &raw.sender.id, ID)?;
        text("sender.name", &raw.sender.name, NAME)?;
        if let Some(a) = &raw.sender.avatar {
            url("sender.avatar", a)?;
        }
        if let Some(l) = &raw.landing {
            url("landing", l)?;
        }
        if raw.message_arguments.len() > ARGS {
            return Err(NotifyError::TooLong {
                field: "messageArguments",
                max: ARGS,
            });
        }
        for (k, v) in &raw.message_arguments {
            ident("messageArguments.key", k, ARG_KEY)?;
            if v.len() > ARG_VALUE {
                return Err(NotifyError::TooLong {
                    field: "messageArguments.value",
                    max: ARG_VALUE,
                });
            }
            no_controls("messageArguments.value", v)?;
        }
        if let Some(name) = super::required_args(&raw.notification_type)
            .iter()
            .find(|n| !raw.message_arguments.contains_key(**n))
        {
            return Err(NotifyError::MissingArgument {
                name,
                kind: raw.notification_type,
            });
        }
        if !cfg.categories.contains(&raw.category_type) {
            return Err(NotifyError::UnknownCategory {
                value: raw.category_type,
            });
        }
        if raw.created_time_msec <= 0
            || raw.created_time_msec > now_ms.saturating_add(cfg.max_future_skew_ms)
        {
            return Err(NotifyError::TimeOutOfRange {
                field: "createdTimeMsec",
            });
        }
        Ok(Self {
            owner: raw.owner,
            item_key: raw.item_key,
            service_type: raw.service_type,
            category_type: raw.category_type,
            notification_type: raw.notification_type,
            template_type: raw.template_type,
            event_id: raw.event_id,
            sender: Sender {
                id: raw.sender.id,
                name: raw.sender.name,
                avatar: raw.sender.avatar,
            },
            landing: raw.landing,
            message_arguments: raw.message_arguments,
            created_time_msec: raw.created_time_msec,
        })
    }

    /// Recipient.
    #[must_use]
    pub fn owner(&self) -> &str {
        &self.owner
    }
    /// Merge key.
    #[must_use]
    pub fn item_key(&self) -> &str {
        &self.item_key
    }
    /// Producer's event id (the dedup key).
    #[must_use]
    pub fn event_id(&self) -> &str {
        &self.event_id
    }
    /// Who acted.
    #[must_use]
    pub fn sender(&self) -> &Sender {
        &self.sender
    }
    /// Inbox category.
    #[must_use]
    pub fn category_type(&self) -> &str {
        &self.category_type
    }
    /// Event time in ms.
    #[must_use]
    pub fn created_time_msec(&self) -> i64 {
        self.created_time_msec
    }
}

/// Non-empty, bounded, no control characters: for ids and keys chosen by producers.
pub(crate) fn text(field: &'static str, v: &str, max: usize) -> Result<(), NotifyError> {
    if v.trim().is_empty() {
        return Err(NotifyError::Missing { field });
    }
    if v.len() > max {
        return Err(NotifyError::TooLong { field, max });
    }
    no_controls(field, v)
}

fn no_controls(field: &'static str, v: &str) -> Result<(), NotifyError> {
    if v.chars().any(char::is_control) {
        return Err(NotifyError::InvalidChars { field });
    }
    Ok(())
}

/// `[A-Za-z0-9_.-]+`: type names end up in template lookups and metrics labels.
pub(crate) fn ident(field: &'static str, v: &str, max: usize) -> Result<(), NotifyError> {
    text(field, v, max)?;
    if !v
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    {
        return Err(NotifyError::InvalidChars { field });
    }
    Ok(())
}

/// Bounded, no whitespace/controls; any scheme (apps use deep links).
fn url(field: &'static str, v: &str) -> Result<(), NotifyError> {
    text(field, v, limits::URL)?;
    if v.chars().any(char::is_whitespace) {
        return Err(NotifyError::InvalidChars { field });
    }
    Ok(())
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) const NOW: i64 = 1_700_000_000_000;

    #[test]
    fn event_time_is_an_integer_with_or_without_a_point() {
        let t = |json: &str| {
            serde_json::from_str::<NewEvent>(&format!("{{\"createdTimeMsec\":{json}}}"))
                .map(|e| e.created_time_msec)
        };
        assert_eq!(t("1352618932").unwrap(), 1_352_618_932);
        assert_eq!(t("1352618932.0").unwrap(), 1_352_618_932);
        assert_eq!(t("1e3").unwrap(), 1000);
        assert!(t("1.5").is_err());
        assert!(t("1e300").is_err());
        assert!(t("\"5\"").is_err());
    }

    pub(crate) fn raw(owner: &str, item: &str, sender: &str, event: &str) -> NewEvent {
        NewEvent {
            owner: owner.into(),
            item_key: item.into(),
            service_type: "feed".into(),
            category_type: "social".into(),
            notification_type: "like".into(),
            template_type: "default".into(),
            event_id: event.into(),
            sender: NewSender {
                id: sender.into(),
                name: format!("Name {sender}"),
                avatar: None,
            },
            landing: Some("app://post/1".into()),
            message_arguments: BTreeMap::new(),
            created_time_msec: NOW,
        }
    }

    #[test]
    fn valid_event_passes_and_json_field_names_match_the_api() {
        let json = r#"{"owner":"u1","itemKey":"post:1","serviceType":"feed","categoryType":"social",
            "notificationType":"like","templateType":"t1","eventId":"e1","sender":{"id":"s1","name":"Ana"},
            "messageArguments":{"post":"Hello"},"createdTimeMsec":1700000000000}"#;
        let raw: NewEvent = serde_json::from_str(json).unwrap();
        let ev = NotificationEvent::new(raw, &NotifyConfig::default(), NOW).unwrap();
        assert_eq!(ev.sender().name(), "Ana");
        assert_eq!(ev.item_key(), "post:1");
    }

    #[test]
    fn each_rule_reports_its_own_error() {
        let cfg = NotifyConfig::default();
        let check = |f: &dyn Fn(&mut NewEvent), code: &str| {
            let mut r = raw("u", "i", "s", "e");
            f(&mut r);
            assert_eq!(
                NotificationEvent::new(r, &cfg, NOW).unwrap_err().kind(),
                code
            );
        };
        check(&|r| r.owner.clear(), "missing");
        check(
            &|r| r.notification_type = "reply".into(),
            "missing_argument",
        );
        check(&|r| r.item_key = "x".repeat(257), "too_long");
        check(&|r| r.notification_type = "li ke".into(), "invalid_chars");
        check(&|r| r.sender.name = "a\u{0}b".into(), "invalid_chars");
        check(&|r| r.category_type = "nope".into(), "unknown_category");
        check(
            &|r| r.created_time_msec = NOW + 3_600_000,
            "time_out_of_range",
        );
        check(&|r| r.created_time_msec = 0, "time_out_of_range");
        check(&|r| r.landing = Some("a b".into()), "invalid_chars");
        check(
            &|r| r.message_arguments = (0..17).map(|i| (format!("k{i}"), "v".into())).collect(),
            "too_long",
        );
    }
}
