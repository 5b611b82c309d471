//! The notification module's single error type.

use super::batch::QueueError;
use crate::backend::BackendError;

/// Validation and backend failures of the notification center. The HTTP layer alone maps each
/// to a status and a stable code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    /// A required field is empty or absent.
    #[error("`{field}` is required")]
    Missing {
        /// Field name as in the API (`owner`, `sender.id`, …).
        field: &'static str,
    },
    /// The type's template names a message argument the event lacks.
    #[error("`messageArguments.{name}` is required by the `{kind}` template")]
    MissingArgument {
        /// Argument name.
        name: &'static str,
        /// The event's `notificationType`.
        kind: String,
    },
    /// A field exceeds its size limit.
    #[error("`{field}` exceeds {max}")]
    TooLong {
        /// Field name.
        field: &'static str,
        /// Limit (bytes, or entries for maps).
        max: usize,
    },
    /// A field holds characters it may not (control characters, or outside an identifier set).
    #[error("`{field}` contains invalid characters")]
    InvalidChars {
        /// Field name.
        field: &'static str,
    },
    /// `categoryType` is not one of the configured categories.
    #[error("unknown categoryType `{value}`")]
    UnknownCategory {
        /// The rejected value.
        value: String,
    },
    /// A time is before 1970 or too far in the future.
    #[error("`{field}` is out of range")]
    TimeOutOfRange {
        /// Field name.
        field: &'static str,
    },
    /// A write aimed at one item the owner does not have (never created, deleted, or purged).
    #[error("no such notification")]
    ItemNotFound,
    /// A list cursor that this server did not issue.
    #[error("invalid cursor")]
    InvalidCursor,
    /// Events of a batch failed validation (index, why; in input order): none was accepted.
    #[error("{} event(s) invalid; none was accepted", .0.len())]
    InvalidEvents(Vec<(usize, NotifyError)>),
    /// More events than a direct write takes, and no queue.
    #[error(
        "{events} events: more than {max} need the queue (NOTIFY_QUEUE), which is not configured"
    )]
    QueueRequired {
        /// Events in the request.
        events: usize,
        /// The most a direct write takes.
        max: usize,
    },
    /// The operation needs the queue, which is not configured.
    #[error("the queue (NOTIFY_QUEUE) is not configured")]
    QueueNotConfigured,
    /// The queue refused or could not be reached.
    #[error(transparent)]
    Queue(#[from] QueueError),
    /// Part of a batch was written and committed; a retry of the whole body writes the rest.
    #[error("batch partly written, retry it: {0}")]
    PartlyWritten(String),
    /// Preferences were stored but the Redis mirror that enforces them was not updated.
    #[error("saved, but not yet in effect (retry the request): {0}")]
    NotYetInEffect(BackendError),
    /// The badge hub (its Durable Object) could not be cleared; retryable.
    #[error("badge hub: {0}")]
    Hub(String),
    /// No erasure job has this id.
    #[error("no such erasure")]
    ErasureNotFound,
    /// The Data API failed.
    #[error(transparent)]
    Backend(#[from] BackendError),
}

#[cfg(test)]
impl NotifyError {
    /// The variant's name, for the core's own tests (the wire codes belong to the HTTP layer).
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Self::Missing { .. } => "missing",
            Self::MissingArgument { .. } => "missing_argument",
            Self::TooLong { .. } => "too_long",
            Self::InvalidChars { .. } => "invalid_chars",
            Self::UnknownCategory { .. } => "unknown_category",
            Self::TimeOutOfRange { .. } => "time_out_of_range",
            _ => "other",
        }
    }
}
