//! Effect keys: each mutation a tool call makes carries SHA-256(run id, call id, operation, path) in its `FileContext`.
//!
//! A durable backend records the key with the mutation's outcome and
//! replays it when the same key comes again, so a retried call never writes
//! twice. The file tools make the key for each mutation they make from the
//! call's [`CallContext`](super::CallContext) (docs/adr/0132); the MCP
//! server gives each `tools/call` its own call id (docs/adr/0135).

use sha2::{Digest, Sha256};

/// The effect key of `operation` on `path` made by call `call_id` of run
/// `run_id`: hex SHA-256 over the four fields, each prefixed by its length
/// (8 bytes, big-endian), so no two different field lists share a key.
pub fn effect_key(run_id: &str, call_id: &str, operation: &str, path: &str) -> String {
    let mut hasher = Sha256::new();
    for field in [run_id, call_id, operation, path] {
        hasher.update((field.len() as u64).to_be_bytes());
        hasher.update(field.as_bytes());
    }
    hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
