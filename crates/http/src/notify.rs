//! Request parsing and error mapping for `/v1/notifications…` (platform-free).

use super::error::ApiError;
use crate::ErrorCode;
use egn_core::backend::HttpClient;
use egn_core::notify::{
    Bulk, ChangesView, Counts, EventsInput, Flag, ListParams, NewEvent, NotificationStore,
    PageView, Retraction, MAX_PAGE,
};
use serde::{Deserialize, Deserializer};

/// [`present`] for an integer (`5` or `5.0`, as the document's `"type": "integer"` allows).
fn present_integer<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u32>, D::Error> {
    egn_core::notify::integer(d).map(Some)
}

/// An optional field that, when present, must be a `T`: absent is `None`, but `null` is refused
/// (`invalid_json`) because the document does not allow it (a plain `Option` would take it).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<T>, D::Error> {
    T::deserialize(d).map(Some)
}

/// A wire name as the enum `T` spells it (its serde names), or the name back so the error can
/// say it: an unknown name has its own code and message, a plain enum field would make it
/// `invalid_json`. (Lighter in the wasm than an untagged enum, which buffers the value.)
fn known<'a, T: Deserialize<'a>>(name: &'a str) -> Result<T, &'a str> {
    use serde::de::value::{Error, StrDeserializer};
    T::deserialize(StrDeserializer::<Error>::new(name)).map_err(|_| name)
}

/// Parses the JSON body of a notification event.
///
/// # Errors
/// `invalid_json` (400) when the body is not the event shape.
pub fn parse_event(body: &[u8]) -> Result<NewEvent, ApiError> {
    if body.len() > 64 * 1024 {
        return Err(ApiError::new(
            ErrorCode::PayloadTooLarge,
            "an event is at most 64 KiB",
        ));
    }
    super::from_object(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("event: {e}")))
}

/// A batch: 1–100 events.
#[derive(Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct ManyBody {
    #[cfg_attr(not(target_arch = "wasm32"), schemars(length(min = 1, max = 100)))]
    events: Vec<NewEvent>,
}

/// A fan-out: one event to 1–10 000 owners.
#[derive(Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub(crate) struct FanOutBody {
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "event_template_ref")
    )]
    template: NewEvent,
    #[cfg_attr(not(target_arch = "wasm32"), schemars(schema_with = "owners"))]
    owners: Vec<String>,
}

/// The events body as the document states it. [`parse_events_body`] picks the form by its
/// keys (`events`, `template`/`owners`, else one event), so no value reads as two of them.
#[cfg(not(target_arch = "wasm32"))]
#[derive(schemars::JsonSchema)]
#[serde(untagged)]
#[schemars(transform = egn_core::notify::schema::one_of)]
#[allow(dead_code)] // a schema only
pub(crate) enum EventsBody {
    One(NewEvent),
    Many(ManyBody),
    FanOut(FanOutBody),
}

fn count_ok(n: usize, max: usize, what: &str) -> Result<(), ApiError> {
    if n == 0 {
        return Err(ApiError::new(
            ErrorCode::EmptyBatch,
            format!("{what} is empty"),
        ));
    }
    if n > max {
        return Err(ApiError::new(
            ErrorCode::BatchTooLarge,
            format!("{what} holds {n}; at most {max}"),
        ));
    }
    Ok(())
}

