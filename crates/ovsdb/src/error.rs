//! RFC 7047 error objects.
//!
//! Every failure a client can cause is reported as an [`Error`]: a short machine-readable tag
//! (`"syntax error"`, `"constraint violation"`, `"referential integrity violation"`, ...) and a
//! human-readable `details` string that names the table, column or value at fault. On the wire it
//! becomes `{"error": tag, "details": details}`, the `<error>` object of RFC 7047 §3.1. Errors are
//! plain values: nothing here panics, logs or touches global state.

use serde_json::{json, Value};
use std::fmt;

/// An RFC 7047 `<error>`: a category tag plus details for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    /// The category, e.g. `"constraint violation"`.
    pub tag: &'static str,
    /// What exactly went wrong, naming the table/column/value.
    pub details: String,
}

impl Error {
    /// An error with the given tag and details.
    pub fn new(tag: &'static str, details: impl Into<String>) -> Self {
        Error {
            tag,
            details: details.into(),
        }
    }
    /// `"syntax error"`.
    pub fn syntax(details: impl Into<String>) -> Self {
        Self::new("syntax error", details)
    }
    /// `"constraint violation"`.
    pub fn constraint(details: impl Into<String>) -> Self {
        Self::new("constraint violation", details)
    }
    /// `"referential integrity violation"`.
    pub fn integrity(details: impl Into<String>) -> Self {
        Self::new("referential integrity violation", details)
    }
    /// `"I/O error"` (the durable log could not be written).
    pub fn io(details: impl Into<String>) -> Self {
        Self::new("I/O error", details)
    }
    /// The JSON `<error>` object.
    pub fn to_json(&self) -> Value {
        json!({"error": self.tag, "details": self.details})
    }
    /// Prefix the details with some context (e.g. the table and column being parsed).
    pub fn context(mut self, ctx: impl fmt::Display) -> Self {
        self.details = format!("{ctx}: {}", self.details);
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.tag, self.details)
    }
}

impl std::error::Error for Error {}

/// Shorthand for results carrying an [`Error`].
pub type Result<T> = std::result::Result<T, Error>;
