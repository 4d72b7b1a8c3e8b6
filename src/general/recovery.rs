//! How much of a drop a third model recovers: with pass rates `base`, `dropped` (e.g. after domain
//! SFT) and `recovered` (e.g. after OPD) on the same prompts, the share `(recovered − dropped) /
//! (base − dropped)` — 1 = all of it back, 0 = none, above 1 = past the base. Its 95% interval is a
//! percentile bootstrap over prompts: the three models' answers to a prompt are resampled together, so
//! the interval keeps the pairing (a prompt at the instruction level carries all its instructions).

use anyhow::{bail, Result};
use serde::Serialize;

use super::answers::{by_id, Answer, Level, Strictness};
use crate::rng::Rng;

/// Bootstrap resamples; the percentile interval's ends are the 2.5% and 97.5% quantiles.
const RESAMPLES: usize = 2000;

/// The share recovered at one level and mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Recovery {
    pub level: Level,
    pub mode: Strictness,
    /// Prompts all three files answered.
    pub prompts: usize,
    /// Passes of each model (prompts, or instructions of those prompts).
    pub passes: [usize; 3],
    pub cases: usize,
    /// `None` when base and dropped pass equally often: there is no drop to recover.
    pub share: Option<f64>,
    pub low: Option<f64>,
    pub high: Option<f64>,
}

/// The share of `base`'s lead over `dropped` that `recovered` wins back, on the prompts all three
/// answered, with a seeded bootstrap interval.
pub fn recovery(
    base: &[Answer],
    dropped: &[Answer],
    recovered: &[Answer],
    level: Level,
    mode: Strictness,
    seed: u64,
) -> Result<Recovery> {
    let (b, d, r) = (
        by_id(base, "the base")?,
        by_id(dropped, "the dropped model")?,
        by_id(recovered, "the recovered model")?,
    );
    // Per prompt: the passes of each model and its number of cases.
    let mut per_prompt: Vec<([usize; 3], usize)> = Vec::new();
    for (id, rb) in &b {
        let (Some(rd), Some(rr)) = (d.get(id), r.get(id)) else {
            continue;
        };
        if rd.instruction_id_list != rb.instruction_id_list
            || rr.instruction_id_list != rb.instruction_id_list
        {
            bail!("prompt id {id:?} has different instructions in the three files: not the same prompt");
        }
        let count = |a: &Answer| a.verdicts(level, mode).into_iter().filter(|&x| x).count();
        per_prompt.push((
            [count(rb), count(rd), count(rr)],
            rb.verdicts(level, mode).len(),
        ));
    }
    if per_prompt.is_empty() {
        bail!("the three answer files share no prompt id: nothing to compare");
    }
    // The passes of each model summed over some prompts, and the share they give.
    let totals = |rows: &mut dyn Iterator<Item = &([usize; 3], usize)>| -> [usize; 3] {
        let mut t = [0; 3];
        for (passes, _) in rows {
            for (total, x) in t.iter_mut().zip(passes) {
                *total += x;
            }
        }
        t
    };
    let share = |[base, dropped, recovered]: [usize; 3]| -> Option<f64> {
        (base != dropped)
            .then(|| (recovered as f64 - dropped as f64) / (base as f64 - dropped as f64))
    };
    let mut rng = Rng::new(seed);
    let n = per_prompt.len();
    let mut boots: Vec<f64> = (0..RESAMPLES)
        .filter_map(|_| share(totals(&mut (0..n).map(|_| &per_prompt[rng.below(n)]))))
        .collect();
    boots.sort_by(f64::total_cmp);
    let quantile = |q: f64| -> Option<f64> {
        (!boots.is_empty()).then(|| boots[((boots.len() - 1) as f64 * q).round() as usize])
    };
    let passes = totals(&mut per_prompt.iter());
    Ok(Recovery {
        level,
        mode,
        prompts: n,
        passes,
        cases: per_prompt.iter().map(|(_, c)| c).sum(),
        share: share(passes),
        low: quantile(0.025),
        high: quantile(0.975),
    })
}

impl Recovery {
    pub const HEADER: &'static str =
        "| level | mode | prompts | cases | base | dropped | recovered | share recovered [95% bootstrap] |\n|---|---|---|---|---|---|---|---|";

    pub fn row(&self) -> String {
        let f = |x: Option<f64>| x.map_or("–".into(), |v| format!("{v:.2}"));
        format!(
            "| {:?} | {:?} | {} | {} | {} | {} | {} | {} [{}, {}] |",
            self.level,
            self.mode,
            self.prompts,
            self.cases,
            self.passes[0],
            self.passes[1],
            self.passes[2],
            f(self.share),
            f(self.low),
            f(self.high)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(id: usize, strict: &[bool]) -> Answer {
        Answer {
            id: id.to_string(),
            prompt: String::new(),
            response: String::new(),
            instruction_id_list: vec!["x".into(); strict.len()],
            strict: strict.to_vec(),
            loose: strict.to_vec(),
            prompt_strict: strict.iter().all(|&x| x),
            prompt_loose: strict.iter().all(|&x| x),
        }
    }

    /// 40 prompts: the base passes 20, the dropped model 0 of those, the recovered one 15 of them —
    /// 0.75 recovered, an interval around it that a resample cannot push outside [0, 1] here.
    #[test]
    fn the_share_is_what_comes_back_of_the_drop() {
        let base: Vec<Answer> = (0..40).map(|i| answer(i, &[i < 20])).collect();
        let dropped: Vec<Answer> = (0..40).map(|i| answer(i, &[false])).collect();
        let recovered: Vec<Answer> = (0..40).map(|i| answer(i, &[i < 15])).collect();
        let run = || {
            recovery(
                &base,
                &dropped,
                &recovered,
                Level::Prompt,
                Strictness::Strict,
                1,
            )
            .unwrap()
        };
        let r = run();
        assert_eq!((r.prompts, r.cases, r.passes), (40, 40, [20, 0, 15]));
        assert_eq!(r.share, Some(0.75));
        let (low, high) = (r.low.unwrap(), r.high.unwrap());
        assert!(
            0.5 < low && low < 0.75 && 0.75 < high && high <= 1.0,
            "[{low}, {high}]"
        );
        let again = run();
        assert_eq!(again, r, "seeded");
    }

    /// Instructions of a prompt are counted one by one; no drop means no share.
    #[test]
    fn instructions_count_one_by_one_and_no_drop_has_no_share() {
        let base = vec![answer(0, &[true, true]), answer(1, &[true, false])];
        let dropped = vec![answer(0, &[false, false]), answer(1, &[false, false])];
        let recovered = vec![answer(0, &[true, false]), answer(1, &[false, false])];
        let r = recovery(
            &base,
            &dropped,
            &recovered,
            Level::Instruction,
            Strictness::Loose,
            1,
        )
        .unwrap();
        assert_eq!(
            (r.cases, r.passes, r.share),
            (4, [3, 0, 1], Some(1.0 / 3.0))
        );
        let flat = recovery(
            &base,
            &base,
            &recovered,
            Level::Prompt,
            Strictness::Strict,
            1,
        )
        .unwrap();
        assert_eq!(flat.share, None);
        let other = vec![answer(0, &[true])];
        assert!(recovery(
            &base,
            &dropped,
            &other,
            Level::Prompt,
            Strictness::Strict,
            1
        )
        .is_err());
    }
}