/// Parses any form of the events body: a top-level `events` key is a batch, `template` or
/// `owners` a fan-out, anything else one event.
///
/// # Errors
/// `invalid_json`, `empty_batch`, `batch_too_large` (400); 413 for a single event over 64 KiB.
pub fn parse_events_body(body: &[u8]) -> Result<EventsInput, ApiError> {
    let v: serde_json::Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("events: {e}")))?;
    let has = |k: &str| v.get(k).is_some();
    if has("events") {
        let b: ManyBody = serde_json::from_value(v)
            .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("events: {e}")))?;
        count_ok(
            b.events.len(),
            egn_core::notify::batch::MAX_EVENTS,
            "events",
        )?;
        return Ok(EventsInput::Many(b.events));
    }
    if has("template") || has("owners") {
        let b: FanOutBody = serde_json::from_value(v)
            .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("fan-out: {e}")))?;
        count_ok(
            b.owners.len(),
            egn_core::notify::batch::MAX_FAN_OUT,
            "owners",
        )?;
        if !b.template.owner.is_empty() {
            return Err(ApiError::new(
                ErrorCode::InvalidJson,
                "fan-out: the template has no owner (owners lists them)",
            ));
        }
        return Ok(EventsInput::FanOut {
            template: b.template,
            owners: b.owners,
        });
    }
    Ok(EventsInput::One(parse_event(body)?))
}

/// Body of a dead-letter replay: which letters (by id), or the oldest `limit` (default 100).
#[derive(Debug, Default, Deserialize, PartialEq, Eq)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = egn_core::notify::schema::no_null_defaults))]
pub struct ReplayBody {
    /// Letters to replay; absent = the oldest.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(with = "Vec<String>", length(min = 1, max = 100))
    )]
    pub ids: Option<Vec<String>>,
    /// How many (1..=100).
    #[serde(default, deserialize_with = "present_integer")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(with = "u32", range(min = 1, max = 100))
    )]
    pub limit: Option<u32>,
}

/// Parses a replay body (empty = the oldest 100).
///
/// # Errors
/// `invalid_json`, `invalid_parameter` (400).
pub fn parse_replay(body: &[u8]) -> Result<ReplayBody, ApiError> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(ReplayBody::default());
    }
    let r: ReplayBody = super::from_object(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("replay: {e}")))?;
    if r.limit.is_some_and(|l| !(1..=MAX_PAGE).contains(&l))
        || r.ids
            .as_ref()
            .is_some_and(|i| i.is_empty() || i.len() > MAX_PAGE as usize)
    {
        return Err(ApiError::new(
            ErrorCode::InvalidParameter,
            format!("limit and the number of ids are 1..={MAX_PAGE}"),
        ));
    }
    Ok(r)
}

/// `limit` of the dead-letter list (1..=100, default 100).
///
/// # Errors
/// `invalid_parameter` (400).
pub fn parse_dead_letter_limit(query: &str) -> Result<u32, ApiError> {
    super::query::param(query, "limit").map_or(Ok(MAX_PAGE), |v| parse_limit(&v))
}

/// Parses a retraction body.
///
/// # Errors
/// `invalid_json` (400).
pub fn parse_retraction(body: &[u8]) -> Result<Retraction, ApiError> {
    super::from_object(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("retraction: {e}")))
}

/// Body of a state change: `{"itemKey": "…"}` or `{"all": true}`, a flag and its value.
#[derive(Debug, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = one_target))]
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = egn_core::notify::schema::no_null_defaults))]
pub struct MarkBody {
    /// One item…
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(
        not(target_arch = "wasm32"),
        schemars(schema_with = "egn_core::notify::schema::item_key")
    )]
    pub item_key: Option<String>,
    /// …or all of the owner's items.
    #[serde(default)]
    pub all: bool,
    /// `read`, `seen` or `archived`.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(extend("enum" = ["read", "seen", "archived"])))]
    flag: String,
    /// New value (default true).
    #[serde(default = "yes")]
    pub value: bool,
}

fn yes() -> bool {
    true
}

/// Parses and checks a state change.
///
/// # Errors
/// `invalid_json`, `invalid_flag`, `invalid_target` (400).
pub fn parse_mark(body: &[u8]) -> Result<(MarkBody, Flag), ApiError> {
    let m: MarkBody = super::from_object(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("mark: {e}")))?;
    let flag = match known::<Flag>(&m.flag) {
        Ok(f) => f,
        Err(other) => {
            return Err(ApiError::new(
                ErrorCode::InvalidFlag,
                format!("flag {other:?}: use read, seen or archived"),
            ))
        }
    };
    if m.all == m.item_key.is_some() {
        return Err(ApiError::new(
            ErrorCode::InvalidTarget,
            "give exactly one of itemKey or all: true",
        ));
    }
    Ok((m, flag))
}

