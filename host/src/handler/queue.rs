//! The events waiting for a plugin's handler: one lane per object, first in first out,
//! one delivery in flight per object and the object's later events behind it while it
//! is retried; lanes of different objects run side by side. Past the plugin's queue
//! limit the oldest undelivered events are dropped. Pure bookkeeping: the runner asks
//! which deliveries may start and says how each ended.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant};

/// One event to deliver (`T`: what the runner hands the plugin), numbered in the order
/// it was queued.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Queued<T> {
    pub(crate) seq: u64,
    /// The object's lane: its uid.
    pub(crate) lane: String,
    /// 1 on the first delivery, counting up on retries.
    pub(crate) attempt: u32,
    pub(crate) item: T,
}

/// How a delivery ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The plugin accepted it: the lane moves on.
    Delivered,
    /// Deliver it again after this delay; the lane waits.
    Retry(Duration),
    /// Given up on (the plugin refused it for good): the lane moves on.
    Abandoned,
}

#[derive(Debug)]
struct Lane<T> {
    waiting: VecDeque<Queued<T>>,
    /// The front is being delivered.
    busy: bool,
    /// The front is retried no sooner than this.
    due: Option<Instant>,
}

/// One plugin's waiting events.
#[derive(Debug)]
pub(crate) struct Queue<T> {
    lanes: HashMap<String, Lane<T>>,
    /// Every waiting event's lane, by number: the oldest is first.
    order: BTreeMap<u64, String>,
    next: u64,
    limit: usize,
}

impl<T: Clone> Queue<T> {
    /// A queue that holds at most `limit` undelivered events (at least one).
    pub(crate) fn new(limit: usize) -> Self {
        Self { lanes: HashMap::new(), order: BTreeMap::new(), next: 0, limit: limit.max(1) }
    }

    /// Events waiting, those in flight included.
    pub(crate) fn len(&self) -> usize {
        self.order.len()
    }

    /// Queues `item` at the end of `lane`; returns the events dropped to stay within the
    /// limit, oldest first (never one in flight).
    pub(crate) fn push(&mut self, lane: &str, item: T) -> Vec<Queued<T>> {
        let seq = self.next;
        self.next += 1;
        let queued = Queued { seq, lane: lane.to_string(), attempt: 1, item };
        self.lanes
            .entry(lane.to_string())
            .or_insert_with(|| Lane { waiting: VecDeque::new(), busy: false, due: None })
            .waiting
            .push_back(queued);
        self.order.insert(seq, lane.to_string());
        let mut dropped = Vec::new();
        while self.order.len() > self.limit {
            let oldest = self.order.iter().find(|(seq, lane)| {
                let lane = &self.lanes[*lane];
                !(lane.busy && lane.waiting.front().is_some_and(|q| q.seq == **seq))
            });
            let Some((&seq, lane)) = oldest else { break };
            let lane = lane.clone();
            self.order.remove(&seq);
            let entry = self.lanes.get_mut(&lane).expect("a queued event's lane exists");
            if let Some(at) = entry.waiting.iter().position(|q| q.seq == seq)
                && let Some(gone) = entry.waiting.remove(at)
            {
                if at == 0 {
                    // The front was waiting for a retry: the next one need not.
                    entry.due = None;
                }
                dropped.push(gone);
            }
            if entry.waiting.is_empty() && !entry.busy {
                self.lanes.remove(&lane);
            }
        }
        dropped
    }

    /// The deliveries that may start at `now`, at most `room` of them, oldest first: the
    /// front of each lane that is neither in flight nor waiting for a retry.
    pub(crate) fn start(&mut self, now: Instant, room: usize) -> Vec<Queued<T>> {
        let mut fronts: Vec<&mut Lane<T>> = self
            .lanes
            .values_mut()
            .filter(|l| !l.busy && l.due.is_none_or(|due| due <= now) && !l.waiting.is_empty())
            .collect();
        fronts.sort_by_key(|l| l.waiting.front().map(|q| q.seq));
        fronts
            .into_iter()
            .take(room)
            .filter_map(|lane| {
                lane.busy = true;
                lane.due = None;
                lane.waiting.front().cloned()
            })
            .collect()
    }

