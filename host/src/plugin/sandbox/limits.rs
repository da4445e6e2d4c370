//! What one call may use: its CPU deadline, its memory, its log lines, and the pool
//! slots its instance took; enforced by the epoch deadline and a resource limiter.

use std::time::Duration;

use wasmtime::ResourceLimiter;

use crate::plugin::pool::PoolSlots;

/// How often the engine's deadline clock ticks: the granularity of every call's deadline.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Resource limits of one call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// CPU deadline of one call.
    pub deadline: Duration,
    /// Largest linear memory, in bytes.
    pub memory_bytes: u64,
    /// Log lines kept per call; the rest are dropped and counted.
    pub log_lines: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Self { deadline: Duration::from_secs(1), memory_bytes: 64 << 20, log_lines: 1000 }
    }
}

impl Limits {
    /// The limits a plugin asked for in its manifest, never above `self`.
    #[must_use]
    pub fn lowered_to(self, deadline: Option<Duration>, memory_bytes: Option<u64>) -> Self {
        Self {
            deadline: deadline.map_or(self.deadline, |d| d.min(self.deadline)),
            memory_bytes: memory_bytes.map_or(self.memory_bytes, |m| m.min(self.memory_bytes)),
            ..self
        }
    }

    /// The lower of `self` and `other` in every limit.
    #[must_use]
    pub fn min(self, other: Self) -> Self {
        Self {
            deadline: self.deadline.min(other.deadline),
            memory_bytes: self.memory_bytes.min(other.memory_bytes),
            log_lines: self.log_lines.min(other.log_lines),
        }
    }

    /// The deadline in ticks of the engine's epoch clock, at least one.
    pub(crate) fn deadline_ticks(self) -> u64 {
        let ticks = self.deadline.as_millis().div_ceil(EPOCH_TICK.as_millis()).max(1);
        u64::try_from(ticks).unwrap_or(u64::MAX)
    }
}

/// The store's resource limiter: the memory cap, and no more core instances, memories
/// and tables than the call took from the instance pool.
pub(crate) struct Limiter {
    memory_cap: u64,
    memory_exceeded: bool,
    slots: PoolSlots,
}

impl Limiter {
    pub(crate) fn new(limits: Limits, slots: PoolSlots) -> Self {
        Self { memory_cap: limits.memory_bytes, memory_exceeded: false, slots }
    }

    /// The cap in MiB when the plugin tried to grow its memory past it.
    pub(crate) fn exceeded_mib(&self) -> Option<u64> {
        self.memory_exceeded.then_some(self.memory_cap >> 20)
    }
}

impl ResourceLimiter for Limiter {
    fn memory_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        let allowed = u64::try_from(desired).is_ok_and(|d| d <= self.memory_cap);
        self.memory_exceeded |= !allowed;
        Ok(allowed)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _maximum: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }

    fn instances(&self) -> usize {
        usize::try_from(self.slots.core_instances).unwrap_or(usize::MAX)
    }

    fn memories(&self) -> usize {
        usize::try_from(self.slots.memories).unwrap_or(usize::MAX)
    }

    fn tables(&self) -> usize {
        usize::try_from(self.slots.tables).unwrap_or(usize::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_limits_only_lower_the_host_limits() {
        let host = Limits::default();
        let lowered = host.lowered_to(Some(Duration::from_millis(200)), Some(512 << 20));
        assert_eq!(lowered.deadline, Duration::from_millis(200));
        assert_eq!(lowered.memory_bytes, host.memory_bytes, "a plugin cannot raise the cap");
    }
}