fn parse_limit(v: &str) -> Result<u32, ApiError> {
    v.parse()
        .ok()
        .filter(|n| (1..=MAX_PAGE).contains(n))
        .ok_or_else(|| {
            ApiError::new(
                ErrorCode::InvalidParameter,
                format!("limit must be 1..={MAX_PAGE}"),
            )
        })
}

fn bool_param(name: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::new(
            ErrorCode::InvalidParameter,
            format!("{name} must be true or false"),
        )),
    }
}

/// Parses list parameters: `limit` (1–100), `cursor`, `category`, `unread`, `archived`, and
/// `counts` (default true: the badge counts come with the page).
///
/// # Errors
/// `invalid_parameter` (400) for a bad limit or boolean.
pub fn parse_list(query: &str) -> Result<(ListParams, bool), ApiError> {
    let mut p = ListParams {
        limit: 20,
        ..ListParams::default()
    };
    let mut counts = true;
    for (k, v) in super::query::pairs(query) {
        match k.as_ref() {
            "limit" => p.limit = parse_limit(&v)?,
            "cursor" => p.cursor = Some(v.into_owned()),
            "category" => p.category = Some(v.into_owned()),
            "unread" => p.unread_only = bool_param("unread", &v)?,
            "archived" => p.archived = bool_param("archived", &v)?,
            "counts" => counts = bool_param("counts", &v)?,
            _ => {}
        }
    }
    Ok((p, counts))
}

/// Parses `since` (a `sync` position from a list or an earlier `changes` answer; absent = the
/// whole feed) and `limit`.
///
/// # Errors
/// `invalid_parameter` (400).
pub fn parse_changes(query: &str) -> Result<(Option<String>, u32), ApiError> {
    let mut since = None;
    let mut limit = MAX_PAGE;
    for (k, v) in super::query::pairs(query) {
        match k.as_ref() {
            "since" if !v.is_empty() => since = Some(v.into_owned()),
            "limit" => limit = parse_limit(&v)?,
            _ => {}
        }
    }
    Ok((since, limit))
}

/// Body of a bulk action.
#[derive(Debug, Deserialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(transform = egn_core::notify::schema::no_null_defaults))]
pub(crate) struct BulkBody {
    /// `read`, `seen`, `archiveRead` or `delete`.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(extend("enum" = ["read", "seen", "archiveRead", "delete"])))]
    action: String,
    /// Only this `categoryType`.
    #[serde(default, deserialize_with = "present")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    category: Option<String>,
}

/// Parses `{"action": "read"|"seen"|"archiveRead"|"delete", "category"?}`.
///
/// # Errors
/// `invalid_json`, `invalid_action` (400).
pub fn parse_bulk(body: &[u8]) -> Result<(Bulk, Option<String>), ApiError> {
    let b: BulkBody = super::from_object(body)
        .map_err(|e| ApiError::new(ErrorCode::InvalidJson, format!("bulk: {e}")))?;
    let action = match known::<Bulk>(&b.action) {
        Ok(a) => a,
        Err(other) => {
            return Err(ApiError::new(
                ErrorCode::InvalidAction,
                format!("action {other:?}: use read, seen, archiveRead or delete"),
            ))
        }
    };
    Ok((action, b.category))
}

/// Optional `category` of the unread-count route.
pub fn parse_category(query: &str) -> Option<String> {
    super::query::param(query, "category")
}

#[cfg(not(target_arch = "wasm32"))]
/// `template` of a fan-out.
pub(crate) fn event_template_ref(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "$ref": "#/components/schemas/EventTemplate" })
}

#[cfg(not(target_arch = "wasm32"))]
/// `owners` of a fan-out: 1–10 000 owner ids.
pub(crate) fn owners(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let max = egn_core::notify::batch::MAX_FAN_OUT;
    schemars::json_schema!({ "type": "array", "minItems": 1, "maxItems": max, "items": egn_core::notify::schema::id(g) })
}

