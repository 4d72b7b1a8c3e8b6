//! The teacher, which scores the student's sampled tokens: the pre-SFT base checkpoint loaded
//! in-process, or any OpenAI-compatible server returning vLLM's `prompt_logprobs` (our `serve`, vLLM,
//! SGLang), so the teacher can be a model too large for the trainer's machine. OPD compares the two
//! models token id by token id, so a teacher with another tokenizer or vocabulary would score
//! different text under the same ids: refused (a checkpoint before anything runs, an endpoint on its
//! first answer). A run may also give domain prompts their own teacher ([`Teachers`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{bail, Result};
use burn::tensor::backend::AutodiffBackend;
use tokenizers::Tokenizer;

use crate::model::config::ModelConfig;
use crate::model::CausalLm;
use crate::policy::prompt_logprobs::{PromptLogprobsClient, PromptLogprobsConfig, ScoredToken};
use crate::train::view::TrainingView;

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

/// Where the teacher's log-probabilities come from.
pub enum Teacher<B: AutodiffBackend> {
    /// A checkpoint loaded in-process: both losses (the full-vocabulary one needs its logits).
    Model(CausalLm<B>),
    /// An OpenAI-compatible server with vLLM's `prompt_logprobs`: the log-probability of each sampled
    /// token is all the reverse-KL advantage needs; the generalized JSD uses the top k at each
    /// position ([`super::gjsd::top_k_generalized_jsd_sum`]).
    Endpoint(EndpointTeacher),
}

impl<B: AutodiffBackend> From<CausalLm<B>> for Teacher<B> {
    fn from(model: CausalLm<B>) -> Self {
        Teacher::Model(model)
    }
}

impl<B: AutodiffBackend> From<EndpointTeacher> for Teacher<B> {
    fn from(endpoint: EndpointTeacher) -> Self {
        Teacher::Endpoint(endpoint)
    }
}

/// A run's teachers: the general one (the pre-SFT base) for general prompts, and optionally another
/// for domain prompts. OPD from the base alone pulls the domain turns towards a model that never saw
/// a harness; with the SFT model itself as the domain teacher, the domain turns are held where SFT
/// left them while the general ones move back to the base.
pub struct Teachers<B: AutodiffBackend> {
    pub general: Teacher<B>,
    /// Scores the domain prompts' samples; `None` = the general teacher scores every prompt.
    pub domain: Option<Teacher<B>>,
}

impl<B: AutodiffBackend> From<CausalLm<B>> for Teachers<B> {
    fn from(model: CausalLm<B>) -> Self {
        Teachers {
            general: model.into(),
            domain: None,
        }
    }
}

impl<B: AutodiffBackend> From<EndpointTeacher> for Teachers<B> {
    fn from(endpoint: EndpointTeacher) -> Self {
        Teachers {
            general: endpoint.into(),
            domain: None,
        }
    }
}

/// What a teacher said about some views' trained tokens.
#[derive(Debug, Default)]
pub struct TeacherScores {
    /// Per view, the log-probability of each trained token.
    pub logprobs: Vec<Vec<f64>>,
    /// Per view, per trained token, an endpoint teacher's most likely tokens and their
    /// log-probabilities, most likely first (empty when none were asked for, and for views scored
    /// in-process).
    pub top: Vec<Vec<Vec<(u32, f64)>>>,
}

/// A teacher behind `/v1/completions` with `prompt_logprobs`: every view (prompt + sampled tokens) is
/// sent as token ids and the teacher's log-probability of each trained token read back.
pub struct EndpointTeacher {
    client: PromptLogprobsClient,
    /// The student's tokenizer, to notice a server that decodes our ids to other text.
    tokenizer: Tokenizer,
    checked: AtomicBool,
}

impl EndpointTeacher {
    pub fn new(cfg: PromptLogprobsConfig, tokenizer: Tokenizer) -> Self {
        EndpointTeacher {
            client: PromptLogprobsClient::new(cfg),
            tokenizer,
            checked: AtomicBool::new(false),
        }
    }

