//! The 2D layer drawn over the world: the crosshair, text lines (the
//! client's own: position, frames per second, chunks held; then the
//! game's from `buildat.ui.set_text`) in a built-in 5×7 pixel font, and
//! the hotbar with the selected slot framed. Everything is flat-coloured
//! triangles in normalised device coordinates.
//!
//! Owns: the layout and the font. Does not own: what the lines say or
//! what the hotbar holds (the game's Lua, through `sandbox::ui`), drawing
//! (`gpu`).

use super::atlas::name_colour;
use super::gpu::FlatVertex;

/// Screen pixels per font pixel.
const SCALE: f32 = 2.0;
const GLYPH_W: f32 = 6.0;
const LINE_H: f32 = 10.0;

/// 5×7 glyphs: seven rows, bit 4 the leftmost column.
fn glyph(c: char) -> [u8; 7] {
    match c.to_ascii_uppercase() {
        '0' => [0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E],
        '1' => [0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E],
        '2' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F],
        '3' => [0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E],
        '4' => [0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02],
        '5' => [0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E],
        '6' => [0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E],
        '7' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08],
        '8' => [0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E],
        '9' => [0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C],
        'A' => [0x0E, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'B' => [0x1E, 0x11, 0x11, 0x1E, 0x11, 0x11, 0x1E],
        'C' => [0x0E, 0x11, 0x10, 0x10, 0x10, 0x11, 0x0E],
        'D' => [0x1C, 0x12, 0x11, 0x11, 0x11, 0x12, 0x1C],
        'E' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x1F],
        'F' => [0x1F, 0x10, 0x10, 0x1E, 0x10, 0x10, 0x10],
        'G' => [0x0E, 0x11, 0x10, 0x17, 0x11, 0x11, 0x0F],
        'H' => [0x11, 0x11, 0x11, 0x1F, 0x11, 0x11, 0x11],
        'I' => [0x0E, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E],
        'J' => [0x07, 0x02, 0x02, 0x02, 0x02, 0x12, 0x0C],
        'K' => [0x11, 0x12, 0x14, 0x18, 0x14, 0x12, 0x11],
        'L' => [0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x1F],
        'M' => [0x11, 0x1B, 0x15, 0x15, 0x11, 0x11, 0x11],
        'N' => [0x11, 0x11, 0x19, 0x15, 0x13, 0x11, 0x11],
        'O' => [0x0E, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'P' => [0x1E, 0x11, 0x11, 0x1E, 0x10, 0x10, 0x10],
        'Q' => [0x0E, 0x11, 0x11, 0x11, 0x15, 0x12, 0x0D],
        'R' => [0x1E, 0x11, 0x11, 0x1E, 0x14, 0x12, 0x11],
        'S' => [0x0F, 0x10, 0x10, 0x0E, 0x01, 0x01, 0x1E],
        'T' => [0x1F, 0x04, 0x04, 0x04, 0x04, 0x04, 0x04],
        'U' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x11, 0x0E],
        'V' => [0x11, 0x11, 0x11, 0x11, 0x11, 0x0A, 0x04],
        'W' => [0x11, 0x11, 0x11, 0x15, 0x15, 0x15, 0x0A],
        'X' => [0x11, 0x11, 0x0A, 0x04, 0x0A, 0x11, 0x11],
        'Y' => [0x11, 0x11, 0x11, 0x0A, 0x04, 0x04, 0x04],
        'Z' => [0x1F, 0x01, 0x02, 0x04, 0x08, 0x10, 0x1F],
        ' ' => [0; 7],
        '.' => [0, 0, 0, 0, 0, 0x0C, 0x0C],
        ',' => [0, 0, 0, 0, 0x0C, 0x04, 0x08],
        ':' => [0, 0x0C, 0x0C, 0, 0x0C, 0x0C, 0],
        ';' => [0, 0x0C, 0x0C, 0, 0x0C, 0x04, 0x08],
        '-' => [0, 0, 0, 0x1F, 0, 0, 0],
        '+' => [0, 0x04, 0x04, 0x1F, 0x04, 0x04, 0],
        '=' => [0, 0, 0x1F, 0, 0x1F, 0, 0],
        '/' => [0, 0x01, 0x02, 0x04, 0x08, 0x10, 0],
        '(' => [0x02, 0x04, 0x08, 0x08, 0x08, 0x04, 0x02],
        ')' => [0x08, 0x04, 0x02, 0x02, 0x02, 0x04, 0x08],
        '[' => [0x0E, 0x08, 0x08, 0x08, 0x08, 0x08, 0x0E],
        ']' => [0x0E, 0x02, 0x02, 0x02, 0x02, 0x02, 0x0E],
        '%' => [0x18, 0x19, 0x02, 0x04, 0x08, 0x13, 0x03],
        '!' => [0x04, 0x04, 0x04, 0x04, 0x04, 0, 0x04],
        '?' => [0x0E, 0x11, 0x01, 0x02, 0x04, 0, 0x04],
        '_' => [0, 0, 0, 0, 0, 0, 0x1F],
        '\'' => [0x04, 0x04, 0x08, 0, 0, 0, 0],
        '"' => [0x0A, 0x0A, 0, 0, 0, 0, 0],
        '<' => [0x02, 0x04, 0x08, 0x10, 0x08, 0x04, 0x02],
        '>' => [0x08, 0x04, 0x02, 0x01, 0x02, 0x04, 0x08],
        '*' => [0, 0x04, 0x15, 0x0E, 0x15, 0x04, 0],
        '#' => [0x0A, 0x0A, 0x1F, 0x0A, 0x1F, 0x0A, 0x0A],
        '@' => [0x0E, 0x11, 0x17, 0x15, 0x17, 0x10, 0x0E],
        _ => [0x1F, 0x11, 0x11, 0x11, 0x11, 0x11, 0x1F],
    }
}