#[cfg(not(target_arch = "wasm32"))]
/// A state change names exactly one target: `itemKey`, or `all: true`.
pub(crate) fn one_target(s: &mut schemars::Schema) {
    s.insert(
        "oneOf".into(),
        serde_json::json!([
            { "required": ["itemKey"], "properties": { "all": { "const": false } } },
            { "required": ["all"], "properties": { "all": { "const": true } }, "not": { "required": ["itemKey"] } },
        ]),
    );
}

/// `GET /v1/notifications`. `store` is the configured store or why there is none: the query is
/// checked first, so a bad one answers 400 whatever the configuration.
///
/// # Errors
/// As [`parse_list`], and the store's.
pub async fn get_list<H: HttpClient>(
    store: Result<NotificationStore<H>, ApiError>,
    owner: &str,
    query: &str,
    now_ms: i64,
) -> Result<PageView, ApiError> {
    let (params, with_counts) = parse_list(query)?;
    let page = store?.list(owner, &params, with_counts, now_ms).await?;
    Ok(PageView::of(&page))
}

/// `GET /v1/notifications/unread-count` (of one category with `category=`).
///
/// # Errors
/// The store's.
pub async fn get_unread_count<H: HttpClient>(
    store: Result<NotificationStore<H>, ApiError>,
    owner: &str,
    query: &str,
    now_ms: i64,
) -> Result<Counts, ApiError> {
    let category = parse_category(query);
    Ok(store?.counts(owner, category.as_deref(), now_ms).await?)
}

