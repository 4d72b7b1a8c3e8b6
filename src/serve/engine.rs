//! The continuous-batching engine: one thread owns the model; requests wait in a bounded queue; each
//! iteration admits waiting requests (up to the batch limit, prefilled together), then runs one batched
//! decode step over every active sequence, samples each sequence's next token, streams its text over the request's
//! channel, and retires finished sequences at once so their slots refill on the next iteration.
//!
//! The engine is generic over [`StepModel`] (prefill prompts, decode one token for many sequences), so
//! it runs the same on any burn backend; `serve::model` implements it for [`crate::model::CausalLm`].

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::Result;
use tokenizers::Tokenizer;
use tokio::sync::mpsc::UnboundedSender;

use super::detok::Detokenizer;
use super::guide::{Guide, TokenTable};
use super::metrics::{Metrics, Phase};
use super::piece_budget::PieceBudget;
use crate::model::generation::cache::fill_holes;
use crate::model::generation::sampling::{Sampled, Sampler, SamplingParams};

/// What the engine needs from a model.
pub trait StepModel: Send + 'static {
    /// A prefilled sequence's decoding state (the KV / recurrent cache).
    type State: Send;
    /// The running sequences' states, kept in place from step to step (see `serve::batch`).
    type Batch: Send;
    fn vocab_size(&self) -> usize;
    /// Replaces the weights with the checkpoint in `dir` (same tokenizer). Called only while no
    /// sequence runs or waits half-prefilled.
    fn load_weights(&mut self, dir: &Path) -> Result<()> {
        anyhow::bail!(
            "this model cannot load new weights (asked for {})",
            dir.display()
        )
    }
    /// Runs the prompts, each continuing its [`Partial`] prefill when it has one (or a cached
    /// prefix), batched where it can: the requests admitted in one iteration arrive together. One
    /// result per prompt, so that a bad prompt fails alone.
    fn prefill_batch(
        &mut self,
        prompts: Vec<(&[u32], Option<Partial<Self::State>>)>,
    ) -> Vec<Result<Prefilled<Self::State>>>;
    fn new_batch(&self) -> Self::Batch;
    /// Adds prefilled sequences as the batch's last rows.
    fn join(&self, batch: &mut Self::Batch, states: Vec<Self::State>) -> Result<()>;
    /// Keeps rows `rows` (in that order), dropping the others' states.
    fn keep(&self, batch: &mut Self::Batch, rows: &[usize]) -> Result<()>;
    /// Feeds `tokens[i]` to row `i`, all in one batched forward, and returns each one's logits.
    /// With a `piece`, the same forward also prefills the next piece of a waiting prompt, without
    /// logits (chunked prefill: the piece shares the step's weight reads, so the running sequences
    /// wait little for it).
    fn decode(
        &mut self,
        tokens: &[u32],
        batch: &mut Self::Batch,
        piece: Option<Piece<'_, Self::State>>,
    ) -> Result<Decoded<Self::State>>;
    /// Tokens the model may draft per speculative round for a lone sequence (0: no speculation).
    fn draft_tokens(&self) -> usize {
        0
    }
    /// Whether the batch (of one row) can speculate now: a plain step may be needed first.
    fn can_speculate(&self, _batch: &Self::Batch) -> bool {
        false
    }
    /// One speculative round for the batch's only row, whose next input is `last`, drafting `k`
    /// tokens: `choose` gets the main model's logits of each checked position in order and says
    /// which token the sequence took and whether it goes on.
    fn speculate(
        &self,
        _batch: &mut Self::Batch,
        _last: u32,
        _k: usize,
        _choose: &mut dyn FnMut(&[f32]) -> (Option<u32>, bool),
    ) -> Result<SpecRound> {
        anyhow::bail!("this model does not speculate")
    }
}

pub use crate::model::generation::speculative::Round as SpecRound;

