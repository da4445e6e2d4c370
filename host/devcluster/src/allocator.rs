//! Numbers handed out among the objects of a kind (a Service's cluster IP and node ports),
//! indexed on every write so that choosing one costs a lookup, not a scan of the kind.

use std::collections::{BTreeMap, BTreeSet, HashMap};

/// A range of numbers objects of one kind share; a stored object holds some of them.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct Range {
    pub name: &'static str,
    pub first: u32,
    pub last: u32,
}

/// Which numbers of one range are held, and the lowest free ones.
#[derive(Debug)]
struct Pool {
    /// Held numbers and how many objects hold each (duplicates can be restored from disk).
    held: BTreeMap<u32, u32>,
    /// Free numbers below `next`, released after `next` passed them.
    freed: BTreeSet<u32>,
    /// Every number of the range from here on that is not held is free; never held itself.
    next: u32,
}

impl Pool {
    fn new(range: &Range) -> Pool {
        Pool { held: BTreeMap::new(), freed: BTreeSet::new(), next: range.first }
    }

    fn take(&mut self, range: &Range, n: u32) {
        let count = self.held.entry(n).or_default();
        *count += 1;
        if *count > 1 || n < range.first {
            return;
        }
        if n < self.next {
            self.freed.remove(&n);
        } else if n == self.next {
            self.next += 1;
            while self.held.contains_key(&self.next) {
                self.next += 1;
            }
        }
    }

    fn release(&mut self, range: &Range, n: u32) {
        let Some(count) = self.held.get_mut(&n) else {
            return;
        };
        *count -= 1;
        if *count == 0 {
            self.held.remove(&n);
            if n >= range.first && n < self.next {
                self.freed.insert(n);
            }
        }
    }

    /// Free numbers in increasing order.
    fn free<'a>(&'a self, range: &'a Range) -> impl Iterator<Item = u32> + 'a {
        let above = (self.next..=range.last).filter(|n| !self.held.contains_key(n));
        self.freed.iter().copied().chain(above)
    }
}

/// The ranges of one kind.
#[derive(Debug, Default)]
pub(crate) struct Allocations {
    pools: HashMap<&'static str, Pool>,
}

impl Allocations {
    /// Records that a stored object holds `n` of `range`.
    pub(crate) fn take(&mut self, range: &'static Range, n: u32) {
        self.pools.entry(range.name).or_insert_with(|| Pool::new(range)).take(range, n);
    }

    /// Records that an object no longer holds `n` of `range`.
    pub(crate) fn release(&mut self, range: &'static Range, n: u32) {
        if let Some(pool) = self.pools.get_mut(range.name) {
            pool.release(range, n);
        }
    }

    /// How many stored objects hold `n` of `range`.
    pub(crate) fn holders(&self, range: &Range, n: u32) -> u32 {
        self.pools.get(range.name).and_then(|p| p.held.get(&n)).copied().unwrap_or(0)
    }

    /// The lowest number of `range` that no stored object holds, or that only `own` (the
    /// numbers of the object being written, as stored) holds, and that `usable` accepts.
    pub(crate) fn lowest_free(&self, range: &Range, own: &[u32], usable: impl Fn(u32) -> bool) -> Option<u32> {
        let pool_free = match self.pools.get(range.name) {
            Some(pool) => pool.free(range).find(|&n| usable(n)),
            None => (range.first..=range.last).find(|&n| usable(n)),
        };
        let own_count = |n: u32| u32::try_from(own.iter().filter(|&&o| o == n).count()).unwrap_or(u32::MAX);
        let own_free = own
            .iter()
            .copied()
            .filter(|&n| (range.first..=range.last).contains(&n) && usable(n) && self.holders(range, n) <= own_count(n))
            .min();
        match (pool_free, own_free) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static R: Range = Range { name: "r", first: 10, last: 20 };

    #[test]
    fn lowest_free_follows_takes_and_releases() {
        let mut a = Allocations::default();
        assert_eq!(a.lowest_free(&R, &[], |_| true), Some(10));
        for n in [10, 11, 13, 5] {
            a.take(&R, n);
        }
        assert_eq!(a.lowest_free(&R, &[], |_| true), Some(12));
        a.take(&R, 12);
        assert_eq!(a.lowest_free(&R, &[], |_| true), Some(14), "13 was held ahead of the free mark");
        a.release(&R, 11);
        a.release(&R, 5);
        assert_eq!(a.lowest_free(&R, &[], |_| true), Some(11));
        assert_eq!(a.lowest_free(&R, &[], |n| n != 11), Some(14));
        assert_eq!(a.lowest_free(&R, &[12], |n| n != 11), Some(12), "an object's own number is free to it");
        a.take(&R, 12);
        assert_eq!(a.lowest_free(&R, &[12], |n| n != 11), Some(14), "held twice, once by another");
        for n in 11..=20 {
            a.take(&R, n);
        }
        assert_eq!(a.lowest_free(&R, &[], |_| true), None);
    }
}
