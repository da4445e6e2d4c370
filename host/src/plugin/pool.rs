//! The instance pool's budget: what one instance of a plugin takes from the pooling
//! allocator, and a first-come first-served wait for it, so that calls beyond what the
//! pool holds wait for a slot instead of failing to instantiate.
//!
//! Components differ widely: a Rust plugin is 3 core instances, a JavaScript one 4
//! (`StarlingMonkey`) or 9 (`QuickJS`), a Python one 14. Each [`Plugin`](super::Plugin)
//! counts its own at load, and each call takes that many from the engine's [`Budget`]
//! for as long as its instance lives; the call's store cannot create more.

use std::sync::{Arc, Condvar, Mutex, PoisonError};

use wasmtime::component::Component;

/// Slots of wasmtime's pooling allocator: the pool's size, or what one instance of a
/// component takes from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolSlots {
    /// Component instances: one per call.
    pub component_instances: u32,
    /// Core module instances: the component's modules, its WASI adapter and shims.
    pub core_instances: u32,
    /// Linear memories defined by those modules.
    pub memories: u32,
    /// Tables defined by those modules.
    pub tables: u32,
}

impl Default for PoolSlots {
    /// The pool `kubewasm dev` and `run` keep: 256 calls in flight at once when each
    /// instance is small (a Rust plugin's 4 core instances), fewer for larger ones
    /// (73 of a Python plugin's 14).
    fn default() -> Self {
        Self { component_instances: 256, core_instances: 1024, memories: 512, tables: 1024 }
    }
}

impl PoolSlots {
    /// What one instance of `component` (compiled from `bytes`) takes, but for the core
    /// instances of the adapter modules wasmtime adds between nested components: a
    /// lower bound, which the load raises until an instance fits.
    ///
    /// # Errors
    ///
    /// Why it cannot be counted: the bytes are not a component wasmparser can read, or
    /// the component instantiates core modules it imports, whose needs are unknown.
    pub(crate) fn of(bytes: &[u8], component: &Component) -> Result<Self, String> {
        // Memories and tables as wasmtime counts them, adapters included.
        let resources = component
            .resources_required()
            .ok_or("it instantiates core modules it imports, whose memories and tables cannot be counted")?;
        Ok(Self {
            component_instances: 1,
            core_instances: core_instantiations(bytes)?,
            memories: resources.num_memories,
            tables: resources.num_tables,
        })
    }

    /// Whether `self` fits in `other`, in every kind of slot.
    fn fits_in(self, other: Self) -> bool {
        self.component_instances <= other.component_instances
            && self.core_instances <= other.core_instances
            && self.memories <= other.memories
            && self.tables <= other.tables
    }

    /// The first kind of slot of which `self` needs more than `pool` has, with both counts.
    pub(crate) fn excess_over(self, pool: Self) -> Option<(&'static str, u32, u32)> {
        [
            ("component instances", self.component_instances, pool.component_instances),
            ("core instances", self.core_instances, pool.core_instances),
            ("memories", self.memories, pool.memories),
            ("tables", self.tables, pool.tables),
        ]
        .into_iter()
        .find(|(_, need, have)| need > have)
    }

    fn minus(self, other: Self) -> Self {
        Self {
            component_instances: self.component_instances - other.component_instances,
            core_instances: self.core_instances - other.core_instances,
            memories: self.memories - other.memories,
            tables: self.tables - other.tables,
        }
    }

    fn plus(self, other: Self) -> Self {
        Self {
            component_instances: self.component_instances + other.component_instances,
            core_instances: self.core_instances + other.core_instances,
            memories: self.memories + other.memories,
            tables: self.tables + other.tables,
        }
    }
}

/// The core module instantiations in a component and the components nested in it, each
/// counted once (as tools build them, each nested component is instantiated once).
/// wasmtime instantiates these, and adapter modules of its own between nested components
/// that call each other (a `QuickJS` plugin has one), which are not counted here.
fn core_instantiations(bytes: &[u8]) -> Result<u32, String> {
    let mut count = 0u32;
    let mut data = bytes;
    let mut stack = Vec::new();
    let mut parser = wasmparser::Parser::new(0);
    loop {
        let (payload, consumed) = match parser.parse(data, true).map_err(|e| e.to_string())? {
            wasmparser::Chunk::Parsed { payload, consumed } => (payload, consumed),
            wasmparser::Chunk::NeedMoreData(_) => return Err("truncated".into()),
        };
        data = &data[consumed..];
        match payload {
            wasmparser::Payload::InstanceSection(instances) => {
                for instance in instances {
                    if let wasmparser::Instance::Instantiate { .. } = instance.map_err(|e| e.to_string())? {
                        count += 1;
                    }
                }
            }
            // Function bodies say nothing about instances: skip them whole.
            wasmparser::Payload::CodeSectionStart { size, .. } => {
                parser.skip_section();
                data = &data[usize::try_from(size).map_err(|e| e.to_string())?..];
            }
            wasmparser::Payload::ModuleSection { parser: nested, .. }
            | wasmparser::Payload::ComponentSection { parser: nested, .. } => {
                stack.push(std::mem::replace(&mut parser, nested));
            }
            wasmparser::Payload::End(_) => match stack.pop() {
                Some(outer) => parser = outer,
                None => return Ok(count),
            },
            _ => {}
        }
    }
}