    /// The delivery of `lane`'s front ended with `outcome`.
    pub(crate) fn finish(&mut self, lane: &str, outcome: Outcome, now: Instant) {
        let Some(entry) = self.lanes.get_mut(lane) else { return };
        entry.busy = false;
        match outcome {
            Outcome::Retry(delay) => {
                entry.due = Some(now + delay);
                if let Some(front) = entry.waiting.front_mut() {
                    front.attempt += 1;
                }
            }
            Outcome::Delivered | Outcome::Abandoned => {
                if let Some(done) = entry.waiting.pop_front() {
                    self.order.remove(&done.seq);
                }
                if entry.waiting.is_empty() {
                    self.lanes.remove(lane);
                }
            }
        }
    }

    /// When the next retry is due, if one waits.
    pub(crate) fn next_due(&self) -> Option<Instant> {
        self.lanes.values().filter(|l| !l.busy && !l.waiting.is_empty()).filter_map(|l| l.due).min()
    }

    /// Every lane waiting for a retry may go at once (a new version of the plugin may
    /// accept what the old one refused).
    pub(crate) fn retry_now(&mut self) {
        for lane in self.lanes.values_mut() {
            lane.due = None;
        }
    }
}

/// How long a lane waits after its `attempt`th failed delivery: 5 ms doubling to 5 min,
/// as a failed reconcile.
pub(crate) fn backoff(attempt: u32) -> Duration {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_mins(5);
    FIRST.saturating_mul(1 << attempt.saturating_sub(1).min(31)).min(MAX)
}

/// The wait after a failure that only a new version of the plugin can fix.
pub(crate) const STUCK: Duration = Duration::from_mins(5);

#[cfg(test)]
mod tests {
    use super::*;

    fn items(started: &[Queued<&'static str>]) -> Vec<&'static str> {
        started.iter().map(|q| q.item).collect()
    }

    #[test]
    fn each_object_gets_its_events_in_order_one_at_a_time() {
        let mut q = Queue::new(100);
        q.push("a", "a1");
        q.push("b", "b1");
        q.push("a", "a2");
        let now = Instant::now();
        assert_eq!(items(&q.start(now, 10)), ["a1", "b1"], "a2 waits behind a1");
        assert!(q.start(now, 10).is_empty(), "nothing more until one ends");
        q.finish("a", Outcome::Delivered, now);
        assert_eq!(items(&q.start(now, 10)), ["a2"]);
        q.finish("a", Outcome::Delivered, now);
        q.finish("b", Outcome::Delivered, now);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_failed_delivery_is_retried_after_its_backoff_and_later_events_wait_behind_it() {
        let mut q = Queue::new(100);
        q.push("a", "a1");
        q.push("a", "a2");
        q.push("b", "b1");
        let now = Instant::now();
        q.start(now, 1);
        q.finish("a", Outcome::Retry(Duration::from_secs(1)), now);
        assert_eq!(items(&q.start(now, 10)), ["b1"], "another object is not held up");
        assert_eq!(q.next_due(), Some(now + Duration::from_secs(1)));
        let later = now + Duration::from_secs(1);
        let retried = q.start(later, 10);
        assert_eq!((retried[0].item, retried[0].attempt), ("a1", 2), "the same event again, not a2");
        q.finish("a", Outcome::Abandoned, later);
        assert_eq!(items(&q.start(later, 10)), ["a2"]);
    }

    #[test]
    fn past_the_limit_the_oldest_undelivered_are_dropped_never_one_in_flight() {
        let mut q = Queue::new(2);
        q.push("a", "a1");
        let now = Instant::now();
        q.start(now, 1);
        q.push("b", "b1");
        let dropped = q.push("c", "c1");
        assert_eq!(items(&dropped), ["b1"], "a1 is in flight");
        assert_eq!(q.len(), 2);
        q.finish("a", Outcome::Delivered, now);
        assert_eq!(items(&q.start(now, 10)), ["c1"]);
    }

    #[test]
    fn a_new_version_retries_at_once() {
        let mut q = Queue::new(10);
        q.push("a", "a1");
        let now = Instant::now();
        q.start(now, 1);
        q.finish("a", Outcome::Retry(STUCK), now);
        assert!(q.start(now, 1).is_empty());
        q.retry_now();
        assert_eq!(items(&q.start(now, 1)), ["a1"]);
    }

    #[test]
    fn retries_back_off_from_5ms_to_5min() {
        assert_eq!(backoff(1), Duration::from_millis(5));
        assert_eq!(backoff(2), Duration::from_millis(10));
        assert_eq!(backoff(40), Duration::from_mins(5));
    }
}