/// Default (most) prompt tokens an engine iteration prefills while sequences decode
/// (`--prefill-chunk`): one prefix-cache block, so that a long prompt stalls the running sequences
/// for a bounded time (~0.2–0.26 s of `small` on 2 CPU cores) instead of its whole prefill. Smaller
/// pieces cost more per token (each reads the step's weights for few tokens): the agent replay of
/// `small` (script mode, int8, 1 request/s) reads e2e P50 3.3 s with 256, 7.4 s with 16 (2026-12-07).
pub const PREFILL_CHUNK: usize = 256;

/// Default of `--max-itl-stretch`: off, pieces of [`PREFILL_CHUNK`] tokens. Interactive chat that
/// wants the running sequences' inter-token latency steady while long prompts arrive sets a target,
/// e.g. 1.75 (a step carrying prompt tokens at most 1.75× one without: P95 within 2× of the quiet
/// one in `cargo bench --bench serve`), and pays with slower prefill of the arriving prompts
/// whenever sequences are running (see [`PieceBudget`]).
pub const MAX_ITL_STRETCH: f64 = 0.0;

/// How long an idle engine, woken by a request, keeps listening for more before it starts: a
/// burst of clients lands over a few hundred microseconds, and a prompt that misses the first
/// iteration waits to be prefilled a piece per decode step beside the others (with 16-token
/// pieces a burst of 32 `small` requests lost a quarter of its members that way, and ~40 % of its
/// rate). Each arrival extends the wait, so a lone request pays one gap, far below its prefill.
pub const BURST_GAP: Duration = Duration::from_micros(500);

/// A prompt prefilled part of the way ahead of its admission (chunked prefill): the decoding state
/// after its first `pos` tokens, of which the first `cached_tokens` came from the prefix cache.
pub struct Partial<S> {
    pub state: S,
    pub pos: usize,
    pub cached_tokens: usize,
}

/// The next piece of a waiting prompt, to prefill inside a decode step (chunked prefill).
pub struct Piece<'a, S> {
    pub prompt: &'a [u32],
    /// How far it is prefilled (`None`: not yet; the model starts from its longest cached prefix).
    pub partial: Option<Partial<S>>,
    /// Prompt tokens to advance by, at most (the model stops sooner at a prefix-cache stop). The
    /// prompt's last token is taken only with the whole rest, which ends its prefill.
    pub budget: usize,
}

/// What a decode step gives: each row's logits and, when it carried a piece, how far the piece
/// took its prompt (`Err`: that prompt cannot be prefilled; the step ran without it).
pub struct Decoded<S> {
    pub logits: Vec<Vec<f32>>,
    pub piece: Option<Result<Advanced<S>>>,
}

/// How far a decode step's piece took its prompt.
pub enum Advanced<S> {
    /// Part of the way: the prompt waits for its next piece.
    Partial(Partial<S>),
    /// To its end, with the logits of its last token: the sequence starts.
    Prefilled(Prefilled<S>),
}

/// A prefilled prompt: its state, the logits of its last position, and how many of its tokens
/// came from a cached prefix instead of being computed.
pub struct Prefilled<S> {
    pub state: S,
    pub logits: Vec<f32>,
    pub cached_tokens: usize,
}

/// One generation request.
pub struct GenRequest {
    pub prompt: Vec<u32>,
    pub params: SamplingParams,
    /// Alternatives returned with each token's log-probability (0 = none).
    pub top_logprobs: usize,
    /// Name log-prob tokens `token_id:N` instead of by their text (vLLM's
    /// `return_tokens_as_token_ids`).
    pub tokens_as_ids: bool,
    /// Constrains the output to one tool call (forced `tool_choice`).
    pub guide: Option<Guide>,
    pub events: UnboundedSender<Event>,
}

