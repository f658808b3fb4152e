//! Building blocks with trainable weights.

pub mod linear;

pub use linear::{Linear, LoraAdapter, LoraConfig};
