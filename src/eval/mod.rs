//! Evaluation shared by every training stage (SFT now, OPD and RL next): how a checkpoint is measured,
//! independent of how it was trained.
//!
//! * [`rollout`]: the model plays held-out tasks in the simulator under a harness set, the verifiable
//!   judge scores each episode; rates come with 95% Wilson intervals and their n.
//! * [`probe`]: teacher-forced decisions on held-out teacher records — does greedy decoding reproduce
//!   the opening skill/tool call, and every tool call — by intent; seconds instead of minutes, and the
//!   direct measure of whether a model reads the harness in its prompt (the same tasks under renamed
//!   tools).
//! * [`name_ranking`]: which listed tool name the model ranks first where the teacher's opening call
//!   writes its name — reading measured by likelihood, not by what greedy decoding happens to write.
//! * [`report`]: the stage-by-stage report of `make reproduce` (`hat report`), plotted by [`bars`].

pub mod bars;
pub mod free_opening;
pub mod name_ranking;
pub mod probe;
pub mod report;
pub mod rollout;
