//! Running a model forward token by token: the per-layer decoding state (`cache`: KV cache and
//! DeltaNet states, stacked and unstacked across sequences of different lengths), batched prefill and
//! decode with the sampling loop and the text-level generator (`generate`), the states after shared
//! prompt prefixes kept for reuse (`prefix_cache`), seeded temperature /
//! top-k / top-p sampling with raw log-probabilities (`sampling`), MTP speculative decoding that
//! gives the same tokens as plain decoding (`speculative`), and how closely one model follows
//! another on the other's greedy output (`agreement`: what bf16/int8 weights cost).

pub mod agreement;
pub mod cache;
pub mod generate;
pub mod prefix_cache;
pub mod sampling;
pub mod speculative;
