//! IFEval (Google's `instruction_following_eval`): the 25 verifiable instructions.
pub mod punkt;
pub mod text;
