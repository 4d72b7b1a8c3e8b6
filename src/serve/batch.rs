//! The engine's running batch for a burn model: one stacked [`Cache`] that stays stacked from
//! decode step to decode step. Before it, every step stacked each sequence's cache into a batch
//! and split it again afterwards (about 15 % of a batch-32 step of `small`); now a step only
//! appends, a sequence joining is written into a spare row, and one leaving hands its row to the
//! last one (see [`Cache::join`], [`Cache::keep_rows`]).
//!
//! Rows keep their padding as a gap in their keys (see [`Cache::gaps`]): a batch costs the
//! longest row's length in every row, as each stacked step did before.

use anyhow::Result;
use burn::prelude::*;

use crate::model::Cache;

/// Running sequences' decoding states, row r for the engine's sequence r.
pub struct RunningBatch<B: Backend> {
    /// `None` while no sequence runs.
    pub cache: Option<Cache<B>>,
    /// For MTP speculation, which only runs while one sequence does: the main model's final hidden
    /// state `[1, 1, H]` at that sequence's last fed token, and the MTP head's state once a round
    /// has primed it. Cleared whenever the batch changes.
    pub spec: Option<super::mtp::SpecState<B>>,
}

impl<B: Backend> Default for RunningBatch<B> {
    fn default() -> Self {
        Self {
            cache: None,
            spec: None,
        }
    }
}

impl<B: Backend> RunningBatch<B> {
    pub fn rows(&self) -> usize {
        self.cache.as_ref().map_or(0, Cache::rows)
    }

    /// Adds prefilled single-sequence caches as the last rows.
    pub fn join(&mut self, states: Vec<Cache<B>>) -> Result<()> {
        if states.is_empty() {
            return Ok(());
        }
        self.spec = None;
        self.cache = Some(match self.cache.take() {
            Some(c) => c.join(states)?,
            None => Cache::stack(&states)?,
        });
        Ok(())
    }

    /// Keeps rows `rows` (in that order) and drops the others.
    pub fn keep(&mut self, rows: &[usize]) -> Result<()> {
        let n = self.rows();
        if rows.len() == n && rows.iter().enumerate().all(|(i, &r)| i == r) {
            return Ok(());
        }
        self.spec = None;
        self.cache = match (self.cache.take(), rows.is_empty()) {
            (Some(c), false) => Some(c.keep_rows(rows)?),
            _ => None,
        };
        Ok(())
    }
}
