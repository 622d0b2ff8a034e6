//! Every SQL statement the file backend runs, in one place, so tests can `EXPLAIN QUERY PLAN` them.
//!
//! Parameters: `?1` is always the tenant. Ranges over paths use `path > ?2
//! AND path < ?3` with `?2 = "/dir/"` and `?3 = "/dir0"` ("0" is the byte after
//! "/"), so "everything beneath a directory" is one index range, never a scan.

/// A file's id, size and created_at. Params: tenant, path.
pub const FILE_META: &str =
    "SELECT id, size, created_at FROM files WHERE tenant = ?1 AND path = ?2";
/// A file's id, size and content; the content is NULL (never read from the
/// disk) when the size is past the max file size. Params: tenant, path, max size.
pub const FILE_CONTENT: &str = "SELECT id, size, CASE WHEN size <= ?3 THEN content END FROM files WHERE tenant = ?1 AND path = ?2";
/// Whether a directory exists. Params: tenant, path.
pub const DIR_EXISTS: &str = "SELECT 1 FROM dirs WHERE tenant = ?1 AND path = ?2";
/// Inserts a file. Params: tenant, path, parent, name, size, now, content.
pub const FILE_INSERT: &str = "INSERT INTO files (tenant, path, parent, name, size, created_at, modified_at, content) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7)";
/// Replaces a file's content. Params: id, size, now, content.
pub const FILE_UPDATE: &str =
    "UPDATE files SET size = ?2, modified_at = ?3, content = ?4 WHERE id = ?1";
/// Deletes a file. Params: id.
pub const FILE_DELETE: &str = "DELETE FROM files WHERE id = ?1";
/// Counts one more entry in a directory. Params: tenant, path.
pub const DIR_INCREMENT: &str =
    "UPDATE dirs SET entries = entries + 1 WHERE tenant = ?1 AND path = ?2";
/// Creates a directory holding one entry. Params: tenant, path, parent, name.
pub const DIR_INSERT: &str =
    "INSERT INTO dirs (tenant, path, parent, name, entries) VALUES (?1, ?2, ?3, ?4, 1)";
/// Counts one entry fewer in a directory, returning what is left and whether
/// it was made (a made directory stays at zero). Params: tenant, path.
pub const DIR_DECREMENT: &str =
    "UPDATE dirs SET entries = entries - 1 WHERE tenant = ?1 AND path = ?2 RETURNING entries, made";
/// A directory's entry count and whether it was made. Params: tenant, path.
pub const DIR_STATE: &str = "SELECT entries, made FROM dirs WHERE tenant = ?1 AND path = ?2";
/// Creates a made directory with no entries. Params: tenant, path, parent, name.
pub const DIR_INSERT_MADE: &str =
    "INSERT INTO dirs (tenant, path, parent, name, entries, made) VALUES (?1, ?2, ?3, ?4, 0, 1)";
/// Marks an existing (implicit) directory made. Params: tenant, path.
pub const DIR_MARK_MADE: &str = "UPDATE dirs SET made = 1 WHERE tenant = ?1 AND path = ?2";
/// The count and total size of the files beneath a directory. Params: tenant, low, high.
pub const RANGE_USAGE: &str = "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM files WHERE tenant = ?1 AND path > ?2 AND path < ?3";
/// Deletes every file beneath a directory. Params: tenant, low, high.
pub const RANGE_DELETE_FILES: &str =
    "DELETE FROM files WHERE tenant = ?1 AND path > ?2 AND path < ?3";
/// Deletes every directory row beneath a directory. Params: tenant, low, high.
pub const RANGE_DELETE_DIRS: &str =
    "DELETE FROM dirs WHERE tenant = ?1 AND path > ?2 AND path < ?3";
/// Removes an emptied directory. Params: tenant, path.
pub const DIR_DELETE: &str = "DELETE FROM dirs WHERE tenant = ?1 AND path = ?2";
/// A tenant's usage. Params: tenant.
pub const USAGE_GET: &str = "SELECT bytes, files FROM usage WHERE tenant = ?1";
/// Adds to a tenant's usage. Params: tenant, bytes delta, files delta.
pub const USAGE_ADD: &str = "INSERT INTO usage (tenant, bytes, files) VALUES (?1, ?2, ?3)
     ON CONFLICT (tenant) DO UPDATE SET bytes = bytes + excluded.bytes, files = files + excluded.files";
/// The subdirectories of a directory, by name. Params: tenant, dir, limit.
pub const LS_DIRS: &str =
    "SELECT name FROM dirs WHERE tenant = ?1 AND parent = ?2 ORDER BY name LIMIT ?3";
/// The files of a directory, by name. Params: tenant, dir, limit.
pub const LS_FILES: &str = "SELECT name, size, modified_at FROM files WHERE tenant = ?1 AND parent = ?2 ORDER BY name LIMIT ?3";
/// Files beneath a directory, by path, without content. Params: tenant, low, high.
pub const RANGE_META: &str = "SELECT path, size, modified_at FROM files WHERE tenant = ?1 AND path > ?2 AND path < ?3 ORDER BY path";
/// Files beneath a directory within the max file size, by path, with
/// content (larger ones are skipped by grep, their blobs never read). Params:
/// tenant, low, high, max size.
pub const RANGE_CONTENT: &str = "SELECT path, content FROM files WHERE tenant = ?1 AND path > ?2 AND path < ?3 AND size <= ?4 ORDER BY path";
/// A recorded effect: its operation, path(s) and outcome. Params: tenant, effect key.
pub const EFFECT_GET: &str =
    "SELECT op, path, outcome FROM effects WHERE tenant = ?1 AND effect_key = ?2";
/// Records an effect. Params: tenant, effect key, op, outcome, now (RFC 3339),
/// path(s), now (Unix milliseconds).
pub const EFFECT_PUT: &str = "INSERT INTO effects (tenant, effect_key, op, outcome, created_at, path, created_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";

/// Forgets at most `?2` effect records made before an instant, the oldest
/// first. Params: the instant (Unix milliseconds), the batch size; the one
/// statement whose `?1` is not a tenant, as it spans every tenant. An index
/// range over `effects_by_time`: each batch is a short transaction, so
/// pruning never holds the write lock for long.
pub const EFFECTS_PRUNE: &str = "DELETE FROM effects WHERE (tenant, effect_key) IN (SELECT tenant, effect_key FROM effects WHERE created_ms < ?1 ORDER BY created_ms LIMIT ?2)";
