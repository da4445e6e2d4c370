//! Gives the memory the process has freed back to the kernel, after work that frees much
//! at once (a compile, the host's start).

/// Returns freed memory to the kernel: glibc keeps what its threads' arenas freed for
/// their next allocations (tens of MiB after a large compile; the components' bytes
/// read at start and the first lists' responses), and counts it as the process's own
/// until then. Elsewhere the allocator is left to itself.
pub(crate) fn release_freed() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists.
    unsafe {
        libc::malloc_trim(0);
    }
}