/// Triangles for a screen of `width`×`height` pixels, with rectangles in
/// pixels (origin top left).
pub struct Overlay {
    width: f32,
    height: f32,
    pub triangles: Vec<FlatVertex>,
}

impl Overlay {
    pub fn new(width: u32, height: u32) -> Self {
        Self {
            width: width.max(1) as f32,
            height: height.max(1) as f32,
            triangles: Vec::new(),
        }
    }

    /// A filled rectangle, in pixels.
    pub fn rect(&mut self, x: f32, y: f32, w: f32, h: f32, colour: [f32; 4]) {
        let ndc = |px: f32, py: f32| {
            [
                px / self.width * 2.0 - 1.0,
                1.0 - py / self.height * 2.0,
                0.0,
            ]
        };
        let corners = [ndc(x, y), ndc(x + w, y), ndc(x + w, y + h), ndc(x, y + h)];
        for i in [0, 3, 2, 0, 2, 1] {
            self.triangles.push(FlatVertex {
                position: corners[i],
                colour,
            });
        }
    }

    /// A line of text at (x, y) pixels, with a dark shadow.
    pub fn text(&mut self, x: f32, y: f32, text: &str, colour: [f32; 4]) {
        for (dx, colour) in [(SCALE, [0.0, 0.0, 0.0, 0.6]), (0.0, colour)] {
            for (i, c) in text.chars().enumerate() {
                let rows = glyph(c);
                let gx = x + dx + i as f32 * GLYPH_W * SCALE;
                for (row, bits) in rows.iter().enumerate() {
                    for col in 0..5 {
                        if bits & (0x10 >> col) != 0 {
                            self.rect(
                                gx + col as f32 * SCALE,
                                y + dx + row as f32 * SCALE,
                                SCALE,
                                SCALE,
                                colour,
                            );
                        }
                    }
                }
            }
        }
    }

    /// The crosshair at the centre.
    pub fn crosshair(&mut self) {
        let (cx, cy) = (self.width / 2.0, self.height / 2.0);
        let white = [1.0, 1.0, 1.0, 0.9];
        self.rect(cx - 9.0, cy - 1.0, 18.0, 2.0, white);
        self.rect(cx - 1.0, cy - 9.0, 2.0, 18.0, white);
    }

    /// Lines from the top left, one under the other.
    pub fn lines<'a>(&mut self, lines: impl IntoIterator<Item = &'a str>) {
        for (i, line) in lines.into_iter().enumerate() {
            self.text(
                8.0,
                8.0 + i as f32 * LINE_H * SCALE,
                line,
                [1.0, 1.0, 1.0, 1.0],
            );
        }
    }

    /// The hotbar at the bottom centre: a swatch per block (`swatch(name)`,
    /// else its name's colour), the selected one framed, its name above.
    pub fn hotbar(
        &mut self,
        names: &[String],
        selected: usize,
        swatch: impl Fn(&str) -> Option<[u8; 3]>,
    ) {
        if names.is_empty() {
            return;
        }
        let slot = 40.0;
        let total = slot * names.len() as f32;
        let x0 = (self.width - total) / 2.0;
        let y0 = self.height - slot - 10.0;
        self.rect(
            x0 - 4.0,
            y0 - 4.0,
            total + 8.0,
            slot + 8.0,
            [0.0, 0.0, 0.0, 0.45],
        );
        for (i, name) in names.iter().enumerate() {
            let x = x0 + i as f32 * slot;
            if i == selected {
                self.rect(x, y0, slot, slot, [1.0, 1.0, 1.0, 0.95]);
                let label_w = name.chars().count() as f32 * GLYPH_W * SCALE;
                self.text(
                    (self.width - label_w) / 2.0,
                    y0 - 26.0,
                    name,
                    [1.0, 1.0, 1.0, 1.0],
                );
            }
            let colour = swatch(name).unwrap_or_else(|| name_colour(name));
            let [r, g, b] = colour.map(|c| f32::from(c) / 255.0);
            self.rect(x + 5.0, y0 + 5.0, slot - 10.0, slot - 10.0, [r, g, b, 1.0]);
            let digit = format!("{}", (i + 1) % 10);
            if i < 10 {
                self.text(x + 6.0, y0 + 6.0, &digit, [1.0, 1.0, 1.0, 1.0]);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_draws_one_square_per_lit_font_pixel_and_its_shadow() {
        let mut overlay = Overlay::new(100, 100);
        overlay.text(0.0, 0.0, "1", [1.0; 4]);
        let lit: u32 = glyph('1').iter().map(|r| r.count_ones()).sum();
        assert_eq!(overlay.triangles.len() as u32, lit * 2 * 6);
        assert_eq!(glyph('a'), glyph('A'));
    }
}
