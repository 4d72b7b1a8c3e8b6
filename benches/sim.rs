//! Throughput of the simulator + oracle teacher under the taolive sample harness: tasks generated,
//! episodes run through the agent runtime (prompt rendering, hooks, sandbox, success check).
//! `cargo bench --bench sim` prints episodes/s; run it on the target machine (2 cores in CI).

use std::path::Path;
use std::time::Instant;

use hat::agent::rollout::{run_batch, Summary};
use hat::agent::{Agent, SimEnv};
use hat::harness::Harness;
use hat::policy::oracle::Oracle;
use hat::record::Names;
use hat::sim::catalog::{Catalog, Split};
use hat::sim::faults::FaultPlan;
use hat::sim::tasks::{self, TaskConfig};

fn main() {
    let n: usize = std::env::var("HAT_BENCH_EPISODES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_000);
    let threads: usize = std::env::var("HAT_BENCH_THREADS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2);
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("harness-samples/taolive");
    let harness = Harness::load(&root).expect("sample harness loads");
    let catalog = Catalog::generate(7, 40);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("thread pool");

    let t0 = Instant::now();
    let tasks = pool
        .install(|| tasks::generate(&catalog, &TaskConfig::new(Split::Dev, 1), n))
        .expect("tasks");
    let gen_s = t0.elapsed().as_secs_f64();
    println!(
        "task generation: {n} tasks in {gen_s:.3} s = {:.0} tasks/s ({threads} threads)",
        n as f64 / gen_s
    );

    let agent = Agent::new(&harness, Names::default()).expect("agent");
    let oracle = Oracle::new(&harness, Names::default());
    for (label, faults) in [
        ("no faults", ""),
        (
            "faults",
            "timeout=0.1,malformed=0.05,permission_denied=0.03,empty=0.05",
        ),
    ] {
        let plan: FaultPlan = faults.parse().expect("fault plan");
        let env = SimEnv {
            catalog: &catalog,
            faults: &plan,
            seed: 1,
        };
        let (t0, cpu0) = (Instant::now(), cpu_seconds());
        let out = run_batch(&agent, &oracle, &tasks, &env, &pool);
        let s = t0.elapsed().as_secs_f64();
        let cpu = cpu_seconds() - cpu0;
        let mut summary = Summary::default();
        for t in out.iter().flatten() {
            summary.add(t);
        }
        println!(
            "rollout ({label}): {n} episodes in {s:.3} s = {:.0} episodes/s ({threads} threads), success {:.2}%",
            n as f64 / s,
            100.0 * summary.success_rate()
        );
        // Wall-clock rates drop when other work shares the cores; CPU time per episode does not.
        println!(
            "  cpu {:.3} ms per episode (hooks' child processes included) = {:.0} episodes/s on {threads} idle cores",
            1e3 * cpu / n as f64,
            threads as f64 * n as f64 / cpu
        );
    }
}

/// CPU seconds used by this process and its waited-for children (hook commands), from
/// /proc/self/stat (utime, stime, cutime, cstime; Linux's USER_HZ is 100). 0 elsewhere.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the parenthesised command name; utime is field 14 overall.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let ticks: f64 = after
        .split_whitespace()
        .skip(11)
        .take(4)
        .filter_map(|v| v.parse::<f64>().ok())
        .sum();
    ticks / 100.0
}