/// A generated token with its log-probability and the most likely alternatives.
#[derive(Debug, Clone, PartialEq)]
pub struct TokenLogprob {
    pub token: String,
    pub logprob: f32,
    pub top: Vec<(String, f32)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FinishReason {
    /// An end-of-turn token, a stop string, or a completed guided call.
    Stop,
    /// `max_tokens` or the context length reached.
    Length,
}

#[derive(Debug)]
pub enum Event {
    /// Text that may be shown now (possibly empty while held back) for `tokens` new tokens.
    Text {
        text: String,
        tokens: usize,
        logprobs: Vec<TokenLogprob>,
    },
    Done {
        reason: FinishReason,
        prompt_tokens: usize,
        completion_tokens: usize,
    },
    Error(String),
}

#[derive(Debug, Clone, Copy)]
pub struct EngineConfig {
    /// Requests that may wait for a slot; beyond it `submit` fails fast (HTTP 429).
    pub queue_capacity: usize,
    /// Sequences decoded together at most.
    pub max_batch: usize,
    /// Prompt + generated tokens per sequence.
    pub max_context: usize,
    /// Most prompt tokens prefilled per iteration while sequences decode (chunked prefill; 0: a
    /// new prompt is prefilled in one piece, however long the running sequences then wait).
    pub prefill_chunk: usize,
    /// Pieces are sized so that a step carrying one takes at most this × a step without (0:
    /// every piece is `prefill_chunk` tokens).
    pub max_itl_stretch: f64,
}

#[derive(Debug, PartialEq, Eq)]
pub enum SubmitError {
    QueueFull,
    ShuttingDown,
}

/// New weights to load from a checkpoint directory, and where to say how it went.
struct WeightUpdate {
    dir: PathBuf,
    done: tokio::sync::oneshot::Sender<Result<(), String>>,
}

/// What the engine's queue carries: requests to generate for, in arrival order, and weight updates,
/// which wait for the sequences before them to finish and hold back those after them (no sequence
/// mixes two sets of weights).
enum Work {
    Generate(GenRequest),
    LoadWeights(WeightUpdate),
}

/// The HTTP side's handle. Dropping every handle lets the engine finish its work and stop.
#[derive(Clone)]
pub struct EngineHandle {
    tx: SyncSender<Work>,
    metrics: Arc<Metrics>,
    pub max_context: usize,
}

impl EngineHandle {
    pub fn submit(&self, req: GenRequest) -> Result<(), SubmitError> {
        self.metrics.queue_depth.fetch_add(1, Relaxed);
        self.tx.try_send(Work::Generate(req)).map_err(|e| {
            self.metrics.queue_depth.fetch_sub(1, Relaxed);
            refused(e)
        })
    }

    /// Queues loading the checkpoint in `dir`; the receiver says how it went, once the sequences
    /// queued before it have finished.
    pub fn load_weights(
        &self,
        dir: PathBuf,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<(), String>>, SubmitError> {
        let (done, rx) = tokio::sync::oneshot::channel();
        self.tx
            .try_send(Work::LoadWeights(WeightUpdate { dir, done }))
            .map_err(refused)?;
        Ok(rx)
    }
}

fn refused<T>(e: TrySendError<T>) -> SubmitError {
    match e {
        TrySendError::Full(_) => SubmitError::QueueFull,
        TrySendError::Disconnected(_) => SubmitError::ShuttingDown,
    }
}

/// Starts the engine thread.
pub fn spawn<M: StepModel>(
    model: M,
    tokenizer: Arc<Tokenizer>,
    config: EngineConfig,
    metrics: Arc<Metrics>,
) -> (EngineHandle, JoinHandle<()>) {
    let (tx, rx) = mpsc::sync_channel(config.queue_capacity.max(1));
    let handle = EngineHandle {
        tx,
        metrics: metrics.clone(),
        max_context: config.max_context,
    };
    let thread = std::thread::Builder::new()
        .name("hat-engine".into())
        .spawn(move || {
            let table = TokenTable::new(&tokenizer, model.vocab_size());
            Engine {
                model,
                tokenizer,
                table,
                config,
                metrics,
                active: Vec::new(),
                batch: None,
                warming: VecDeque::new(),
                budget: PieceBudget::new(config.prefill_chunk, config.max_itl_stretch),
            }
            .run(rx)
        })
        .expect("spawning the engine thread");
    (handle, thread)
}

/// A sequence in the running batch.
struct Active {
    req: GenRequest,
    sampler: Sampler,
    detok: Detokenizer,
    /// The token to feed on the next decode step.
    last: u32,
    generated: usize,
    finished: Option<FinishReason>,
}

struct Engine<M: StepModel> {
    model: M,
    tokenizer: Arc<Tokenizer>,
    table: TokenTable,
    config: EngineConfig,
    metrics: Arc<Metrics>,
    /// `active[i]` decodes with row `i` of `batch` (made on the engine thread: `None` until then).
    active: Vec<Active>,
    batch: Option<M::Batch>,
    /// Long prompts being prefilled a chunk per iteration (see [`Engine::ready`]).
    warming: VecDeque<Warming<M::State>>,
    /// How many prompt tokens an iteration may prefill beside running sequences.
    budget: PieceBudget,
}

/// A request waiting for admission and how far its prompt is prefilled.
struct Warming<S> {
    req: GenRequest,
    partial: Option<Partial<S>>,
}

impl<S> Warming<S> {
    fn new(req: GenRequest) -> Self {
        Warming { req, partial: None }
    }

