//! Allocator settings for a process that trains or serves a model on the CPU.
//!
//! A CPU training step allocates and frees hundreds of megabytes (activations, their gradients,
//! logits over the vocabulary) in buffers of up to tens of megabytes, and so does a serving engine
//! (KV buffers of a few megabytes a sequence, copied when sequences join or a cached prefix is
//! continued). glibc's defaults hand such buffers back to the kernel when they are freed — buffers
//! over the mmap threshold are unmapped, free space above the trim threshold at the top of the heap
//! is released — and every step then faults the same pages in again, zeroed by the kernel. So these
//! processes keep what they free: no unmapping below glibc's 32 MiB cap, no trimming, the heap grown
//! 256 MiB at a time. Memory then stays at the run's peak, which a training run reaches in its first
//! steps and a server under load soon after.
//!
//! The micro-batch threads also each allocate from an arena of their own, whose heaps are capped at
//! 64 MiB and released the same way. For a wide model one shared arena is better: its buffers are
//! large and few, so the arena's lock is rarely contended. For a narrow one it is worse: many small
//! buffers, and tokenizing the records on every core, contend for that lock. Measured on 2 cores
//! (`cargo bench --bench train`, `teacher-distill train --stop-after 50` on `make distill`'s data):
//! `small` (512 wide) 4.1 s a step with glibc's defaults, 3.0 s with the settings above, 2.05 s
//! with one arena as well; `tiny` (64 wide) 53 s for 50 steps either way, ~12 % slower with one
//! arena, and its records took 3× as long to load.

/// Models at least this wide train from one arena (see above; `tiny` is 64, `small` 512).
const ONE_ARENA_MIN_WIDTH: usize = 256;

/// Applies the settings above for a model of `hidden_size`. Call it before any other
/// thread allocates (a thread keeps the arena it first allocated from). Without glibc it does nothing.
pub fn keep_freed_memory(hidden_size: usize) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        const MIB: i32 = 1 << 20;
        // SAFETY: mallopt only changes allocator parameters; glibc rejects out-of-range values.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 32 * MIB);
            libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
            libc::mallopt(libc::M_TOP_PAD, 256 * MIB);
            if hidden_size >= ONE_ARENA_MIN_WIDTH {
                libc::mallopt(libc::M_ARENA_MAX, 1);
            }
        }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = hidden_size;
}
