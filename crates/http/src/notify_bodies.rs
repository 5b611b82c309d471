//! The notification routes' answers as types: `notify_routes` builds them, and the OpenAPI
//! components are generated from them (`schemas`). A status word that one answer can carry is
//! an enum of one variant, so the document says exactly which word comes with which status.
//! Their variants carry plain comments: a doc comment per variant would turn the schema's
//! `enum` into a `oneOf` of `const`s.

use egn_core::notify::batch::Settled;
use egn_core::notify::dead_letters::DeadLetterView;
use egn_core::notify::service::{PreferencesView, Replayed};
use serde::Serialize;

/// The word of a 201.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CreatedWord {
    // A new item.
    Created,
}

/// `201`: one event made a new item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NewItem {
    /// `created`.
    pub status: CreatedWord,
    /// The item's id.
    pub notification_id: String,
}

/// What one event did when it made no new item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OneEventWord {
    // Merged into an existing item.
    Merged,
    // Already there (also: the sender was retracted after this event).
    AlreadyApplied,
    // A duplicate event id.
    Duplicate,
    // Muted by the recipient.
    Muted,
    // The recipient was erased after this event was created: dropped.
    Erased,
}

/// `200`: one event, merged, already applied, a duplicate or muted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct OneEvent {
    /// What it did.
    pub status: OneEventWord,
    /// The item's id, when it was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub notification_id: Option<String>,
}

/// The word of a batch written at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ProcessedWord {
    // Every event was written (or rightly skipped).
    Processed,
}

/// One event's result in a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct EventResult {
    /// What it did.
    pub status: Settled,
    /// The item's id, when it was applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[cfg_attr(not(target_arch = "wasm32"), schemars(with = "String"))]
    pub notification_id: Option<String>,
}

/// `200`: a batch without the queue, one result per event in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Processed {
    /// `processed`.
    pub status: ProcessedWord,
    /// In input order.
    pub results: Vec<EventResult>,
}

/// The word of a 202.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QueuedWord {
    // Enqueued.
    Queued,
}

/// `202`: every event was valid and is written by the queue consumer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Queued {
    /// `queued`.
    pub status: QueuedWord,
    /// How many events.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(range(min = 1)))]
    pub accepted: usize,
}

/// What a retraction did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RetractWord {
    // Other senders remain.
    Updated,
    // It was the last sender: the item is gone.
    Deleted,
    // No such item or sender.
    NotFound,
}

/// `200` of a retraction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct RetractResult {
    /// What it did.
    pub status: RetractWord,
}

/// Mark and bulk: how many items changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Updated {
    /// Items changed.
    pub updated: u64,
}

/// A deleted item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Deleted {
    /// Always `true`.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(transform = egn_core::notify::schema::always_true))]
    pub deleted: bool,
}

/// The indexes ensured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct Indexes {
    /// Index names.
    pub indexes: Vec<String>,
}

/// The oldest dead letters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct DeadLetters {
    /// How many are in `items`.
    pub count: usize,
    /// Oldest first.
    pub items: Vec<DeadLetterView>,
}

/// What a replay did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
pub struct ReplayResult {
    /// Letters sent back to the queue.
    pub replayed: usize,
    /// Letters removed after sending.
    pub removed: u64,
}

impl From<Replayed> for ReplayResult {
    fn from(r: Replayed) -> Self {
        Self {
            replayed: r.replayed,
            removed: r.removed,
        }
    }
}

/// The owner's preferences.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(not(target_arch = "wasm32"), derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(target_arch = "wasm32"), schemars(rename = "Preferences"))]
pub struct PreferencesBody {
    /// Muted inbox categories.
    #[cfg_attr(not(target_arch = "wasm32"), schemars(transform = category_items))]
    pub muted_categories: Vec<String>,
    /// Muted notification types.
    pub muted_types: Vec<String>,
    /// False without Redis: stored, but not applied to new events.
    pub enforced: bool,
}

/// The configured categories (the defaults; a deployment's own list is in its configuration).
#[cfg(not(target_arch = "wasm32"))]
fn category_items(s: &mut schemars::Schema) {
    let categories = egn_core::notify::NotifyConfig::default().categories;
    s.insert(
        "items".into(),
        serde_json::json!({ "type": "string", "enum": categories }),
    );
}

impl From<&PreferencesView> for PreferencesBody {
    fn from(v: &PreferencesView) -> Self {
        Self {
            muted_categories: v.preferences.muted_categories.clone(),
            muted_types: v.preferences.muted_types.clone(),
            enforced: v.enforced,
        }
    }
}