    /// Prompt tokens not prefilled yet (a cached prefix the model has not looked up counts here).
    fn left(&self) -> usize {
        self.req.prompt.len() - self.partial.as_ref().map_or(0, |p| p.pos)
    }
}

impl<M: StepModel> Engine<M> {
    fn run(mut self, rx: Receiver<Work>) {
        self.batch = Some(self.model.new_batch());
        let mut open = true;
        // A weight update waiting for the running sequences to finish; nothing new is taken meanwhile.
        let mut update: Option<WeightUpdate> = None;
        loop {
            let busy = !self.active.is_empty() || !self.warming.is_empty();
            if !busy {
                if let Some(u) = update.take() {
                    self.load_weights(u);
                }
            }
            if !open && !busy {
                break;
            }
            let mut incoming = Vec::new();
            // Idle: block until work arrives (or every handle is gone), then take the rest of its
            // burst (nobody is decoding, so waiting [`BURST_GAP`]s stalls no one).
            if !busy {
                match rx.recv() {
                    Ok(work) => self.take(work, &mut incoming, &mut update),
                    Err(_) => break,
                }
            }
            let gap = if busy { Duration::ZERO } else { BURST_GAP };
            while open
                && update.is_none()
                && self.active.len() + self.warming.len() + incoming.len() < self.config.max_batch
            {
                match rx.recv_timeout(gap) {
                    Ok(work) => self.take(work, &mut incoming, &mut update),
                    Err(mpsc::RecvTimeoutError::Timeout) => break,
                    Err(mpsc::RecvTimeoutError::Disconnected) => open = false,
                }
            }
            let (admitted, piece) = self.ready(incoming);
            // An iteration that prefills beside running sequences is timed whole (admissions,
            // step and departures), since all of it delays their next token.
            let beside = !self.active.is_empty();
            let started = Instant::now();
            let admitted_tokens: usize = admitted.iter().map(Warming::left).sum();
            self.admit(admitted);
            self.retire();
            if !self.active.is_empty() {
                let piece_tokens = self.step(piece);
                self.retire();
                if let (true, Some(piece_tokens)) = (beside, piece_tokens) {
                    let seconds = started.elapsed().as_secs_f64();
                    self.budget.record(seconds, admitted_tokens + piece_tokens);
                }
            } else if let Some((w, _)) = piece {
                self.warming.push_front(w); // prefilled in one piece next time round
            }
        }
    }