    pub fn endpoint(&self) -> &str {
        self.client.endpoint()
    }

    /// The teacher's log-probability of every view's trained tokens, in score order (the order
    /// [`crate::rl::update::logprobs`] returns them in).
    pub fn logprobs(&self, views: &[TrainingView]) -> Result<Vec<Vec<f64>>> {
        Ok(self.score(views, 0)?.logprobs)
    }

    /// [`Self::logprobs`], and with `top_k` > 0 the teacher's `top_k` most likely tokens at every
    /// trained position. The first answer is checked against the student's tokenizer.
    pub fn score(&self, views: &[TrainingView], top_k: usize) -> Result<TeacherScores> {
        let prompts: Vec<Vec<u32>> = views.iter().map(|v| v.tokens.clone()).collect();
        let scored = self.client.score_all(&prompts, top_k)?;
        if let (false, Some(first), Some(view)) = (
            self.checked.load(Ordering::Relaxed),
            scored.first(),
            views.first(),
        ) {
            self.check_tokenizer(&view.tokens, first)?;
            self.checked.store(true, Ordering::Relaxed);
        }
        let mut out = TeacherScores::default();
        for (v, s) in views.iter().zip(&scored) {
            anyhow::ensure!(
                v.loss_mask.first() != Some(&1),
                "{}: the first token of a view cannot be scored",
                v.id
            );
            // Entry t − 1 is the teacher's view of token t given tokens < t.
            let trained: Vec<&ScoredToken> = (1..v.len())
                .filter(|&t| v.loss_mask[t] == 1)
                .map(|t| &s[t - 1])
                .collect();
            out.logprobs
                .push(trained.iter().map(|s| s.logprob).collect());
            if top_k == 0 {
                continue;
            }
            let mut tops = Vec::with_capacity(trained.len());
            for s in trained {
                // vLLM adds the prompt's own token to the top k when it is not among them.
                anyhow::ensure!(
                    s.alternatives.len() >= top_k,
                    "the teacher at {} returned {} log-probs at a position of {}, fewer than the \
                     {top_k} asked for (--teacher-top-k; vLLM serves at most --max-logprobs)",
                    self.endpoint(),
                    s.alternatives.len(),
                    v.id
                );
                tops.push(s.alternatives[..top_k].to_vec());
            }
            out.top.push(tops);
        }
        Ok(out)
    }

    /// Refuses a server whose tokenizer maps our ids to other tokens: OPD compares the two models
    /// token id by token id. A server's `decoded_token` may be the decoded text (ours, vLLM's
    /// decode) or the raw vocabulary entry (`Ġthe`), so either counts as the same; pieces that are
    /// partial UTF-8 (decoded as U+FFFD) are not compared.
    fn check_tokenizer(&self, ids: &[u32], scored: &[ScoredToken]) -> Result<()> {
        let mut compared = 0;
        let mut differing = Vec::new();
        for (id, s) in ids[1..].iter().zip(scored) {
            let Some(theirs) = &s.decoded else { continue };
            let text = self.tokenizer.decode(&[*id], false).unwrap_or_default();
            if text.contains('\u{FFFD}') || theirs.contains('\u{FFFD}') {
                continue;
            }
            compared += 1;
            let raw = self.tokenizer.id_to_token(*id);
            if &text != theirs && raw.as_ref() != Some(theirs) {
                differing.push((*id, text, theirs.clone()));
            }
        }
        if let Some((id, ours, theirs)) = differing.first() {
            bail!(
                "the teacher at {} has another tokenizer: {} of {compared} of the student's tokens \
                 decode to other text (first: id {id} is {ours:?} for the student, {theirs:?} for the \
                 teacher); OPD scores the student's token ids under the teacher, so both must use \
                 one tokenizer",
                self.endpoint(),
                differing.len()
            );
        }
        Ok(())
    }
}
