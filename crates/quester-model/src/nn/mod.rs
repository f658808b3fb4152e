//! Building blocks with trainable weights.

pub mod linear;

pub(crate) use linear::full_matmul;
pub use linear::{Linear, LoraAdapter, LoraConfig};
