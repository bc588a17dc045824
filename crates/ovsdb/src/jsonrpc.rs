//! JSON-RPC 1.0 for OVSDB: the message helpers, and the streaming reader (from the
//! `jsonstream` crate, shared with unixctl).

use serde_json::{json, Value};

pub use jsonstream::JsonStream;

/// A JSON-RPC reply.
pub fn reply(id: &Value, result: Value) -> Value {
    json!({"id": id, "result": result, "error": null})
}

/// A JSON-RPC error reply.
pub fn error_reply(id: &Value, error: Value) -> Value {
    json!({"id": id, "result": null, "error": error})
}

/// A JSON-RPC notification.
pub fn notification(method: &str, params: Value) -> Value {
    json!({"id": null, "method": method, "params": params})
}

/// A JSON-RPC request.
pub fn request(method: &str, params: Value, id: Value) -> Value {
    json!({"id": id, "method": method, "params": params})
}
