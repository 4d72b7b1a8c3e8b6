//! Stream-mode throughput of `hsa-augment` against a plain parse-and-serialise of the same records.
//! Records are oracle rollouts of simulated dev tasks under the taolive harness (system prompt, tools,
//! skill load, tool calls, reply). Run: `cargo bench --bench hsa`. Target: ratio <= 3x.

use std::collections::BTreeSet;
use std::time::Instant;

use hat::agent::{Agent, SimEnv};
use hat::harness::Harness;
use hat::hsa::{Augmenter, Config, Pool, Selection, Spec};
use hat::policy::oracle::Oracle;
use hat::record::{Names, Trajectory};
use hat::sim::catalog::{Catalog, Split};
use hat::sim::faults::FaultPlan;
use hat::sim::tasks::{self, TaskConfig};

fn main() {
    let base = Harness::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/harness-samples/taolive"
    ))
    .unwrap();
    let catalog = Catalog::generate(7, 40);
    let tasks = tasks::generate(&catalog, &TaskConfig::new(Split::Dev, 11), 400).unwrap();
    let agent = Agent::new(&base, Names::default()).unwrap();
    let oracle = Oracle::new(&base, Names::default());
    let plan = FaultPlan::default();
    let env = SimEnv {
        catalog: &catalog,
        faults: &plan,
        seed: 3,
    };
    let rollouts: Vec<Trajectory> = tasks
        .iter()
        .map(|t| agent.run(&oracle, t, &env).unwrap())
        .collect();
    let n = 4000;
    let lines: Vec<String> = (0..n)
        .map(|i| {
            let mut r = rollouts[i % rollouts.len()].clone();
            r.id = format!("{}-{i}", r.id);
            serde_json::to_string(&r).unwrap()
        })
        .collect();
    let bytes: usize = lines.iter().map(String::len).sum();
    println!(
        "hsa bench: {n} oracle trajectories, {:.1} MB ({} bytes/record)",
        bytes as f64 / 1e6,
        bytes / n
    );

    let spec = Spec {
        config: Config::default(),
        selection: Selection::default(),
        pool: Pool::Train,
        keep_skills: BTreeSet::new(),
        paraphraser: Default::default(),
    };
    let t = Instant::now();
    let aug = Augmenter::new(&base, &spec, 1, 32).unwrap();
    println!(
        "variant pool of 32 drawn and prepared in {:.0} ms",
        t.elapsed().as_secs_f64() * 1e3
    );

    let best_of = |f: &dyn Fn() -> usize| {
        (0..3)
            .map(|_| {
                let t = Instant::now();
                assert_eq!(f(), n);
                t.elapsed().as_secs_f64()
            })
            .fold(f64::MAX, f64::min)
    };
    let plain = best_of(&|| {
        let mut out = Vec::with_capacity(bytes);
        for line in &lines {
            let r: Trajectory = serde_json::from_str(line).unwrap();
            serde_json::to_writer(&mut out, &r).unwrap();
            out.push(b'\n');
        }
        lines.len()
    });
    let hsa = best_of(&|| {
        let mut out = Vec::with_capacity(bytes * 2);
        let mut count = 0;
        for line in &lines {
            let r: Trajectory = serde_json::from_str(line).unwrap();
            for c in aug.augment(&r, 1).unwrap() {
                serde_json::to_writer(&mut out, &c).unwrap();
                out.push(b'\n');
                count += 1;
            }
        }
        count
    });
    println!("plain parse+serialise: {:>9.0} records/s", n as f64 / plain);
    println!("hsa stream (--n 1):    {:>9.0} records/s", n as f64 / hsa);
    println!(
        "ratio hsa / plain:     {:>9.2}x (target <= 3x)",
        hsa / plain
    );
}