    /// Chunked prefill: while sequences decode, an iteration prefills at most the budget's prompt
    /// tokens ([`PieceBudget::tokens`]), so that new prompts do not stall the running
    /// sequences for their whole prefill. The first waiting prompt is the piece that the decode
    /// step prefills beside the running sequences ([`StepModel::decode`]; the step ends its prefill
    /// when its rest fits); in arrival order, later prompts whose rest fits what is left of the
    /// budget are admitted (prefilled together before the step), and the others wait. Returns the
    /// requests to admit and the piece's request with its budget.
    fn ready(
        &mut self,
        incoming: Vec<GenRequest>,
    ) -> (Vec<Warming<M::State>>, Option<(Warming<M::State>, usize)>) {
        let mut waiting = std::mem::take(&mut self.warming);
        waiting.extend(incoming.into_iter().map(Warming::new));
        let chunk = self.budget.tokens();
        self.metrics.prefill_budget.store(chunk as u64, Relaxed);
        if self.active.is_empty() || chunk == 0 {
            return (waiting.into(), None); // nothing to stall (or no chunking): prefill in one piece
        }
        let mut budget = chunk;
        let mut ready = Vec::new();
        let mut piece = None;
        for w in waiting {
            if piece.is_none() {
                let take = w.left().min(budget);
                budget -= take;
                piece = Some((w, take));
            } else if w.left() <= budget {
                budget -= w.left();
                ready.push(w);
            } else {
                self.warming.push_back(w);
            }
        }
        (ready, piece)
    }

    /// Sorts work off the queue: a request joins `incoming` (if [`Self::screen`] keeps it), a weight
    /// update waits in `update`.
    fn take(&self, work: Work, incoming: &mut Vec<GenRequest>, update: &mut Option<WeightUpdate>) {
        match work {
            Work::Generate(req) => incoming.extend(self.screen(req)),
            Work::LoadWeights(u) => *update = Some(u),
        }
    }

    /// Loads new weights (no sequence is running) and tells whoever asked.
    fn load_weights(&mut self, u: WeightUpdate) {
        let result = self
            .model
            .load_weights(&u.dir)
            .map_err(|e| format!("{e:#}"));
        if result.is_ok() {
            self.metrics.weight_updates.fetch_add(1, Relaxed);
            self.batch = Some(self.model.new_batch());
        }
        let _ = u.done.send(result);
    }

    /// Takes a request off the queue: `None` when its client gave up while queued or its prompt
    /// cannot fit (the client is told).
    fn screen(&self, req: GenRequest) -> Option<GenRequest> {
        self.metrics.queue_depth.fetch_sub(1, Relaxed);
        if req.events.is_closed() {
            return None;
        }
        let prompt_len = req.prompt.len();
        if prompt_len == 0 || prompt_len >= self.config.max_context {
            let _ = req.events.send(Event::Error(format!(
                "the prompt has {prompt_len} tokens; this server's context is {} tokens",
                self.config.max_context
            )));
            return None;
        }
        Some(req)
    }

    /// Prefills the new requests together and emits each one's first token.
    fn admit(&mut self, admitted: Vec<Warming<M::State>>) {
        if admitted.is_empty() {
            return;
        }
        let (reqs, partials): (Vec<GenRequest>, Vec<Option<Partial<M::State>>>) =
            admitted.into_iter().map(|w| (w.req, w.partial)).unzip();
        let prompts = reqs
            .iter()
            .map(|r| r.prompt.as_slice())
            .zip(partials)
            .collect();
        let results = self
            .metrics
            .timed(Phase::Prefill, || self.model.prefill_batch(prompts));
        self.start(reqs, results);
    }

