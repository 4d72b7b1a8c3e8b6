//! Where a model's parameters come from and go to: the `weights` source abstraction (a checkpoint or
//! a seeded random init, asked for each tensor by its Hugging Face name and layout) and the export
//! visitor, Hugging Face checkpoint directories that transformers loads (`checkpoint`), and the
//! inspection helpers behind `hat model info` and `hat model logits` (`inspect`).

pub mod checkpoint;
pub mod inspect;
pub mod weights;
