//! The math of the architectures, one layer kind per file: causal attention (plain or gated, partial
//! RoPE), the Gated DeltaNet token mixer, dense and sparse MoE feed-forward blocks, the RMSNorm
//! variants, rotary embeddings, the linear layer and its weight (f32, or bf16/int8 for CPU
//! inference), the decoder layer that combines a mixer with an FFN, and Qwen3.5's
//! multi-token-prediction head. They are generic over the burn backend; where the CPU backend has a
//! faster native path (`cpu/`) or training a hand-written autodiff op (`train_ops/`), a layer picks
//! it at run time and keeps burn's ops for every other backend.

pub mod attention;
pub mod decoder;
pub mod gated_deltanet;
pub mod linear;
pub mod moe;
pub mod mtp;
pub mod norm;
pub mod rope;
pub mod weight;