    /// Starts the prefilled requests: emits each one's first token and joins its state to the
    /// running batch; a request whose prefill failed is told why.
    fn start(&mut self, reqs: Vec<GenRequest>, results: Vec<Result<Prefilled<M::State>>>) {
        let mut states = Vec::with_capacity(results.len());
        for (req, result) in reqs.into_iter().zip(results) {
            let Prefilled {
                state,
                logits,
                cached_tokens,
            } = match result {
                Ok(x) => x,
                Err(e) => {
                    let _ = req
                        .events
                        .send(Event::Error(format!("prefill failed: {e:#}")));
                    continue;
                }
            };
            self.metrics
                .prompt_tokens
                .fetch_add(req.prompt.len() as u64, Relaxed);
            self.metrics
                .cached_prompt_tokens
                .fetch_add(cached_tokens as u64, Relaxed);
            let mut seq = Active {
                sampler: Sampler::new(&req.params),
                detok: Detokenizer::new(req.params.stop.clone()),
                req,
                last: 0,
                generated: 0,
                finished: None,
            };
            self.emit(&mut seq, &logits);
            // Done with its first token (one requested, or a stop): nothing to decode, so its
            // state does not join the batch (joining a long prompt's cache pads every row's).
            if seq.finished.is_none() {
                self.active.push(seq);
                states.push(state);
            }
        }
        let batch = self.batch.as_mut().expect("made when the engine starts");
        let joined = self
            .metrics
            .timed(Phase::Join, || self.model.join(batch, states));
        if let Err(e) = joined {
            self.fail_all(&format!("joining the batch failed: {e:#}"));
        }
    }

    /// Fails every running sequence (their states are unusable); the engine keeps serving.
    fn fail_all(&mut self, message: &str) {
        for seq in self.active.iter_mut() {
            let _ = seq.req.events.send(Event::Error(message.to_string()));
            seq.finished = Some(FinishReason::Stop);
        }
    }

    /// One batched decode step over all unfinished sequences (with a waiting prompt's piece
    /// beside them, see [`Self::ready`]), or a speculative round when one sequence runs alone,
    /// nothing waits, and the model drafts. Returns the prompt tokens the step prefilled beside
    /// its sequences; `None` for a speculative round, which is no measure of a decode step.
    fn step(&mut self, piece: Option<(Warming<M::State>, usize)>) -> Option<usize> {
        let mut batch = self.batch.take().expect("made when the engine starts");
        self.metrics.set_running(self.active.len());
        self.metrics.decode_steps.fetch_add(1, Relaxed);
        let started = Instant::now();
        let generated_before: usize = self.active.iter().map(|a| a.generated).sum();
        let carried = piece.is_some();
        let lone = self.active.len() == 1 && !carried;
        // The piece's request, when the step ended its prefill, and how far the piece went.
        let mut prefilled = None;
        let mut piece_tokens = 0;
        // A round may have no drafts left to check (near max_tokens): it is then a plain step
        // that keeps the head's state in step.
        let k = self.speculation_budget();
        let outcome = if lone && self.model.draft_tokens() > 0 && self.model.can_speculate(&batch) {
            let mut active = std::mem::take(&mut self.active);
            let seq = &mut active[0];
            let last = seq.last;
            let result = self.model.speculate(&mut batch, last, k, &mut |logits| {
                let before = seq.generated;
                self.emit(seq, logits);
                let token = (seq.generated > before).then_some(seq.last);
                (token, seq.finished.is_none())
            });
            self.active = active;
            result.map(|r| {
                self.metrics.record_speculation(r.drafted, r.accepted);
                true
            })
        } else {
            let tokens: Vec<u32> = self.active.iter().map(|a| a.last).collect();
            let (mut waiting, budget) = piece.map_or((None, 0), |(w, b)| (Some(w), b));
            let from = waiting
                .as_ref()
                .and_then(|w| w.partial.as_ref().map(|p| p.pos));
            let piece = waiting.as_mut().map(|w| Piece {
                prompt: &w.req.prompt,
                partial: w.partial.take(),
                budget,
            });
            let decoded = self.model.decode(&tokens, &mut batch, piece);
            let decoded = decoded.map(|d| {
                if let Some(w) = waiting.take() {
                    (prefilled, piece_tokens) = self.piece_done(w, from, d.piece);
                }
                d.logits
            });
            // A failed step lost the piece's state: its prompt starts again.
            if let Some(w) = waiting {
                self.warming.push_front(Warming::new(w.req));
            }
            decoded.map(|rows| {
                let mut active = std::mem::take(&mut self.active);
                for (seq, logits) in active.iter_mut().zip(&rows) {
                    self.emit(seq, logits);
                }
                self.active = active;
                false
            })
        };
        self.batch = Some(batch);
        let phase = match carried {
            true => Phase::ChunkedPrefill,
            false => Phase::Decode,
        };
        self.metrics.record_phase(phase, started.elapsed());
        let measure = (!matches!(outcome, Ok(true))).then_some(piece_tokens);
        match outcome {
            Ok(speculated) if lone => {
                let generated: usize = self.active.iter().map(|a| a.generated).sum();
                self.metrics.record_lone_step(
                    speculated,
                    generated - generated_before,
                    started.elapsed(),
                );
            }
            Ok(_) => {}
            // A failed step leaves the states unusable: fail the batch, keep serving new requests.
            Err(e) => self.fail_all(&format!("decode failed: {e:#}")),
        }
        if let Some((req, p)) = prefilled {
            self.start(vec![req], vec![Ok(p)]);
        }
        measure
    }

