//! Native kernels for the inference CPU backend (`NdArray<f32>` without autodiff): `backend` works
//! around burn-ndarray's slow paths (weight copies, allocating reshapes, sigmoid and concatenation)
//! and holds the gemm products and tensor conversions the rest share; `attention` is attention
//! against the cached keys (a decode step's few queries, a prefill's blocks); `delta_rule` is the
//! gated delta rule token by token, and `deltanet_step` a whole Gated DeltaNet decode token around
//! it; `few_rows` is the f32 product of a decode step's few rows; `reduced` holds bf16 and int8 weight matrices and their products
//! (`--dtype`), `amx` the tile products their prefill (and those layers' prefill attention) uses
//! where the CPU has Intel AMX; and `spin_team` is
//! the team of spinning helper threads their parallel sections run on. Nothing here changes results
//! beyond float rounding, except the reduced weights that are asked for: tests hold each kernel to
//! burn's ops, and the reduced model to the f32 one within a stated tolerance.

#[cfg(target_arch = "x86_64")]
mod amx;
pub mod attention;
pub mod backend;
pub mod delta_rule;
pub mod deltanet_step;
mod few_rows;
pub mod reduced;
pub mod spin_team;
