//! Bounded memory: sets and maps of id hashes that forget their oldest
//! entry at a capacity, for the state a connection follower keeps.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};
use std::sync::LazyLock;

/// A 64-bit hash of an id, with a seed drawn once per process
/// (std's `RandomState`): ids come from the peer, and a random seed keeps
/// them from choosing collisions.
pub(crate) fn id_hash(s: &str) -> u64 {
    static SEED: LazyLock<std::collections::hash_map::RandomState> =
        LazyLock::new(Default::default);
    SEED.hash_one(s)
}

/// The sets and maps below hold [`id_hash`]es, which are spread already:
/// they are their own hash.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Spread(u64);

impl Hasher for Spread {
    fn write(&mut self, bytes: &[u8]) {
        // Not reached for `u64` keys; a fold keeps it correct for others.
        for b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type Hashes = BuildHasherDefault<Spread>;

/// An insertion-ordered set of hashes with a capacity.
#[derive(Debug, Default, Clone)]
pub(crate) struct BoundedSet {
    set: HashSet<u64, Hashes>,
    order: VecDeque<u64>,
}

impl BoundedSet {
    pub(crate) fn contains(&self, h: u64) -> bool {
        self.set.contains(&h)
    }

    pub(crate) fn insert(&mut self, h: u64, cap: usize) {
        if cap == 0 || !self.set.insert(h) {
            return;
        }
        self.order.push_back(h);
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.set.len()
    }
}

/// An insertion-ordered map from hashes with a capacity.
#[derive(Debug, Clone)]
pub(crate) struct BoundedMap<V> {
    map: HashMap<u64, V, Hashes>,
    order: VecDeque<u64>,
}

impl<V> Default for BoundedMap<V> {
    fn default() -> Self {
        Self {
            map: HashMap::default(),
            order: VecDeque::new(),
        }
    }
}

impl<V> BoundedMap<V> {
    pub(crate) fn get_mut(&mut self, h: u64) -> Option<&mut V> {
        self.map.get_mut(&h)
    }

    pub(crate) fn contains(&self, h: u64) -> bool {
        self.map.contains_key(&h)
    }

    pub(crate) fn insert(&mut self, h: u64, v: V, cap: usize) {
        if cap == 0 {
            return;
        }
        if self.map.insert(h, v).is_none() {
            self.order.push_back(h);
        }
        while self.order.len() > cap {
            if let Some(old) = self.order.pop_front() {
                self.map.remove(&old);
            }
        }
    }

    pub(crate) fn remove(&mut self, h: u64) -> Option<V> {
        let v = self.map.remove(&h)?;
        if let Some(i) = self.order.iter().position(|&x| x == h) {
            self.order.remove(i);
        }
        Some(v)
    }

    pub(crate) fn len(&self) -> usize {
        self.map.len()
    }

    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.map.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_set_forgets_the_oldest() {
        let mut s = BoundedSet::default();
        for i in 0..10 {
            s.insert(i, 3);
        }
        assert_eq!(s.len(), 3);
        assert!(s.contains(9) && s.contains(7) && !s.contains(6));
    }

    #[test]
    fn bounded_map_forgets_the_oldest_and_removes() {
        let mut m = BoundedMap::default();
        for i in 0..5 {
            m.insert(i, i, 2);
        }
        assert_eq!(m.len(), 2);
        assert_eq!(m.remove(4), Some(4));
        assert!(m.contains(3) && !m.contains(2));
    }
}
