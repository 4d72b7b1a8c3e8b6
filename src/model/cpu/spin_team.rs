//! A team of helper threads that *spin* between short parallel sections, for the weight products of
//! a decode step. One decoded token reads every active weight once (~160 MB for `small`) in dozens
//! of products of 0.02–0.2 ms each; one core streams memory at about half the rate two do, but
//! handing each product to a rayon worker costs a futex wake-up (tens of microseconds) because the
//! worker has gone to sleep in between, which ate the gain. These helpers instead busy-wait for the
//! next section for [`SPIN`] after each one, so that a section costs a few hundred nanoseconds to
//! start while a decode step runs, and park (no CPU) once the model is idle.
//!
//! One caller at a time: a second thread that calls [`run`] while the team is busy (tests running
//! in parallel, two models in one process) runs all the parts itself, and so does a rayon worker,
//! whose pool already keeps the cores busy, and a thread inside [`alone`].

use std::cell::{Cell, UnsafeCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, TryLockError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long an idle helper spins before it parks.
const SPIN: Duration = Duration::from_micros(200);
/// At most this many helpers: a few cores saturate memory bandwidth.
const MAX_HELPERS: usize = 3;

/// The section being run: part 0 on the caller, part `i` on helper `i - 1`. A raw pointer because
/// the closure lives on the caller's stack; [`run`] does not return (or unwind) before every helper
/// has finished with it.
#[derive(Clone, Copy)]
struct Job {
    work: *const (dyn Fn(usize) + Sync),
}

struct Team {
    /// Bumped (under `caller`) to publish a new job; helpers run each generation once.
    generation: AtomicUsize,
    /// Helpers that have finished the current generation.
    finished: AtomicUsize,
    /// Whether a helper's part panicked in the current generation (re-raised on the caller).
    panicked: AtomicBool,
    job: UnsafeCell<Option<Job>>,
    /// Whether each helper is parked (or about to park) and needs an unpark to see new work.
    parked: Vec<AtomicBool>,
    threads: Vec<Thread>,
    caller: Mutex<()>,
}

// SAFETY: `job` is written only by the caller holding `caller`, before it publishes the generation
// (SeqCst) and after every helper has reported the previous one finished (Acquire); helpers read it
// only between those points, and dereference the pointer only then.
unsafe impl Sync for Team {}
unsafe impl Send for Team {}

thread_local! {
    static ALONE: Cell<bool> = const { Cell::new(false) };
}

/// Runs `f` with every section it starts run on this thread alone: for threads that each keep a
/// core busy already (the parallel micro-batches of a training step), where helpers spinning for
/// one of them would take turns with the others.
pub fn alone<R>(f: impl FnOnce() -> R) -> R {
    /// Restores the flag on return and on unwinding.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            ALONE.set(self.0);
        }
    }
    let _restore = Restore(ALONE.replace(true));
    f()
}

/// Runs `f` where the sections it starts can use the team: on this thread, or — called on a rayon
/// worker, where every section would run alone — on a thread of its own that the worker waits for.
/// For work that has the cores to itself while the pool's other workers wait for it (episodes
/// played in parallel that take turns on one model).
pub fn with_team<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    if rayon::current_thread_index().is_none() {
        return f();
    }
    thread::scope(|s| s.spawn(f).join()).unwrap_or_else(|payload| panic::resume_unwind(payload))
}

/// The number of parts [`run`] splits work into on this machine: one per helper plus the caller.
pub fn parts() -> usize {
    team().map_or(1, |t| t.threads.len() + 1)
}

/// Whether the team uses every core (helpers plus the caller), so that it can take over the
/// products that would otherwise be threaded over the rayon pool.
pub fn spans_all_cores() -> bool {
    parts() >= cores()
}

