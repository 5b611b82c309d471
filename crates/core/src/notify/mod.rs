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
pub mod delivery;
pub mod document;
pub mod erasure;
mod error;
mod event;
pub mod expiry;
pub mod fence;
pub mod hub;
pub(crate) mod limits;
pub mod preferences;
pub mod privacy;
mod query;
mod render;
pub mod roster;
mod rules;
#[cfg(not(target_arch = "wasm32"))]
pub mod schema;
pub mod senders;
pub mod service;
pub mod store;
mod template;

pub use error::NotifyError;
pub use event::{integer, NewEvent, NewSender, NotificationEvent, Retraction, Sender};
pub use preferences::Preferences;

#[cfg(test)]
mod collection_tests {
    #[test]
    fn every_collection_is_named_after_the_items() {
        let cfg = super::NotifyConfig {
            collection: "inbox".into(),
            ..super::NotifyConfig::default()
        };
        assert_eq!(
            cfg.collections().all(),
            [
                "inbox",
                "inbox_dead",
                "inbox_preferences",
                "inbox_erasures",
                "inbox_senders"
            ]
        );
    }
}
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
pub use store::{Changes, Counts, GuardedCreate, Housekeeping, NotificationStore, Page};
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
    /// How long a dead letter is kept (a TTL index removes it): a letter is an event that may
    /// still be replayed, so this bounds how late an old event can arrive.
    pub dead_letter_retention_ms: i64,
    /// How long an erasure's fence holds (see [`fence`]): the queue's longest retention (14 days
    /// on Cloudflare Queues; retries happen inside it) plus the dead-letter retention.
    pub erasure_fence_ms: i64,
}

/// Every Data API collection the worker reads or writes, all named after
/// [`NotifyConfig::collection`]: the one list behind what `check-config` prints, the gateway's
/// `GATEWAY_COLLECTIONS` and its database role (docs/mongodb-gateway.md, checked by
/// tests/docs.rs). A collection missing there answers every call that touches it with 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collections {
    /// The inbox items and their tombstones.
    pub items: String,
    /// Queued events that failed every attempt ([`dead_letters`]).
    pub dead_letters: String,
    /// Each owner's muted categories and types ([`preferences`]).
    pub preferences: String,
    /// Erasure jobs and the fences they leave ([`erasure`], [`fence`]).
    pub erasures: String,
    /// The reverse index of senders to the items they are on ([`senders`]): how a sender's
    /// erasure finds them.
    pub senders: String,
}

impl Collections {
    /// Every name, in a fixed order (items first).
    #[must_use]
    pub fn all(&self) -> Vec<&str> {
        vec![
            &self.items,
            &self.dead_letters,
            &self.preferences,
            &self.erasures,
            &self.senders,
        ]
    }
}

impl NotifyConfig {
    /// The collections of this configuration.
    #[must_use]
    pub fn collections(&self) -> Collections {
        let c = &self.collection;
        Collections {
            items: c.clone(),
            dead_letters: format!("{c}_dead"),
            preferences: format!("{c}_preferences"),
            erasures: format!("{c}_erasures"),
            senders: format!("{c}_senders"),
        }
    }
}

const DAY_MS: i64 = 24 * 3_600_000;
/// The longest a Cloudflare Queue keeps a message (its retries included): 14 days.
pub const QUEUE_RETENTION_MS: i64 = 14 * DAY_MS;

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
            dead_letter_retention_ms: 14 * DAY_MS,
            erasure_fence_ms: QUEUE_RETENTION_MS + 14 * DAY_MS,
        }
    }
}
