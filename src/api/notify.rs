//! Request parsing and error mapping for `/v1/notifications…` (platform-free).

use super::error::ApiError;
use crate::api::ErrorCode;
use crate::backend::BackendError;
use crate::notify::{Bulk, Flag, ListParams, NewEvent, NotifyError, MAX_PAGE};
use serde::Deserialize;

/// Maps the notification core's errors onto HTTP: validation → 400/422, backend → 503.
pub fn notify_error(e: NotifyError) -> ApiError {
    match &e {
        NotifyError::Backend(BackendError::Rejected { .. } | BackendError::Decode(_)) => {
            // The backend refused a request we built: our bug or a misconfiguration, not the client's.
            ApiError::new(502, e.code(), e.to_string())
        }
        NotifyError::Backend(_) => ApiError::unavailable(e.code(), e.to_string()),
        NotifyError::InvalidCursor => ApiError::bad_request(e.code(), e.to_string()),
        _ => ApiError::new(422, e.code(), e.to_string()),
    }
}

/// Parses the JSON body of a notification event.
///
/// # Errors
/// `invalid_json` (400) when the body is not the event shape.
pub fn parse_event(body: &[u8]) -> Result<NewEvent, ApiError> {
    if body.len() > 64 * 1024 {
        return Err(ApiError::new(
            413,
            ErrorCode::PayloadTooLarge,
            "an event is at most 64 KiB",
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidJson, format!("event: {e}")))
}

/// Body of a retraction.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Retraction {
    /// Owner of the item.
    pub owner: String,
    /// The merged item.
    pub item_key: String,
    /// The sender whose origin is removed.
    pub sender_id: String,
}

/// Parses a retraction body.
///
/// # Errors
/// `invalid_json` (400).
pub fn parse_retraction(body: &[u8]) -> Result<Retraction, ApiError> {
    serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidJson, format!("retraction: {e}")))
}

/// Body of a state change: `{"itemKey": "…"}` or `{"all": true}`, a flag and its value.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MarkBody {
    /// One item…
    pub item_key: Option<String>,
    /// …or all of the owner's items.
    #[serde(default)]
    pub all: bool,
    /// `read`, `seen` or `archived`.
    pub flag: String,
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
    let m: MarkBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidJson, format!("mark: {e}")))?;
    let flag = match m.flag.as_str() {
        "read" => Flag::Read,
        "seen" => Flag::Seen,
        "archived" => Flag::Archived,
        other => {
            return Err(ApiError::bad_request(
                ErrorCode::InvalidFlag,
                format!("flag {other:?}: use read, seen or archived"),
            ))
        }
    };
    if m.all == m.item_key.is_some() {
        return Err(ApiError::bad_request(
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
            ApiError::bad_request(
                ErrorCode::InvalidParameter,
                format!("limit must be 1..={MAX_PAGE}"),
            )
        })
}

fn bool_param(name: &str, v: &str) -> Result<bool, ApiError> {
    match v {
        "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::bad_request(
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
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct BulkBody {
    action: String,
    category: Option<String>,
}

/// Parses `{"action": "read"|"seen"|"archiveRead"|"delete", "category"?}`.
///
/// # Errors
/// `invalid_json`, `invalid_action` (400).
pub fn parse_bulk(body: &[u8]) -> Result<(Bulk, Option<String>), ApiError> {
    let b: BulkBody = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(ErrorCode::InvalidJson, format!("bulk: {e}")))?;
    let action = match b.action.as_str() {
        "read" => Bulk::Read,
        "seen" => Bulk::Seen,
        "archiveRead" => Bulk::ArchiveRead,
        "delete" => Bulk::Delete,
        other => {
            return Err(ApiError::bad_request(
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

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
