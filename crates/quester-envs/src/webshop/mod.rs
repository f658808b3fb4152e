//! WebShop (Yao et al., 2022) on the 1000-product catalogue, in text mode.
//!
//! The catalogue ships gzip-compressed inside the binary ([`catalogue`]); search is our own BM25
//! with a Lucene-like English analyser ([`text`], [`bm25`]); goals are upstream's synthetic goals
//! with upstream's seeded shuffle ([`goals`], [`pyrandom`]); the purchase reward follows upstream's
//! formula ([`reward`], [`fuzz`]); [`pages`] is the page model and [`mod@env`] the [`crate::Env`].
//! See `docs/envs/webshop.md`.

pub mod action;
pub mod bm25;
pub mod catalogue;
pub mod config;
pub mod env;
pub mod expert;
pub mod fuzz;
pub mod goals;
pub mod pages;
pub mod porter;
pub mod pyrandom;
pub mod reward;
mod spec;
pub mod text;

pub use catalogue::{Catalogue, Product};
pub use config::{RewardMode, Split, WebShopConfig};
pub use env::WebShopEnv;
pub use goals::Goal;
pub use reward::RewardParts;
pub use spec::SPEC;