/// The pool's slots not taken by instances alive now. Calls take what their plugin's
/// instance needs before instantiating and give it back when the instance is dropped;
/// a call that does not fit waits, in arrival order (a large plugin is not passed over
/// forever by small ones).
#[derive(Debug)]
pub(crate) struct Budget {
    size: PoolSlots,
    state: Mutex<State>,
    freed: Condvar,
}

#[derive(Debug)]
struct State {
    free: PoolSlots,
    /// The ticket the next caller draws.
    next_ticket: u64,
    /// The ticket whose holder may take slots now.
    serving: u64,
}

impl Budget {
    pub(crate) fn new(size: PoolSlots) -> Arc<Self> {
        Arc::new(Self {
            size,
            state: Mutex::new(State { free: size, next_ticket: 0, serving: 0 }),
            freed: Condvar::new(),
        })
    }

    /// The pool's size.
    pub(crate) fn size(&self) -> PoolSlots {
        self.size
    }

    /// Waits until `need` is free, takes it, and returns it when the permit is dropped.
    /// `need` must fit in the pool (checked when the plugin is loaded).
    pub(crate) fn take(self: &Arc<Self>, need: PoolSlots) -> Permit {
        debug_assert!(need.fits_in(self.size), "{need:?} can never fit in {:?}", self.size);
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let ticket = state.next_ticket;
        state.next_ticket += 1;
        while state.serving != ticket || !need.fits_in(state.free) {
            state = self.freed.wait(state).unwrap_or_else(PoisonError::into_inner);
        }
        state.free = state.free.minus(need);
        state.serving += 1;
        drop(state);
        // The next in line may fit in what is left.
        self.freed.notify_all();
        Permit { budget: Arc::clone(self), taken: need }
    }
}

/// Slots taken from a [`Budget`]; dropping it gives them back.
#[derive(Debug)]
pub(crate) struct Permit {
    budget: Arc<Budget>,
    taken: PoolSlots,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut state = self.budget.state.lock().unwrap_or_else(PoisonError::into_inner);
        state.free = state.free.plus(self.taken);
        drop(state);
        self.budget.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    const ONE: PoolSlots = PoolSlots { component_instances: 1, core_instances: 3, memories: 1, tables: 1 };

    #[test]
    fn calls_beyond_the_pool_wait_and_then_all_run() {
        let budget = Budget::new(PoolSlots { component_instances: 10, core_instances: 7, memories: 10, tables: 10 });
        let (alive, most) = (Arc::new(AtomicU32::new(0)), Arc::new(AtomicU32::new(0)));
        let threads: Vec<_> = (0..12)
            .map(|_| {
                let (budget, alive, most) = (budget.clone(), alive.clone(), most.clone());
                std::thread::spawn(move || {
                    let _permit = budget.take(ONE);
                    let now = alive.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(5));
                    alive.fetch_sub(1, Ordering::SeqCst);
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 2, "7 core instances hold two calls of 3");
        assert_eq!(budget.state.lock().unwrap().free, budget.size(), "every slot is given back");
    }

    #[test]
    fn a_large_call_is_served_in_its_turn() {
        let budget = Budget::new(PoolSlots { component_instances: 4, core_instances: 6, memories: 4, tables: 4 });
        let large = PoolSlots { core_instances: 6, ..ONE };
        let first = budget.take(ONE);
        let waiting = {
            let budget = budget.clone();
            std::thread::spawn(move || drop(budget.take(large)))
        };
        while budget.state.lock().unwrap().next_ticket < 2 {
            std::thread::yield_now();
        }
        // A small call that would fit now waits behind the large one.
        let small = {
            let budget = budget.clone();
            std::thread::spawn(move || drop(budget.take(ONE)))
        };
        std::thread::sleep(Duration::from_millis(20));
        assert!(!small.is_finished(), "the small call went ahead of the large one");
        drop(first);
        waiting.join().unwrap();
        small.join().unwrap();
    }

    #[test]
    fn what_does_not_fit_names_the_first_kind_of_slot_lacking() {
        let pool = PoolSlots::default();
        assert_eq!(ONE.excess_over(pool), None);
        let python = PoolSlots { core_instances: 1100, ..ONE };
        assert_eq!(python.excess_over(pool), Some(("core instances", 1100, 1024)));
    }
}