/// `GET /v1/notifications/changes`: the query is checked before the store (as [`get_list`]).
///
/// # Errors
/// As [`parse_changes`], and the store's.
pub async fn get_changes<H: HttpClient>(
    store: Result<NotificationStore<H>, ApiError>,
    owner: &str,
    query: &str,
    now_ms: i64,
) -> Result<ChangesView, ApiError> {
    let (since, limit) = parse_changes(query)?;
    let page = store?
        .changes(owner, since.as_deref(), limit, now_ms)
        .await?;
    Ok(ChangesView::of(&page, now_ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use egn_core::backend::native::block_on;
    use egn_core::backend::{DataApiClient, HttpRequest, HttpResponse, TransportError};
    use egn_core::config::{Config, Vars};
    use std::cell::Cell;

    /// A Data API that is down; counts the requests it got.
    struct Down(Cell<usize>);

    impl HttpClient for &Down {
        async fn send(&self, _: HttpRequest) -> Result<HttpResponse, TransportError> {
            self.0.set(self.0.get() + 1);
            Err(TransportError {
                timed_out: false,
                message: "connection refused".into(),
            })
        }
    }

    fn store(down: &Down) -> NotificationStore<&Down> {
        let get = |n: &str| {
            let v = match n {
                "ENVIRONMENT" => "development",
                "DATA_API_URL" => "http://127.0.0.1:1",
                "DATA_API_KEY" => "k",
                _ => return None,
            };
            Some(v.to_owned())
        };
        let cfg = Config::from_vars(&Vars::new(&get)).unwrap();
        NotificationStore::new(
            DataApiClient::new(down, cfg.data_api.clone().unwrap()),
            cfg.notify.clone(),
        )
    }

    #[test]
    fn reads_check_their_query_before_the_store_and_map_its_failure() {
        let down = Down(Cell::new(0));
        let st = || Ok(store(&down));
        let code = |e: ApiError| (e.code, down.0.get());
        let e = block_on(get_list(st(), "u1", "limit=abc", 0)).unwrap_err();
        assert_eq!(code(e), (ErrorCode::InvalidParameter, 0));
        let e = block_on(get_changes(st(), "u1", "limit=0", 0)).unwrap_err();
        assert_eq!(code(e), (ErrorCode::InvalidParameter, 0));
        // A good query reaches the store, whose failure answers as the one mapping says.
        let e = block_on(get_list(st(), "u1", "limit=5", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::BackendUnavailable);
        assert!(down.0.get() > 0);
        let before = down.0.get();
        let e = block_on(get_unread_count(st(), "u1", "category=social", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::BackendUnavailable);
        let e = block_on(get_changes(st(), "u1", "", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::BackendUnavailable);
        assert!(down.0.get() >= before + 2);
    }

    #[test]
    fn without_a_store_a_bad_query_still_answers_400() {
        let none = || Err::<NotificationStore<&Down>, _>(ApiError::not_configured("the Data API"));
        let e = block_on(get_list(none(), "u1", "unread=maybe", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParameter);
        let e = block_on(get_list(none(), "u1", "", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::NotConfigured);
        let e = block_on(get_changes(none(), "u1", "limit=x", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidParameter);
        let e = block_on(get_unread_count(none(), "u1", "", 0)).unwrap_err();
        assert_eq!(e.code, ErrorCode::NotConfigured);
    }

    #[test]
    fn list_params() {
        let (p, counts) = parse_list("limit=5&unread=true&category=social&counts=false").unwrap();
        assert!(!counts);
        assert_eq!(
            (p.limit, p.unread_only, p.category.as_deref()),
            (5, true, Some("social"))
        );
        assert_eq!(parse_list("limit=0").unwrap_err().code, "invalid_parameter");
        assert_eq!(
            parse_list("limit=101").unwrap_err().code,
            "invalid_parameter"
        );
        assert_eq!(
            parse_list("unread=maybe").unwrap_err().code,
            "invalid_parameter"
        );
        assert_eq!(parse_changes("limit=3").unwrap(), (None, 3));
        assert_eq!(
            parse_changes("since=WzEsIiJd&limit=3").unwrap(),
            (Some("WzEsIiJd".into()), 3)
        );
        assert_eq!(
            parse_bulk(br#"{"action":"archiveRead","category":"social"}"#).unwrap(),
            (Bulk::ArchiveRead, Some("social".into()))
        );
        assert_eq!(
            parse_bulk(br#"{"action":"nuke"}"#).unwrap_err().code,
            "invalid_action"
        );
        // The document does not allow null (absent is the whole inbox).
        assert_eq!(
            parse_bulk(br#"{"action":"read","category":null}"#)
                .unwrap_err()
                .code,
            "invalid_json"
        );
        assert_eq!(
            parse_bulk(br#"{"action":"read"}"#).unwrap(),
            (Bulk::Read, None)
        );
    }

    #[test]
    fn mark_bodies() {
        assert!(parse_mark(br#"{"itemKey":"a","flag":"read"}"#).is_ok());
        assert_eq!(
            parse_mark(br#"{"all":true,"flag":"nope"}"#)
                .unwrap_err()
                .code,
            "invalid_flag"
        );
        assert_eq!(
            parse_mark(br#"{"all":true,"itemKey":"a","flag":"read"}"#)
                .unwrap_err()
                .code,
            "invalid_target"
        );
        assert_eq!(
            parse_mark(br#"{"flag":"read"}"#).unwrap_err().code,
            "invalid_target"
        );
        let nope = parse_mark(br#"{"all":true,"flag":"nope"}"#).unwrap_err();
        assert_eq!(nope.message, "flag \"nope\": use read, seen or archived");
        assert_eq!(
            parse_mark(br#"{"all":true,"flag":"archived","value":false}"#)
                .unwrap()
                .1,
            Flag::Archived
        );
        assert_eq!(
            parse_mark(br#"{"itemKey":null,"all":true,"flag":"read"}"#)
                .unwrap_err()
                .code,
            "invalid_json"
        );
        assert_eq!(
            parse_replay(br#"{"limit":null}"#).unwrap_err().code,
            "invalid_json"
        );
        assert_eq!(parse_replay(br#"{"limit":95.0}"#).unwrap().limit, Some(95));
        assert_eq!(
            parse_replay(br#"{"limit":9.5}"#).unwrap_err().code,
            "invalid_json"
        );
    }
}