/// Cores available to the process, looked up once: `available_parallelism` reads the cgroup
/// quota files on every call, which cost a prefill ~2 % when it was asked per matrix product.
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `work(i)` for every `i` in `0..parts()` — 0 on the calling thread, the others on the
/// helpers — and returns when all are done. The caller runs every part itself when the team is
/// absent (one core) or busy with another caller.
pub fn run(work: &(dyn Fn(usize) + Sync)) {
    let Some(team) = team() else {
        return work(0);
    };
    let parts = team.threads.len() + 1;
    if rayon::current_thread_index().is_some() || ALONE.get() {
        // A rayon worker (one of several sequences evaluated in parallel, say) already shares
        // the cores with its siblings; spinning helpers would only take turns with them.
        return (0..parts).for_each(work);
    }
    // A panic re-raised below poisons the lock; the team itself is still sound.
    let _guard = match team.caller.try_lock() {
        Ok(guard) => guard,
        Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
        Err(TryLockError::WouldBlock) => return (0..parts).for_each(work),
    };
    // SAFETY: see `impl Sync for Team`. The lifetime is erased because this function waits for
    // every helper below, even when part 0 panics, before `work` can go out of scope.
    let work_ptr: *const (dyn Fn(usize) + Sync + '_) = work;
    unsafe {
        *team.job.get() = Some(Job {
            work: std::mem::transmute::<
                *const (dyn Fn(usize) + Sync + '_),
                *const (dyn Fn(usize) + Sync + 'static),
            >(work_ptr),
        });
    }
    team.finished.store(0, Ordering::Relaxed);
    team.panicked.store(false, Ordering::Relaxed);
    team.generation.fetch_add(1, Ordering::SeqCst);
    for (parked, thread) in team.parked.iter().zip(&team.threads) {
        if parked.load(Ordering::SeqCst) {
            thread.unpark();
        }
    }
    let own = panic::catch_unwind(AssertUnwindSafe(|| work(0)));
    while team.finished.load(Ordering::Acquire) < team.threads.len() {
        std::hint::spin_loop();
    }
    if let Err(payload) = own {
        panic::resume_unwind(payload);
    }
    if team.panicked.load(Ordering::Relaxed) {
        panic!("a part of a parallel section panicked on a helper thread");
    }
}

/// Calls `f(i, &mut items[i])` for every item, the items dealt round-robin over the parts.
pub fn for_each<T: Send>(items: &mut [T], f: &(dyn Fn(usize, &mut T) + Sync)) {
    let (len, parts) = (items.len(), parts());
    let base = items.as_mut_ptr() as usize;
    run(&|part| {
        for i in (part..len).step_by(parts) {
            // SAFETY: `run` calls each part once, and part p alone takes the indices ≡ p mod parts,
            // so no item is borrowed twice; `items` is borrowed mutably for the whole call.
            f(i, unsafe { &mut *(base as *mut T).add(i) });
        }
    });
}

fn team() -> Option<&'static Team> {
    static TEAM: OnceLock<Option<Team>> = OnceLock::new();
    TEAM.get_or_init(|| {
        let helpers = (cores() - 1).min(MAX_HELPERS);
        if helpers == 0 {
            return None;
        }
        // Each helper's first call to `team()` waits for this initialisation to finish.
        let threads = (0..helpers)
            .map(|i| {
                thread::Builder::new()
                    .name(format!("hat-spin-{i}"))
                    .spawn(move || helper(i))
                    .expect("spawning a helper thread")
                    .thread()
                    .clone()
            })
            .collect();
        Some(Team {
            generation: AtomicUsize::new(0),
            finished: AtomicUsize::new(0),
            panicked: AtomicBool::new(false),
            job: UnsafeCell::new(None),
            parked: (0..helpers).map(|_| AtomicBool::new(false)).collect(),
            threads,
            caller: Mutex::new(()),
        })
    })
    .as_ref()
}

/// Helper `index`'s loop: wait for a new generation (spinning, then parked), run part `index + 1`.
fn helper(index: usize) {
    let team = team().expect("helpers exist only in a team");
    let mut seen = 0;
    loop {
        let mut idle_since = Instant::now();
        let mut spins = 0u32;
        loop {
            let generation = team.generation.load(Ordering::Acquire);
            if generation != seen {
                seen = generation;
                break;
            }
            spins = spins.wrapping_add(1);
            if spins % 64 != 0 || idle_since.elapsed() < SPIN {
                std::hint::spin_loop();
                continue;
            }
            // Announce the park, then look once more: a caller that published after this store
            // sees the flag and unparks us (an unpark before the park makes it return at once).
            team.parked[index].store(true, Ordering::SeqCst);
            if team.generation.load(Ordering::SeqCst) == seen {
                thread::park();
            }
            team.parked[index].store(false, Ordering::SeqCst);
            idle_since = Instant::now();
        }
        // SAFETY: the caller wrote the job before publishing `seen` and keeps it alive until
        // `finished` counts this helper.
        let job = unsafe { (*team.job.get()).expect("a published job") };
        if panic::catch_unwind(AssertUnwindSafe(|| unsafe { (*job.work)(index + 1) })).is_err() {
            team.panicked.store(true, Ordering::Relaxed);
        }
        team.finished.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a section that records which parts ran, `rounds` times.
    fn record_parts(rounds: usize) {
        for _ in 0..rounds {
            let hits: Vec<AtomicUsize> = (0..parts()).map(|_| AtomicUsize::new(0)).collect();
            run(&|i| {
                hits[i].fetch_add(1, Ordering::Relaxed);
            });
            assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
        }
    }

    #[test]
    fn every_part_runs_once_per_section_even_with_concurrent_callers() {
        // Callers on four threads at once: one holds the team, the others run their parts alone.
        thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| record_parts(500));
            }
        });
        // And after the helpers have parked.
        thread::sleep(SPIN * 5);
        record_parts(3);
    }

    #[test]
    fn for_each_visits_every_item_once() {
        let mut items = vec![0usize; 37];
        for_each(&mut items, &|i, item| *item += i + 1);
        assert_eq!(items, (1..=37).collect::<Vec<_>>());
    }

    /// Every part of a section started on a rayon worker or inside `alone` runs on that thread.
    #[test]
    fn rayon_workers_and_threads_alone_run_every_part_themselves() {
        let parts_elsewhere = || {
            let caller = thread::current().id();
            let elsewhere = AtomicUsize::new(0);
            run(&|_| {
                if thread::current().id() != caller {
                    elsewhere.fetch_add(1, Ordering::Relaxed);
                }
            });
            elsewhere.load(Ordering::Relaxed)
        };
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        assert_eq!(pool.install(parts_elsewhere), 0);
        for _ in 0..100 {
            assert_eq!(alone(parts_elsewhere), 0);
        }
    }

    #[test]
    fn a_panicking_part_reaches_the_caller_and_the_team_keeps_working() {
        let last = parts() - 1;
        let result = panic::catch_unwind(|| run(&|i| assert_ne!(i, last, "part {i} fails")));
        assert!(result.is_err());
        record_parts(3);
        // The helpers still take parts (other tests may hold the team for a while: try for up to 20 s).
        if parts() > 1 {
            let caller = thread::current().id();
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
            let mut on_helper = false;
            while !on_helper && std::time::Instant::now() < deadline {
                let ran_elsewhere = AtomicBool::new(false);
                run(&|i| {
                    if i == 1 && thread::current().id() != caller {
                        ran_elsewhere.store(true, Ordering::Relaxed);
                    }
                });
                on_helper = ran_elsewhere.load(Ordering::Relaxed);
            }
            assert!(on_helper, "no part ran on a helper after the panic");
        }
    }
}
