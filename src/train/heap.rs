//! Allocator settings for a training process.
//!
//! A CPU training step allocates and frees hundreds of megabytes (activations, their gradients,
//! logits over the vocabulary) in buffers of one to thirty megabytes. glibc's defaults hand each
//! such buffer back to the kernel when it is freed — buffers over the mmap threshold are unmapped,
//! and free space above the trim threshold at the top of a heap is released — and every step then
//! faults the same pages in again, zeroed by the kernel. The micro-batch threads also each get an
//! arena of their own, whose heaps are capped at 64 MiB and released the same way. On the 100M
//! `small` preset that page faulting was a quarter of the step (`cargo bench --bench train`: 2.9 s
//! a step before, 1.9 s after, on 2 cores).
//!
//! So a training process keeps what it frees: one arena, no unmapping below glibc's 32 MiB cap,
//! no trimming, and heaps grown 256 MiB at a time. Memory then stays at the run's peak, which a
//! training run reaches in its first steps anyway.

/// Applies the settings above. Call it first thing in `main`, before any other thread allocates
/// (a thread keeps the arena it first allocated from). Without glibc it does nothing.
pub fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const MIB: i32 = 1 << 20;
        // SAFETY: mallopt only changes allocator parameters; glibc rejects out-of-range values.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, 1);
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 * MIB);
            libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
            libc::mallopt(libc::M_TOP_PAD, 256 * MIB);
        }
    }
}
