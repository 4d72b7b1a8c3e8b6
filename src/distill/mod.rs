//! HSA-SFT (DESIGN §1, stage 1): collect filtered teacher trajectories under original and augmented
//! harnesses ([`collect`]), then train with loss on policy tokens only (`crate::train`).

pub mod cli;
pub mod collect;
