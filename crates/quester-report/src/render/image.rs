//! The picture every quester plot shares: its size, the embedded font and the PNG encoding.
//! The font is DejaVu Sans compiled into the binary, so no system font is needed.

use std::sync::Once;

use plotters::style::FontStyle;

/// Plot size in pixels.
pub const WIDTH: u32 = 900;
/// Plot size in pixels.
pub const HEIGHT: u32 = 420;

/// The family name the embedded font is registered under.
pub const FONT: &str = "sans-serif";

/// Registers the embedded DejaVu Sans under [`FONT`] (once per process).
pub fn register_font() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        if plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular()).is_err()
        {
            tracing::warn!("the embedded DejaVu font could not be registered; plot text may fail");
        }
    });
}

/// Encodes an 8-bit RGB buffer as PNG.
pub fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, png::EncodingError> {
    let mut out = Vec::new();
    {
        let mut encoder = png::Encoder::new(&mut out, width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        // Plots are mostly flat colour: the best compression makes them several times smaller.
        encoder.set_compression(png::Compression::Best);
        encoder.set_adaptive_filter(png::AdaptiveFilterType::Adaptive);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(rgb)?;
        writer.finish()?;
    }
    Ok(out)
}