    /// After a decode step prefilled a piece of `w`'s prompt (`from`: where the piece started,
    /// `None` at the prompt's start): puts the request back at the head of the queue with its new
    /// state, or returns it with its prefill done (to start once the step's tokens are out), or
    /// tells its client why its prompt cannot be prefilled. Also returns the tokens the piece
    /// prefilled.
    fn piece_done(
        &mut self,
        mut w: Warming<M::State>,
        from: Option<usize>,
        piece: Option<Result<Advanced<M::State>>>,
    ) -> (Option<(GenRequest, Prefilled<M::State>)>, usize) {
        let advanced = |pos: usize, cached: usize| pos - from.unwrap_or(cached);
        let (done, n) = match piece {
            Some(Ok(Advanced::Partial(p))) => {
                let n = advanced(p.pos, p.cached_tokens);
                w.partial = Some(p);
                self.warming.push_front(w);
                (None, n)
            }
            Some(Ok(Advanced::Prefilled(p))) => {
                let n = advanced(w.req.prompt.len(), p.cached_tokens);
                (Some((w.req, p)), n)
            }
            Some(Err(e)) => {
                let _ = w
                    .req
                    .events
                    .send(Event::Error(format!("prefill failed: {e:#}")));
                (None, 0)
            }
            None => {
                self.warming.push_front(Warming::new(w.req));
                (None, 0)
            }
        };
        self.metrics
            .chunked_prompt_tokens
            .fetch_add(n as u64, Relaxed);
        (done, n)
    }

    /// Drafts the lone sequence may take this round: the model's number, but never so many that
    /// the round (drafts plus the main model's own token) runs past `max_tokens` or the context.
    fn speculation_budget(&self) -> usize {
        let (k, Some(seq)) = (self.model.draft_tokens(), self.active.first()) else {
            return 0;
        };
        let by_tokens = seq.req.params.max_tokens.saturating_sub(seq.generated + 1);
        let by_context = self
            .config
            .max_context
            .saturating_sub(seq.req.prompt.len() + seq.generated + 1);
        k.min(by_tokens).min(by_context)
    }

