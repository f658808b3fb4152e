//! Rendering primitives shared by every quester page and plot (the run report here, the
//! experiment report in quester-experiment): one plot size and font, PNG encoding, HTML escaping
//! and JSON safe inside a `<script>` element.

mod html;
mod image;

pub use html::{escape, script_json};

pub(crate) use html::fill;
pub use image::{encode_png, register_font, FONT, HEIGHT, WIDTH};
