//! PNG files decoded into RGBA8 texels, for what the renderers upload:
//! model textures (`models`), item and image pictures (`icons`).
//!
//! Owns: decoding a PNG of any colour type but indexed, any bit depth
//! (normalised to 8 bits), into rows of RGBA8, refusing sizes the caller
//! does not take. Does not own: scaling or placing the texels (`icons`,
//! `atlas`), uploading them (`gpu`, `models`, `ui_gpu`).

use std::io::Cursor;

/// A decoded picture: `width` × `height` texels, RGBA8, rows top first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rgba {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

/// Why a PNG was not decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PngError {
    #[error("not a PNG it can read: {0}")]
    Unreadable(String),
    /// Empty, or a size the caller's `fits` refused.
    #[error("{width}×{height} texels")]
    Size { width: u32, height: u32 },
    #[error("too large")]
    TooLarge,
    #[error("indexed colour")]
    Indexed,
}

/// Decodes `bytes`, a PNG whose size (width, height, both at least 1)
/// `fits` accepts, into RGBA8 (grey and missing alpha filled in).
pub fn decode(bytes: &[u8], fits: impl FnOnce(u32, u32) -> bool) -> Result<Rgba, PngError> {
    let unreadable = |e: png::DecodingError| PngError::Unreadable(e.to_string());
    let mut decoder = png::Decoder::new(Cursor::new(bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().map_err(unreadable)?;
    let (width, height) = (reader.info().width, reader.info().height);
    if width == 0 || height == 0 || !fits(width, height) {
        return Err(PngError::Size { width, height });
    }
    let mut buffer = vec![0; reader.output_buffer_size().ok_or(PngError::TooLarge)?];
    let info = reader.next_frame(&mut buffer).map_err(unreadable)?;
    let channels = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err(PngError::Indexed),
    };
    let mut rgba = Vec::with_capacity(width as usize * height as usize * 4);
    for row in buffer.chunks(info.line_size).take(height as usize) {
        for px in row.chunks_exact(channels).take(width as usize) {
            rgba.extend_from_slice(&match *px {
                [g] => [g, g, g, 255],
                [g, a] => [g, g, g, a],
                [r, g, b] => [r, g, b, 255],
                [r, g, b, a] => [r, g, b, a],
                _ => [255; 4],
            });
        }
    }
    if rgba.len() != width as usize * height as usize * 4 {
        return Err(PngError::Unreadable("short image data".into()));
    }
    Ok(Rgba {
        width,
        height,
        rgba,
    })
}

/// A PNG of `width` × `height` 8-bit texels of `colour` type, rows of
/// `data` top first (for tests).
#[cfg(test)]
pub(crate) fn encode(width: u32, height: u32, colour: png::ColorType, data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut encoder = png::Encoder::new(&mut out, width, height);
    encoder.set_color(colour);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().expect("header");
    writer.write_image_data(data).expect("data");
    drop(writer);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PNG of `width` × `height` texels, each `texel`.
    fn png(width: u32, height: u32, colour: png::ColorType, texel: &[u8]) -> Vec<u8> {
        encode(
            width,
            height,
            colour,
            &texel.repeat((width * height) as usize),
        )
    }

    #[test]
    fn every_colour_type_becomes_rgba() {
        for (colour, texel, expected) in [
            (png::ColorType::Grayscale, &[7][..], [7, 7, 7, 255]),
            (png::ColorType::GrayscaleAlpha, &[7, 9], [7, 7, 7, 9]),
            (png::ColorType::Rgb, &[1, 2, 3], [1, 2, 3, 255]),
            (png::ColorType::Rgba, &[1, 2, 3, 4], [1, 2, 3, 4]),
        ] {
            let image = decode(&png(3, 2, colour, texel), |_, _| true).expect("decodes");
            assert_eq!((image.width, image.height), (3, 2));
            assert_eq!(image.rgba, expected.repeat(6), "{colour:?}");
        }
    }

    #[test]
    fn sizes_refused_and_garbage_are_errors() {
        let bytes = png(4, 2, png::ColorType::Rgb, &[0, 0, 0]);
        assert_eq!(
            decode(&bytes, |w, h| w <= 2 && h <= 2),
            Err(PngError::Size {
                width: 4,
                height: 2
            })
        );
        assert!(matches!(
            decode(b"not a png", |_, _| true),
            Err(PngError::Unreadable(_))
        ));
    }
}