    /// Chooses the next token from `logits`, streams its text, and decides whether the sequence ends.
    fn emit(&self, seq: &mut Active, logits: &[f32]) {
        let choice: Option<Sampled> = match &mut seq.req.guide {
            Some(g) => g.next(logits, &mut seq.sampler, &self.table),
            None => Some(seq.sampler.sample(logits)),
        };
        let Some(s) = choice else {
            // The guided call is complete.
            return self.finish(seq, FinishReason::Stop, true);
        };
        seq.generated += 1;
        seq.last = s.token;
        self.metrics.generation_tokens.fetch_add(1, Relaxed);
        let params = &seq.req.params;
        let end_token = seq.req.guide.is_none() && params.stop_token_ids.contains(&s.token);
        let delta = if end_token {
            Default::default()
        } else {
            seq.detok.push(&self.tokenizer, s.token)
        };
        let logprobs = if params.logprobs {
            vec![self.token_logprob(s, logits, &seq.req)]
        } else {
            Vec::new()
        };
        let text = Event::Text {
            text: delta.text,
            tokens: 1,
            logprobs,
        };
        if seq.req.events.send(text).is_err() {
            seq.finished = Some(FinishReason::Stop); // client gone: free the slot
            return;
        }
        if end_token || delta.stopped {
            self.finish(seq, FinishReason::Stop, !delta.stopped);
        } else if seq.generated >= params.max_tokens
            || seq.req.prompt.len() + seq.generated >= self.config.max_context
        {
            self.finish(seq, FinishReason::Length, true);
        }
    }

    /// Ends a sequence. Text held back (a possible stop-string start) is released unless a stop
    /// string did match (`flush` false): then the rest is the stop string and what follows it.
    fn finish(&self, seq: &mut Active, reason: FinishReason, flush: bool) {
        let rest = if flush {
            seq.detok.flush(&self.tokenizer)
        } else {
            String::new()
        };
        if !rest.is_empty() {
            let _ = seq.req.events.send(Event::Text {
                text: rest,
                tokens: 0,
                logprobs: Vec::new(),
            });
        }
        let _ = seq.req.events.send(Event::Done {
            reason: reason.clone(),
            prompt_tokens: seq.req.prompt.len(),
            completion_tokens: seq.generated,
        });
        seq.finished = Some(reason);
    }

    fn token_logprob(&self, s: Sampled, logits: &[f32], req: &GenRequest) -> TokenLogprob {
        let top = req.top_logprobs;
        let piece = |id: u32| match req.tokens_as_ids {
            true => format!("token_id:{id}"),
            false => self.tokenizer.decode(&[id], false).unwrap_or_default(),
        };
        let mut best: Vec<usize> = (0..logits.len()).collect();
        let k = top.min(best.len());
        if k > 0 {
            best.select_nth_unstable_by(k - 1, |&a, &b| logits[b].total_cmp(&logits[a]));
            best.truncate(k);
            best.sort_by(|&a, &b| logits[b].total_cmp(&logits[a]));
        }
        let lse = log_sum_exp(logits);
        TokenLogprob {
            token: piece(s.token),
            logprob: s.logprob,
            top: best[..k]
                .iter()
                .map(|&i| (piece(i as u32), (logits[i] as f64 - lse) as f32))
                .collect(),
        }
    }

    /// Drops finished sequences together with their states. The last running sequences take the
    /// finished ones' places ([`fill_holes`]), so that the batch moves only their states.
    fn retire(&mut self) {
        if self.active.iter().any(|a| a.finished.is_some()) {
            let keep = fill_holes(self.active.len(), |i| self.active[i].finished.is_none());
            let mut rows: Vec<Option<Active>> = self.active.drain(..).map(Some).collect();
            self.active = keep.iter().filter_map(|&i| rows[i].take()).collect();
            let batch = self.batch.as_mut().expect("made when the engine starts");
            let kept = self
                .metrics
                .timed(Phase::Leave, || self.model.keep(batch, &keep));
            if let Err(e) = kept {
                self.fail_all(&format!("leaving the batch failed: {e:#}"));
                self.active.clear();
                let batch = self.batch.as_mut().expect("made when the engine starts");
                let _ = self.model.keep(batch, &[]);
            }
        }
        self.metrics
            .running
            .store(self.active.len() as u64, Relaxed);
    }
}

fn log_sum_exp(logits: &[f32]) -> f64 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max) as f64;
    max + logits
        .iter()
        .map(|&l| (l as f64 - max).exp())
        .sum::<f64>()
        .ln()
}
