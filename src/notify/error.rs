//! The notification module's single error type.

use std::fmt;

use crate::backend::BackendError;

/// Validation and backend failures of the notification center.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotifyError {
    /// A required field is empty or absent.
    Missing {
        /// Field name as in the API (`owner`, `sender.id`, …).
        field: &'static str,
    },
    /// The type's template names a message argument the event lacks.
    MissingArgument {
        /// Argument name.
        name: &'static str,
        /// The event's `notificationType`.
        kind: String,
    },
    /// A field exceeds its size limit.
    TooLong {
        /// Field name.
        field: &'static str,
        /// Limit (bytes, or entries for maps).
        max: usize,
    },
    /// A field holds characters it may not (control characters, or outside an identifier set).
    InvalidChars {
        /// Field name.
        field: &'static str,
    },
    /// `categoryType` is not one of the configured categories.
    UnknownCategory {
        /// The rejected value.
        value: String,
    },
    /// A time is before 1970 or too far in the future.
    TimeOutOfRange {
        /// Field name.
        field: &'static str,
    },
    /// A list cursor that this server did not issue.
    InvalidCursor,
    /// The Data API failed.
    Backend(BackendError),
}

impl NotifyError {
    /// True for errors caused by the request (HTTP 4xx), false for backend trouble.
    #[must_use]
    pub fn is_client_error(&self) -> bool {
        !matches!(self, Self::Backend(_))
    }
}

impl fmt::Display for NotifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing { field } => write!(f, "`{field}` is required"),
            Self::MissingArgument { name, kind } => write!(
                f,
                "`messageArguments.{name}` is required by the `{kind}` template"
            ),
            Self::TooLong { field, max } => write!(f, "`{field}` exceeds {max}"),
            Self::InvalidChars { field } => write!(f, "`{field}` contains invalid characters"),
            Self::UnknownCategory { value } => write!(f, "unknown categoryType `{value}`"),
            Self::TimeOutOfRange { field } => write!(f, "`{field}` is out of range"),
            Self::InvalidCursor => f.write_str("invalid cursor"),
            Self::Backend(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for NotifyError {}

impl From<BackendError> for NotifyError {
    fn from(e: BackendError) -> Self {
        Self::Backend(e)
    }
}
