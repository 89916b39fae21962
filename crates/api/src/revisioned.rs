//! Answers built once and kept while what they show stands.
//!
//! A [`Revisioned`] keeps, per key, a value (serialized JSON, rows) built at some revision of
//! the data behind it. The revision comes with the request (the workspace's revisions are read
//! with the key, in the same statement), so a kept answer is used only when it is at least as
//! new as the request's own view of the database: there is no expiry to tune and nothing to
//! invalidate by hand. The byte budget bounds memory; past it, kept answers are dropped (any:
//! they are rebuilt by the next request that needs them).

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use uuid::Uuid;

/// Values by key, each with the revision it was built at and its size in bytes; `V` is cheap
/// to clone (an `Arc`).
pub struct Revisioned<V> {
    kept: Mutex<Kept<V>>,
    budget: usize,
}

struct Kept<V> {
    entries: HashMap<Uuid, Entry<V>>,
    bytes: usize,
}

struct Entry<V> {
    revision: i64,
    value: V,
    size: usize,
}

impl<V: Clone> Revisioned<V> {
    /// Keeps at most `budget` bytes, as the sizes given to [`Revisioned::put`] count them.
    pub fn new(budget: usize) -> Self {
        Revisioned {
            kept: Mutex::new(Kept {
                entries: HashMap::new(),
                bytes: 0,
            }),
            budget,
        }
    }

    /// The value kept for `key` if it was built at `revision` or later.
    pub fn get(&self, key: &Uuid, revision: i64) -> Option<V> {
        let kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.entries
            .get(key)
            .filter(|e| e.revision >= revision)
            .map(|e| e.value.clone())
    }

    /// Keeps `value` of `size` bytes, built at `revision` or later, unless something built at
    /// a later revision is already kept.
    pub fn put(&self, key: Uuid, revision: i64, value: V, size: usize) {
        if size > self.budget {
            return;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(old) = kept.entries.get(&key) {
            if old.revision > revision {
                return;
            }
            let old = old.size;
            kept.bytes -= old;
            kept.entries.remove(&key);
        }
        while kept.bytes + size > self.budget {
            let Some(victim) = kept.entries.keys().next().copied() else {
                break;
            };
            if let Some(gone) = kept.entries.remove(&victim) {
                kept.bytes -= gone.size;
            }
        }
        kept.bytes += size;
        kept.entries.insert(
            key,
            Entry {
                revision,
                value,
                size,
            },
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn json(text: &str) -> Arc<str> {
        Arc::from(text)
    }

    fn put(cache: &Revisioned<Arc<str>>, key: Uuid, revision: i64, value: Arc<str>) {
        let size = value.len();
        cache.put(key, revision, value, size);
    }

    fn key(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    #[test]
    fn an_answer_serves_its_revision_and_earlier_ones_only() {
        let cache = Revisioned::<Arc<str>>::new(1 << 10);
        assert!(cache.get(&key(1), 0).is_none());
        put(&cache, key(1), 5, json("[1]"));
        assert_eq!(
            cache.get(&key(1), 5).map(|j| j.to_string()),
            Some("[1]".into())
        );
        assert_eq!(
            cache.get(&key(1), 4).map(|j| j.to_string()),
            Some("[1]".into())
        );
        assert!(
            cache.get(&key(1), 6).is_none(),
            "a later revision needs a new answer"
        );
        assert!(cache.get(&key(2), 5).is_none(), "keys do not share answers");
    }

    #[test]
    fn an_older_answer_never_replaces_a_newer_one() {
        let cache = Revisioned::<Arc<str>>::new(1 << 10);
        put(&cache, key(1), 7, json("[7]"));
        put(&cache, key(1), 6, json("[6]"));
        assert_eq!(
            cache.get(&key(1), 7).map(|j| j.to_string()),
            Some("[7]".into())
        );
        put(&cache, key(1), 8, json("[8]"));
        assert_eq!(
            cache.get(&key(1), 8).map(|j| j.to_string()),
            Some("[8]".into())
        );
    }

    #[test]
    fn the_byte_budget_holds() {
        // Each answer is 10 bytes; 25 fit two.
        let cache = Revisioned::<Arc<str>>::new(25);
        for n in 0..10 {
            put(&cache, key(n), 1, json("[12345678]"));
            let kept = cache.kept.lock().expect("lock");
            assert!(kept.bytes <= 25, "{} bytes kept", kept.bytes);
            assert_eq!(
                kept.bytes,
                kept.entries.values().map(|e| e.value.len()).sum::<usize>()
            );
        }
        assert!(cache.get(&key(9), 1).is_some(), "the newest answer is kept");
        put(&cache, key(20), 1, json(&format!("[{}]", "1".repeat(30))));
        assert!(
            cache.get(&key(20), 1).is_none(),
            "an answer over the budget is not kept"
        );
        assert!(cache.get(&key(9), 1).is_some(), "and drops nothing");
        // Replacing an answer counts its bytes once.
        put(&cache, key(9), 2, json("[1]"));
        assert_eq!(cache.kept.lock().expect("lock").bytes, 3 + 10);
    }
}
