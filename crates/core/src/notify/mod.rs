//! Notification center core: the event model, merge/retract rules and Data API request builders.
//!
//! Everything but [`store`] is pure: functions return filters/updates/pipelines as JSON for the
//! Data API, so the rules are unit-tested without a server. Shape (seeds §1, compacted per its
//! lesson 1 — big documents shorten oplog retention):
//!
//! ```text
//! { _id: notificationId, owner, itemKey, serviceType, categoryType, notificationType, templateType,
//!   createdTime: Date, expireAt: Date, purgeAt: Date, revision: i64, sync: Date,
//!   originsCount: i32, oc?: i64,                       // oc: the roster's tally (roster)
//!   origins: [ { s: senderId, n: name, a?: avatar, t: createdTimeMsec, l?: landing, e: eventId } ],
//!   x?: [ { s: senderId, t: retractedAtMsec } ],          // retracted senders, capped
//!   read, seen, archived, deleted, landing?, messageArguments? }
//! ```
//! `revision` orders the list (write clock, so a late event still lands on top); `sync` is
//! stamped by the database on *every* change, including flags and deletions, and drives the
//! change feed. A deleted item becomes a tombstone (`deleted: true`) until `purgeAt`.
//! `_id` *is* the notification id (a hash of owner+itemKey), so it is not stored twice.

pub mod badge;
pub mod batch;
pub mod dead_letters;
pub mod document;
mod error;
mod event;
pub mod expiry;
pub(crate) mod limits;
pub mod preferences;
mod query;
mod render;
pub mod roster;
mod rules;
#[cfg(not(target_arch = "wasm32"))]
pub mod schema;
pub mod service;
pub mod store;
mod template;

pub use error::NotifyError;
pub use event::{integer, NewEvent, NewSender, NotificationEvent, Retraction, Sender};
pub use preferences::Preferences;
pub use query::{
    bulk, changes, counts_pipeline, decode_cursor, delete_one, encode_cursor, expired_batch,
    expired_delete, indexes, list_pipeline, list_query, mark, next_sync, owners_over_cap,
    tombstone_update, trim_owner_cutoff, trim_owner_delete, Bulk, Cursor, FindQuery, Flag,
    ListParams, MarkQuery, Target, MAX_PAGE, MIN_SETTLE_MS,
};
pub use render::{
    change_view, summary, view, ChangeEntry, ChangesView, NotificationView, OriginView, PageView,
    Tombstone,
};
pub use rules::{
    classify_create_result, create_upsert, notification_id, retract_delete, retract_update,
    revision, CreateOutcome, CreateStep, RetractOutcome,
};
pub use service::{
    Created, Deferred, EventsInput, EventsOutcome, NotifyService, PreferencesView, Replayed,
    Written,
};
pub use store::{Changes, Counts, Housekeeping, NotificationStore, Page};
pub use template::{check_templates, required_args, TemplateError};

/// Tunables of the notification center.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotifyConfig {
    /// Data API collection.
    pub collection: String,
    /// Allowed `categoryType` values (the inboxes: home, social, creator studio…).
    pub categories: Vec<String>,
    /// Origins kept per document (newest by event time); `originsCount` still counts all.
    pub origins_cap: u32,
    /// Time to live after the newest origin's event time.
    pub ttl_ms: i64,
    /// Origins returned per item by list queries (rendering needs the first one or two).
    pub list_origins: u32,
    /// How far in the future an event's `createdTimeMsec` may be (clock skew).
    pub max_future_skew_ms: i64,
    /// How long a deleted item's tombstone stays for the change feed (and keeps refusing
    /// delayed creates of retracted senders).
    pub tombstone_ttl_ms: i64,
    /// Retracted senders remembered per item (newest by retraction time).
    pub retracted_cap: u32,
    /// How long the sender roster of an item its document can rebuild (see [`roster`]) is
    /// kept without a change; 0 keeps every roster as long as its item.
    pub roster_idle_ms: i64,
    /// How far behind "now" a change-feed position is held (clock skew and commit order between
    /// the worker and the database); changes inside it may be delivered twice, never missed.
    /// Never less than [`MIN_SETTLE_MS`] in effect, whatever is configured.
    pub sync_settle_ms: i64,
}

impl Default for NotifyConfig {
    fn default() -> Self {
        Self {
            collection: "notifications".into(),
            categories: ["home", "social", "creator", "system"]
                .map(String::from)
                .to_vec(),
            origins_cap: 100,
            ttl_ms: 30 * 24 * 3_600_000,
            list_origins: 3,
            max_future_skew_ms: 5 * 60_000,
            tombstone_ttl_ms: 7 * 24 * 3_600_000,
            retracted_cap: 20,
            roster_idle_ms: 24 * 3_600_000,
            sync_settle_ms: 2_000,
        }
    }
}
