//! The teacher: the pre-SFT base checkpoint, loaded in-process, which scores the student's sampled
//! tokens. OPD compares the two models token id by token id, so a teacher with another tokenizer or
//! vocabulary would score different text under the same ids: refused before anything runs.

use std::path::Path;

use anyhow::{bail, Result};

use crate::model::config::ModelConfig;

/// Fails unless the student's and the teacher's directories share one tokenizer (the same
/// token ↔ id map) and one vocabulary size, naming the first difference.
pub fn check_compatible(student: &Path, teacher: &Path) -> Result<()> {
    let (s, t) = (
        crate::tokenizer::load(student)?,
        crate::tokenizer::load(teacher)?,
    );
    let what = || {
        format!(
            "the teacher {} and the student {}",
            teacher.display(),
            student.display()
        )
    };
    let (sv, tv) = (s.get_vocab(true), t.get_vocab(true));
    if sv.len() != tv.len() {
        bail!(
            "{} have different tokenizers ({} vs {} tokens); OPD scores the student's token ids under \
             the teacher, so both must use the same tokenizer",
            what(),
            tv.len(),
            sv.len()
        );
    }
    let mut differing: Vec<(&String, &u32)> = sv
        .iter()
        .filter(|(tok, id)| tv.get(*tok) != Some(id))
        .collect();
    differing.sort_by_key(|(_, id)| **id);
    if let Some((tok, id)) = differing.first() {
        bail!(
            "{} have different tokenizers: {} of {} tokens differ, first {tok:?} (id {id} in the \
             student, {} in the teacher); OPD needs one tokenizer",
            what(),
            differing.len(),
            sv.len(),
            tv.get(*tok).map_or("absent".into(), |i| i.to_string())
        );
    }
    let (sc, tc) = (
        ModelConfig::from_dir(student)?,
        ModelConfig::from_dir(teacher)?,
    );
    if sc.vocab_size != tc.vocab_size {
        bail!(
            "{} have different vocabularies (config.json vocab_size {} vs {})",
            what(),
            tc.vocab_size,
            sc.vocab_size
        );
    }
    Ok(())
}
