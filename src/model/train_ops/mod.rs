//! The CPU training backend's own autodiff operations (`Autodiff<NdArray<f32>>`), each a forward
//! pass plus a hand-written backward pass for a part of a training step that burn's autodiff ran as
//! many small allocating ops: the weight product (`linear`), causal attention (`attention`,
//! flash-style), the gated delta rule (`delta_rule`) and the SFT loss (`nll`), with what they share
//! in `autodiff`. Layers and the trainer call them only when `autodiff::is_cpu_autodiff` holds; CUDA
//! keeps burn's ops. Each is tested against burn's ops and their gradients.

pub mod attention;
pub mod autodiff;
pub mod delta_rule;
pub mod linear;
pub mod nll;
