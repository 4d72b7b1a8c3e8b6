//! How many prompt tokens an engine iteration prefills beside the running sequences (chunked
//! prefill). A fixed number of tokens cannot hold a latency target: what a token costs depends on
//! the model, the machine, the batch and how deep into its prompt the piece is (`small` on 2 CPU
//! cores: with 16-token pieces the P95 gap read 1.5–3.9× the quiet one over a day's runs). So the budget
//! is derived from the target, as Sarathi-Serve derives its token budget from a time-between-tokens
//! SLO, and kept current from the step times the engine measures: a step that carries prompt
//! tokens should take at most `stretch` × a step without them.

/// Tokens of the first piece, before any piece step has been timed: small, so that a piece too
/// dear for the target costs one step, and the budget grows from there.
const FIRST_PIECE: usize = 4;

/// Weight of the newest time in the running averages: a few steps follow a change of batch.
const SMOOTHING: f64 = 0.25;

/// The per-iteration prefill budget and the step times it is sized from.
#[derive(Debug, Clone)]
pub struct PieceBudget {
    /// Most prompt tokens an iteration prefills beside running sequences (`--prefill-chunk`;
    /// 0: no chunking).
    max: usize,
    /// A step carrying prompt tokens takes at most this × a step without (`--max-itl-stretch`;
    /// 0: every piece is `max` tokens).
    stretch: f64,
    /// Seconds of a step without prompt tokens (running average).
    quiet: Option<f64>,
    /// Seconds each prompt token adds to a step (running average).
    per_token: Option<f64>,
}

impl PieceBudget {
    pub fn new(max: usize, stretch: f64) -> Self {
        PieceBudget {
            max,
            stretch,
            quiet: None,
            per_token: None,
        }
    }

    /// Prompt tokens the next iteration may prefill beside the running sequences: 0 when chunking
    /// is off, otherwise at least 1, so that a waiting prompt always moves.
    pub fn tokens(&self) -> usize {
        if self.max == 0 || self.stretch <= 0.0 {
            return self.max;
        }
        let (Some(quiet), Some(per_token)) = (self.quiet, self.per_token) else {
            return FIRST_PIECE.min(self.max);
        };
        let spare = (self.stretch - 1.0).max(0.0) * quiet;
        // A token that measured as free (timing noise) allows `max`.
        let tokens = if per_token > 0.0 {
            (spare / per_token).min(self.max as f64) as usize
        } else {
            self.max
        };
        tokens.clamp(1, self.max)
    }

    /// Records a step of the running sequences that took `seconds` and prefilled `prompt_tokens`
    /// beside them. Each token is charged an equal share of the time above a quiet step, so a
    /// piece's fixed cost (weights its tokens add to the step's reads) makes small pieces look
    /// dear per token: the budget then grows until the whole piece meets the target, the fixed
    /// point of `budget = spare / (cost(budget) / budget)`.
    pub fn record(&mut self, seconds: f64, prompt_tokens: usize) {
        if prompt_tokens == 0 {
            self.quiet = Some(average(self.quiet, seconds));
        } else if let Some(quiet) = self.quiet {
            let per_token = (seconds - quiet).max(0.0) / prompt_tokens as f64;
            self.per_token = Some(average(self.per_token, per_token));
        }
    }
}

fn average(old: Option<f64>, new: f64) -> f64 {
    old.map_or(new, |old| old + SMOOTHING * (new - old))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A step of 12 ms; a piece of `t` tokens adds a fixed 3.4 ms (the experts its tokens add to
    /// the step's reads) and 0.9 ms a token: roughly `small`'s on 2 cores.
    fn step_ms(tokens: usize) -> f64 {
        12.0 + if tokens > 0 {
            3.4 + 0.9 * tokens as f64
        } else {
            0.0
        }
    }

    /// Runs `steps` iterations that each carry a piece (after `quiet` steps without) and returns
    /// the budgets chosen.
    fn run(budget: &mut PieceBudget, quiet: usize, steps: usize) -> Vec<usize> {
        for _ in 0..quiet {
            budget.record(step_ms(0) / 1e3, 0);
        }
        (0..steps)
            .map(|_| {
                let t = budget.tokens();
                budget.record(step_ms(t) / 1e3, t);
                t
            })
            .collect()
    }

    #[test]
    fn the_budget_settles_on_the_largest_piece_within_the_stretch() {
        let mut budget = PieceBudget::new(256, 1.75);
        let chosen = run(&mut budget, 5, 60);
        assert_eq!(chosen[0], FIRST_PIECE, "no piece timed yet");
        // 12 + 3.4 + 0.9 t <= 1.75 × 12  <=>  t <= 6.2; growing from below, the rounding down
        // may stop it a token short.
        let settled = *chosen.last().unwrap();
        assert!((5..=6).contains(&settled), "chosen: {chosen:?}");
        assert!(step_ms(6) <= 1.75 * step_ms(0) && step_ms(7) > 1.75 * step_ms(0));
        // From above (a piece timed at 16 tokens), it comes down to the largest.
        let mut from_above = PieceBudget::new(256, 1.75);
        run(&mut from_above, 5, 0);
        from_above.record(step_ms(16) / 1e3, 16);
        assert_eq!(*run(&mut from_above, 0, 60).last().unwrap(), 6);
        // A looser target allows more: 12 + 3.4 + 0.9 t <= 3 × 12  <=>  t <= 22.9.
        let mut loose = PieceBudget::new(256, 3.0);
        let settled = *run(&mut loose, 5, 60).last().unwrap();
        assert!((21..=22).contains(&settled), "{settled}");
    }

    #[test]
    fn limits_and_switches() {
        // The cap holds however cheap tokens measure.
        let mut capped = PieceBudget::new(4, 3.0);
        assert!(run(&mut capped, 5, 30).iter().all(|&t| t == 4));
        // Chunking off, and a fixed chunk.
        assert_eq!(PieceBudget::new(0, 1.75).tokens(), 0);
        let mut fixed = PieceBudget::new(64, 0.0);
        assert!(run(&mut fixed, 5, 10).iter().all(|&t| t == 64));
        // A target no piece can meet still moves the prompt, a token at a time.
        let mut tight = PieceBudget::new(256, 1.1);
        assert_eq!(*run(&mut tight, 5, 30).last().unwrap(), 1);
        // Without a quiet step there is nothing to measure a piece against.
        let mut blind = PieceBudget::new(256, 1.75);
        assert!(run(&mut blind, 0, 10).iter().all(|&t| t == FIRST_PIECE));
        // A piece that timed as free (noise) does not make the next one unbounded.
        let mut noisy = PieceBudget::new(256, 1.75);
        run(&mut noisy, 5, 30);
        noisy.record(0.011, 6);
        assert!(noisy.tokens() <= 9, "{}", noisy.tokens());
    }
}
