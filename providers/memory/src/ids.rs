//! Short random ids: 12 lowercase hex digits (48 bits). The store checks each new id against
//! the table inside the inserting transaction, so a collision costs a retry, not a failure.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A per-process random seed (the standard library's hash keys come from the OS), mixed with
/// the process id and the time.
fn seed() -> u64 {
    static SEED: OnceLock<u64> = OnceLock::new();
    *SEED.get_or_init(|| {
        let mut h = RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0);
        h.write_u64(nanos);
        h.finish()
    })
}

/// A new id.
pub(crate) fn new_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let v = splitmix64(seed() ^ splitmix64(n));
    format!("{:012x}", v >> 16)
}

/// A stable 64-bit hash of a project path (FNV-1a): what the search index keys a project's
/// postings by, and what PostgreSQL's per-project write lock is keyed by. Collisions only cost speed
/// (rows are still filtered by the exact path) or make two projects' writers take turns.
pub(crate) fn project_hash(project: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in project.as_bytes() {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_short_hex_and_distinct() {
        let ids: std::collections::HashSet<String> = (0..10_000).map(|_| super::new_id()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(ids
            .iter()
            .all(|id| id.len() == 12 && id.chars().all(|c| c.is_ascii_hexdigit())));
    }
}
