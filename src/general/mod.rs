//! General ability at toy scale (HAT stage 2's "what domain SFT can lose"): seeded general prompts with
//! IFEval's verifiable instructions on neutral topics in English and Chinese, a programmatic teacher
//! that answers the train split compliantly, a held-out eval split, and IFEval-lite — the judge's
//! IFEval scorer on that split.
//!
//! ```text
//! topics.rs        train and held-out topics, with the sentences the teacher writes from
//! instructions.rs  the instruction kinds: IFEval ids and kwargs, wording in both languages, compatibility
//! teacher.rs       a compliant answer for a topic and a set of instructions
//! prompts.rs       the seeded generator of train / eval rows (IFEval input format + messages)
//! answer.rs        a local model's greedy answers to the prompts
//! score.rs         IFEval-lite: prompt / instruction level, strict / loose, with Wilson intervals
//! answers.rs       per-prompt answers and the paired sign test of two models on them
//! recovery.rs      the share of a drop (base → SFT) that a third model (OPD) wins back
//! cli.rs           `hat general prompts | eval | compare | recovery`
//! ```

pub mod answer;
pub mod answers;
pub mod cli;
pub mod instructions;
pub mod prompts;
pub mod recovery;
pub mod score;
pub mod teacher;
pub mod topics;
