//! The 2D layer drawn over the world: the crosshair, text lines (the
//! client's own: position, frames per second, chunks held; then the
//! game's from `buildat.ui.set_text`) in a built-in 5×7 pixel font, and
//! the hotbar with the selected slot framed. Everything is flat-coloured
//! triangles in normalised device coordinates.
//!
//! Owns: the layout and the font. Does not own: what the lines say or
//! what the hotbar holds (the game's Lua, through `sandbox::ui`), drawing
//! (`gpu`).

use std::collections::HashMap;

use super::atlas::name_colour;
use super::gpu::FlatVertex;
use super::ui_gpu::{UiVertex, UvRect, WHITE};
use crate::sandbox::{Screen, Stack, UiState, Widget, WidgetKind};

/// Screen pixels per font pixel.
const SCALE: f32 = 2.0;
const GLYPH_W: f32 = 6.0;
const LINE_H: f32 = 10.0;

/// 5×7 glyphs: seven rows, bit 4 the leftmost column.
/// Pixel (px, py) of a `width`×`height` screen (origin top left) in
/// normalised device coordinates.
fn ndc(px: f32, py: f32, width: f32, height: f32) -> [f32; 2] {
    [px / width * 2.0 - 1.0, 1.0 - py / height * 2.0]
}

/// The top left corners of the lit font pixels of `text` drawn from (x, y),
/// `scale` screen pixels per font pixel.
fn text_pixels(x: f32, y: f32, text: &str, scale: f32) -> impl Iterator<Item = (f32, f32)> + '_ {
    text.chars().enumerate().flat_map(move |(i, c)| {
        let gx = x + i as f32 * GLYPH_W * scale;
        glyph(c)
            .into_iter()
            .enumerate()
            .flat_map(move |(row, bits)| {
                (0..5)
                    .filter(move |col| bits & (0x10 >> col) != 0)
                    .map(move |col| (gx + col as f32 * scale, y + row as f32 * scale))
            })
    })
}

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
        let ndc = |px, py| {
            let [x, y] = ndc(px, py, self.width, self.height);
            [x, y, 0.0]
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
        for (d, colour) in [(SCALE, [0.0, 0.0, 0.0, 0.6]), (0.0, colour)] {
            for (px, py) in text_pixels(x + d, y + d, text, SCALE) {
                self.rect(px, py, SCALE, SCALE, colour);
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
}

/// Pixels of a screen's cell at UI scale 1.
pub const CELL_PX: f32 = 36.0;
/// Pixels of a hotbar slot at UI scale 1.
const HOTBAR_SLOT_PX: f32 = 40.0;
/// Seconds a chat line shows fully, and until it is gone.
pub const CHAT_SHOWN: f32 = 8.0;
pub const CHAT_GONE: f32 = 10.0;

/// The UI's scale for a window `height` pixels tall: 1 up to 1439, then 2...
pub fn ui_scale(height: u32) -> f32 {
    (height as f32 / 720.0).floor().max(1.0)
}

/// A rectangle in pixels, origin top left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    pub x: f32,
    pub y: f32,
    pub w: f32,
    pub h: f32,
}

impl Rect {
    pub fn contains(&self, px: f32, py: f32) -> bool {
        px >= self.x && py >= self.y && px < self.x + self.w && py < self.y + self.h
    }

    fn inset(&self, by: f32) -> Self {
        Self {
            x: self.x + by,
            y: self.y + by,
            w: (self.w - 2.0 * by).max(0.0),
            h: (self.h - 2.0 * by).max(0.0),
        }
    }
}

/// What is under the mouse on a screen or the hotbar.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hit {
    /// Slot `index` (0-based) of grid `grid` (`"hotbar"`: the hotbar).
    Slot {
        grid: String,
        index: usize,
    },
    Button(String),
    Field(String),
}

/// Where a screen and its widgets are on a window.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScreenLayout {
    pub panel: Rect,
    /// Pixels of a cell.
    pub cell: f32,
    /// The top left of cell (0, 0).
    pub origin: [f32; 2],
}

impl ScreenLayout {
    /// The panel centred in the room above the hotbar.
    pub fn new(screen: &Screen, width: u32, height: u32) -> Self {
        let cell = CELL_PX * ui_scale(height);
        let pad = cell * 0.25;
        let title = if screen.title.is_empty() {
            0.0
        } else {
            cell * 0.75
        };
        let w = screen.columns * cell + 2.0 * pad;
        let h = screen.rows * cell + title + 2.0 * pad;
        let room = (height as f32 - HOTBAR_SLOT_PX * ui_scale(height) - 20.0).max(h);
        let x = ((width as f32 - w) / 2.0).max(0.0);
        let y = ((room - h) / 2.0).max(0.0);
        Self {
            panel: Rect { x, y, w, h },
            cell,
            origin: [x + pad, y + pad + title],
        }
    }

    fn at(&self, x: f32, y: f32, w: f32, h: f32) -> Rect {
        Rect {
            x: self.origin[0] + x * self.cell,
            y: self.origin[1] + y * self.cell,
            w: w * self.cell,
            h: h * self.cell,
        }
    }

    /// Slot `index` of a grid widget at (x, y) cells with `columns`.
    pub fn slot(&self, widget: &Widget, columns: u32, index: usize) -> Rect {
        let columns = columns.max(1) as usize;
        self.at(
            widget.x + (index % columns) as f32,
            widget.y + (index / columns) as f32,
            1.0,
            1.0,
        )
    }

    /// A widget's rectangle (a grid's whole area).
    pub fn widget(&self, widget: &Widget) -> Rect {
        match &widget.kind {
            WidgetKind::Slots { columns, slots, .. } => {
                let columns = (*columns).max(1) as usize;
                let rows = slots.len().div_ceil(columns).max(1);
                self.at(
                    widget.x,
                    widget.y,
                    columns.min(slots.len().max(1)) as f32,
                    rows as f32,
                )
            }
            WidgetKind::Label { .. } => self.at(widget.x, widget.y, 1.0, 1.0),
            WidgetKind::Button { width, .. } | WidgetKind::Field { width, .. } => {
                self.at(widget.x, widget.y, *width, 1.0)
            }
            WidgetKind::Image { width, height, .. } => self.at(widget.x, widget.y, *width, *height),
        }
    }

    /// What of `screen` is at (px, py), the last widget first.
    pub fn hit(&self, screen: &Screen, px: f32, py: f32) -> Option<Hit> {
        for widget in screen.widgets.iter().rev() {
            match &widget.kind {
                WidgetKind::Slots {
                    id, columns, slots, ..
                } => {
                    for index in 0..slots.len() {
                        if self.slot(widget, *columns, index).contains(px, py) {
                            return Some(Hit::Slot {
                                grid: id.clone(),
                                index,
                            });
                        }
                    }
                }
                WidgetKind::Button { id, .. } if self.widget(widget).contains(px, py) => {
                    return Some(Hit::Button(id.clone()));
                }
                WidgetKind::Field { id, .. } if self.widget(widget).contains(px, py) => {
                    return Some(Hit::Field(id.clone()));
                }
                _ => {}
            }
        }
        None
    }
}

/// The hotbar's slot `index` on a window, of `count` slots.
pub fn hotbar_slot(width: u32, height: u32, count: usize, index: usize) -> Rect {
    let slot = HOTBAR_SLOT_PX * ui_scale(height);
    let x0 = (width as f32 - slot * count as f32) / 2.0;
    Rect {
        x: x0 + index as f32 * slot,
        y: height as f32 - slot - 10.0,
        w: slot,
        h: slot,
    }
}

/// The hotbar's item slot at (px, py), if it shows item slots.
pub fn hotbar_hit(state: &UiState, width: u32, height: u32, px: f32, py: f32) -> Option<usize> {
    let slots = state.hotbar_slots.as_ref()?;
    (0..slots.len()).find(|&i| hotbar_slot(width, height, slots.len(), i).contains(px, py))
}

/// Where item pictures and images are in the UI texture.
pub trait Pictures {
    /// Item `name`'s icon.
    fn item(&mut self, name: &str) -> Option<UvRect>;
    /// A `client_data` image file.
    fn file(&mut self, file: &str) -> Option<UvRect>;
}

/// What the frontend adds to the UI state: the typed chat line, the
/// chat lines' opacity, the mouse over a screen, a drag, typed fields.
#[derive(Debug, Clone, Default)]
pub struct UiView {
    /// The chat line being typed, if open.
    pub chat_input: Option<String>,
    /// Opacity of each of the state's chat lines (by serial); a line not
    /// here is drawn fully.
    pub chat_alpha: HashMap<u64, f32>,
    /// The mouse, in pixels.
    pub cursor: Option<[f32; 2]>,
    /// What is under the mouse.
    pub hover: Option<Hit>,
    /// The slot a stack is being dragged from.
    pub drag: Option<(String, usize)>,
    /// The focused field and the text typed into each field of the top screen.
    pub focus: Option<String>,
    pub fields: HashMap<String, String>,
    /// Fields whose text is drawn as stars (a password).
    pub masked: Vec<String>,
}

/// The UI's textured quads for a screen of `width`×`height` pixels.
pub struct UiPainter {
    width: f32,
    height: f32,
    pub vertices: Vec<UiVertex>,
}

const PANEL: [f32; 4] = [0.02, 0.02, 0.025, 0.9];
const SLOT: [f32; 4] = [0.16, 0.16, 0.18, 1.0];
const SLOT_HOVER: [f32; 4] = [0.5, 0.5, 0.56, 1.0];
const WHITE_TEXT: [f32; 4] = [1.0, 1.0, 1.0, 1.0];

fn heart() -> [u8; 6] {
    [0x36, 0x7F, 0x7F, 0x3E, 0x1C, 0x08]
}

impl UiPainter {
    pub fn new(width: u32, height: u32) -> Self {
        Self {
            width: width.max(1) as f32,
            height: height.max(1) as f32,
            vertices: Vec::new(),
        }
    }

    fn quad(&mut self, r: Rect, uv: UvRect, colour: [f32; 4]) {
        let ndc = |px, py| ndc(px, py, self.width, self.height);
        let corners = [
            (ndc(r.x, r.y), [uv[0], uv[1]]),
            (ndc(r.x + r.w, r.y), [uv[2], uv[1]]),
            (ndc(r.x + r.w, r.y + r.h), [uv[2], uv[3]]),
            (ndc(r.x, r.y + r.h), [uv[0], uv[3]]),
        ];
        for i in [0, 2, 1, 0, 3, 2] {
            let (position, uv) = corners[i];
            self.vertices.push(UiVertex {
                position,
                uv,
                colour,
            });
        }
    }

    /// A flat rectangle.
    pub fn rect(&mut self, r: Rect, colour: [f32; 4]) {
        let [u, v] = WHITE;
        self.quad(r, [u, v, u, v], colour);
    }

    /// A frame `by` pixels thick inside `r`.
    fn frame(&mut self, r: Rect, by: f32, colour: [f32; 4]) {
        self.rect(Rect { h: by, ..r }, colour);
        self.rect(
            Rect {
                y: r.y + r.h - by,
                h: by,
                ..r
            },
            colour,
        );
        self.rect(Rect { w: by, ..r }, colour);
        self.rect(
            Rect {
                x: r.x + r.w - by,
                w: by,
                ..r
            },
            colour,
        );
    }

    /// A line of text at (x, y), `scale` screen pixels per font pixel, with
    /// a shadow.
    pub fn text(&mut self, x: f32, y: f32, text: &str, colour: [f32; 4], scale: f32) {
        let shadow = [0.0, 0.0, 0.0, 0.6 * colour[3]];
        for (d, colour) in [(scale, shadow), (0.0, colour)] {
            for (x, y) in text_pixels(x + d, y + d, text, scale) {
                let r = Rect {
                    x,
                    y,
                    w: scale,
                    h: scale,
                };
                self.rect(r, colour);
            }
        }
    }

    /// The width of `text` drawn at `scale`.
    pub fn text_width(text: &str, scale: f32) -> f32 {
        text.chars().count() as f32 * GLYPH_W * scale
    }

    /// A stack in a slot: its icon (else its name's colour), its count
    /// when more than one, its wear as a bar.
    pub fn stack(&mut self, pictures: &mut dyn Pictures, r: Rect, stack: &Stack, alpha: f32) {
        let scale = (r.h / CELL_PX).max(0.5) * 2.0;
        let inner = r.inset(r.w * 0.08);
        match pictures.item(&stack.name) {
            Some(uv) => self.quad(inner, uv, [1.0, 1.0, 1.0, alpha]),
            None => {
                let [red, g, b] = name_colour(&stack.name).map(|c| f32::from(c) / 255.0);
                self.rect(inner.inset(r.w * 0.1), [red, g, b, alpha]);
            }
        }
        if stack.wear > 0 {
            let left = 1.0 - (stack.wear.min(65_535) as f32 / 65_536.0);
            let bar = Rect {
                x: inner.x,
                y: inner.y + inner.h - scale,
                w: inner.w,
                h: scale,
            };
            self.rect(bar, [0.0, 0.0, 0.0, alpha]);
            self.rect(
                Rect {
                    w: inner.w * left,
                    ..bar
                },
                [1.0 - left, left, 0.1, alpha],
            );
        }
        if stack.count > 1 {
            let count = stack.count.to_string();
            let tw = Self::text_width(&count, scale / 2.0 * 1.5);
            self.text(
                r.x + r.w - tw - 2.0,
                r.y + r.h - 7.0 * scale * 0.75 - 2.0,
                &count,
                [1.0, 1.0, 1.0, alpha],
                scale / 2.0 * 1.5,
            );
        }
    }

    /// The hotbar at the bottom centre: item slots (icons and counts) or
    /// block names (their cubes), the selected one framed and named above.
    pub fn hotbar(&mut self, pictures: &mut dyn Pictures, state: &UiState, view: &UiView) {
        let (width, height) = (self.width as u32, self.height as u32);
        let scale = ui_scale(height) * 2.0;
        let stacks: Vec<Option<Stack>> = match &state.hotbar_slots {
            Some(slots) => slots.clone(),
            None => state
                .hotbar
                .iter()
                .map(|name| {
                    Some(Stack {
                        name: name.clone(),
                        count: 1,
                        wear: 0,
                    })
                })
                .collect(),
        };
        if stacks.is_empty() {
            return;
        }
        let first = hotbar_slot(width, height, stacks.len(), 0);
        let bar = Rect {
            x: first.x - 4.0,
            y: first.y - 4.0,
            w: first.w * stacks.len() as f32 + 8.0,
            h: first.h + 8.0,
        };
        self.rect(bar, [0.0, 0.0, 0.0, 0.45]);
        for (i, stack) in stacks.iter().enumerate() {
            let r = hotbar_slot(width, height, stacks.len(), i);
            let hovered = view.hover
                == Some(Hit::Slot {
                    grid: "hotbar".into(),
                    index: i,
                });
            if i == state.selected {
                self.rect(r, [1.0, 1.0, 1.0, 0.95]);
                self.rect(r.inset(3.0), [0.2, 0.2, 0.22, 0.9]);
            } else if hovered {
                self.rect(r.inset(2.0), SLOT_HOVER);
            }
            if let Some(stack) = stack {
                self.stack(pictures, r, stack, 1.0);
            }
            if i < 10 && state.hotbar_slots.is_none() {
                let digit = format!("{}", (i + 1) % 10);
                self.text(r.x + 4.0, r.y + 4.0, &digit, WHITE_TEXT, scale * 0.75);
            }
        }
        let name = stacks.get(state.selected).cloned().flatten().map(|s| {
            state
                .items
                .get(&s.name)
                .map(|d| d.description.clone())
                .filter(|d| !d.is_empty())
                .unwrap_or(s.name)
        });
        let up = if state.health.is_some() { 44.0 } else { 26.0 } * scale / 2.0;
        if let Some(name) = name {
            let w = Self::text_width(&name, scale);
            self.text(
                (self.width - w) / 2.0,
                first.y - up,
                &name,
                WHITE_TEXT,
                scale,
            );
        }
        if let Some((points, max)) = state.health {
            self.hearts(points, max, first.x, first.y - 8.0 * scale);
        }
    }

    /// Hearts (two points each) from (x, bottom) rightwards.
    fn hearts(&mut self, points: u32, max: u32, x: f32, bottom: f32) {
        let px = ui_scale(self.height as u32) * 2.0;
        let hearts = max.div_ceil(2).min(50);
        for i in 0..hearts {
            let hx = x + i as f32 * 8.0 * px;
            let full = points >= 2 * i + 2;
            let half = points == 2 * i + 1;
            for (row, bits) in heart().iter().enumerate() {
                for col in 0..7u32 {
                    if bits & (0x40 >> col) == 0 {
                        continue;
                    }
                    let lit = full || (half && col < 4);
                    let colour = if lit {
                        [0.86, 0.08, 0.1, 1.0]
                    } else {
                        [0.2, 0.04, 0.05, 0.85]
                    };
                    let r = Rect {
                        x: hx + col as f32 * px,
                        y: bottom - (6 - row) as f32 * px,
                        w: px,
                        h: px,
                    };
                    self.rect(r, colour);
                }
            }
        }
    }

    /// The chat at the bottom left: the recent lines (faded by `view`) and
    /// the line being typed.
    pub fn chat(&mut self, state: &UiState, view: &UiView) {
        let scale = ui_scale(self.height as u32) * 2.0;
        let line_h = LINE_H * scale;
        let mut y = self.height - HOTBAR_SLOT_PX * scale / 2.0 - 24.0 - line_h;
        let width = (self.width * 0.5).max(200.0);
        if let Some(input) = &view.chat_input {
            let r = Rect {
                x: 4.0,
                y: y - 3.0,
                w: width,
                h: line_h + 2.0,
            };
            self.rect(r, [0.0, 0.0, 0.0, 0.6]);
            let text = format!("{input}_");
            let fit = ((width - 8.0) / (GLYPH_W * scale)) as usize;
            let skip = text.chars().count().saturating_sub(fit);
            let shown: String = text.chars().skip(skip).collect();
            self.text(8.0, y, &shown, WHITE_TEXT, scale);
        }
        y -= line_h + 4.0;
        for line in state.chat_lines.iter().rev() {
            let alpha = if view.chat_input.is_some() {
                1.0
            } else {
                view.chat_alpha.get(&line.serial).copied().unwrap_or(1.0)
            };
            if alpha > 0.0 {
                let w = (UiPainter::text_width(&line.text, scale) + 8.0).min(width);
                self.rect(
                    Rect {
                        x: 4.0,
                        y: y - 3.0,
                        w,
                        h: line_h,
                    },
                    [0.0, 0.0, 0.0, 0.4 * alpha],
                );
                self.text(8.0, y, &line.text, [1.0, 1.0, 1.0, alpha], scale);
            }
            y -= line_h;
        }
    }

    /// The top screen: panel, title, widgets, the hovered slot's item name,
    /// the dragged stack at the mouse.
    pub fn screen(
        &mut self,
        pictures: &mut dyn Pictures,
        state: &UiState,
        screen: &Screen,
        view: &UiView,
    ) {
        let (width, height) = (self.width as u32, self.height as u32);
        let layout = ScreenLayout::new(screen, width, height);
        let scale = ui_scale(height) * 2.0;
        let cell = layout.cell;
        self.rect(layout.panel, PANEL);
        self.frame(layout.panel, 2.0, [0.5, 0.5, 0.55, 1.0]);
        if !screen.title.is_empty() {
            let y = layout.panel.y + cell * 0.25;
            self.text(layout.origin[0], y, &screen.title, WHITE_TEXT, scale);
        }
        let text_y = |r: Rect| r.y + (r.h - 7.0 * scale) / 2.0;
        for widget in &screen.widgets {
            let r = layout.widget(widget);
            match &widget.kind {
                WidgetKind::Slots {
                    id, columns, slots, ..
                } => {
                    for (index, stack) in slots.iter().enumerate() {
                        let slot = layout.slot(widget, *columns, index);
                        let hit = Hit::Slot {
                            grid: id.clone(),
                            index,
                        };
                        let colour = if view.hover.as_ref() == Some(&hit) {
                            SLOT_HOVER
                        } else {
                            SLOT
                        };
                        self.rect(slot.inset(1.0), colour);
                        if let Some(stack) = stack {
                            let dragged = view.drag.as_ref() == Some(&(id.clone(), index));
                            self.stack(pictures, slot, stack, if dragged { 0.4 } else { 1.0 });
                        }
                    }
                }
                WidgetKind::Label { text } => {
                    self.text(r.x, text_y(r), text, WHITE_TEXT, scale);
                }
                WidgetKind::Button { id, text, .. } => {
                    let hovered = view.hover == Some(Hit::Button(id.clone()));
                    let colour = if hovered {
                        [0.42, 0.48, 0.68, 1.0]
                    } else {
                        [0.3, 0.34, 0.5, 1.0]
                    };
                    let b = r.inset(2.0);
                    self.rect(b, colour);
                    let w = Self::text_width(text, scale);
                    self.text(
                        b.x + (b.w - w).max(0.0) / 2.0,
                        text_y(b),
                        text,
                        WHITE_TEXT,
                        scale,
                    );
                }
                WidgetKind::Field { id, text, .. } => {
                    let focused = view.focus.as_deref() == Some(id.as_str());
                    let b = r.inset(2.0);
                    self.rect(b, [0.03, 0.03, 0.04, 1.0]);
                    let edge = if focused {
                        [1.0, 1.0, 1.0, 1.0]
                    } else {
                        [0.45, 0.45, 0.5, 1.0]
                    };
                    self.frame(b, 1.0, edge);
                    let typed = view.fields.get(id).unwrap_or(text);
                    let stars;
                    let typed = if view.masked.contains(id) {
                        stars = "*".repeat(typed.chars().count());
                        &stars
                    } else {
                        typed
                    };
                    let shown = if focused {
                        format!("{typed}_")
                    } else {
                        typed.clone()
                    };
                    let fit = ((b.w - 8.0) / (GLYPH_W * scale)).max(0.0) as usize;
                    let skip = shown.chars().count().saturating_sub(fit);
                    let shown: String = shown.chars().skip(skip).collect();
                    self.text(b.x + 4.0, text_y(b), &shown, WHITE_TEXT, scale);
                }
                WidgetKind::Image { file, .. } => match pictures.file(file) {
                    Some(uv) => self.quad(r, uv, [1.0; 4]),
                    None => self.rect(r, [0.3, 0.1, 0.3, 1.0]),
                },
            }
        }
        // The hovered slot's item, named.
        let stack_at = |hit: &Hit| -> Option<Stack> {
            let Hit::Slot { grid, index } = hit else {
                return None;
            };
            if grid == "hotbar"
                && !screen
                    .widgets
                    .iter()
                    .any(|w| matches!(&w.kind, WidgetKind::Slots { id, .. } if id == grid))
            {
                return state.hotbar_slots.as_ref()?.get(*index).cloned().flatten();
            }
            screen.widgets.iter().find_map(|w| match &w.kind {
                WidgetKind::Slots { id, slots, .. } if id == grid => {
                    slots.get(*index).cloned().flatten()
                }
                _ => None,
            })
        };
        let cursor = view.cursor.unwrap_or([0.0, 0.0]);
        if let Some((grid, index)) = &view.drag {
            let hit = Hit::Slot {
                grid: grid.clone(),
                index: *index,
            };
            if let Some(stack) = stack_at(&hit) {
                let r = Rect {
                    x: cursor[0] - cell / 2.0,
                    y: cursor[1] - cell / 2.0,
                    w: cell,
                    h: cell,
                };
                self.stack(pictures, r, &stack, 1.0);
            }
        } else if let Some(stack) = view.hover.as_ref().and_then(stack_at) {
            let name = state
                .items
                .get(&stack.name)
                .map(|d| d.description.clone())
                .filter(|d| !d.is_empty())
                .unwrap_or(stack.name);
            let w = Self::text_width(&name, scale) + 8.0;
            let r = Rect {
                x: cursor[0] + 12.0,
                y: cursor[1] - 7.0 * scale - 10.0,
                w,
                h: 7.0 * scale + 8.0,
            };
            self.rect(r, [0.05, 0.0, 0.1, 0.92]);
            self.text(r.x + 4.0, r.y + 4.0, &name, WHITE_TEXT, scale);
        }
    }

    /// Everything of the game's UI: hotbar, hearts, chat, the top screen.
    pub fn ui(
        &mut self,
        pictures: &mut dyn Pictures,
        state: &UiState,
        screen: Option<&Screen>,
        view: &UiView,
    ) {
        self.hotbar(pictures, state, view);
        self.chat(state, view);
        if let Some(screen) = screen {
            self.screen(pictures, state, screen, view);
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

    #[test]
    fn ndc_puts_the_top_left_pixel_at_minus_one_one_and_the_centre_at_zero() {
        assert_eq!(ndc(0.0, 0.0, 640.0, 480.0), [-1.0, 1.0]);
        assert_eq!(ndc(320.0, 240.0, 640.0, 480.0), [0.0, 0.0]);
        assert_eq!(ndc(640.0, 480.0, 640.0, 480.0), [1.0, -1.0]);
    }

    #[test]
    fn text_pixels_are_the_lit_font_pixels_scaled_one_glyph_width_apart() {
        let pixels: Vec<(f32, f32)> = text_pixels(10.0, 20.0, "1.", 2.0).collect();
        let mut expected = Vec::new();
        for (i, c) in ['1', '.'].into_iter().enumerate() {
            for (row, bits) in glyph(c).into_iter().enumerate() {
                for col in 0..5 {
                    if bits & (0x10 >> col) != 0 {
                        let x = 10.0 + i as f32 * GLYPH_W * 2.0 + col as f32 * 2.0;
                        expected.push((x, 20.0 + row as f32 * 2.0));
                    }
                }
            }
        }
        assert!(!expected.is_empty());
        assert_eq!(pixels, expected);
    }

    use crate::sandbox::ChatLine;

    fn stack(name: &str, count: u32) -> Option<Stack> {
        Some(Stack {
            name: name.into(),
            count,
            wear: 0,
        })
    }

    fn inventory() -> Screen {
        let widget = |x, y, kind| Widget { x, y, kind };
        Screen {
            id: "inv".into(),
            serial: 1,
            title: "Inventory".into(),
            columns: 9.0,
            rows: 4.0,
            widgets: vec![
                widget(
                    0.0,
                    1.0,
                    WidgetKind::Slots {
                        id: "main".into(),
                        columns: 8,
                        slots: vec![stack("stone", 5); 10],
                        clickable: false,
                    },
                ),
                widget(
                    0.0,
                    3.0,
                    WidgetKind::Field {
                        id: "name".into(),
                        width: 4.0,
                        text: String::new(),
                    },
                ),
                widget(
                    6.0,
                    3.0,
                    WidgetKind::Button {
                        id: "ok".into(),
                        width: 2.0,
                        text: "OK".into(),
                    },
                ),
            ],
        }
    }

    /// The layout finds each slot of a grid (wrapping at its columns), the
    /// button and the field by the mouse, and nothing outside them; the
    /// panel is centred and cells are 36 px at 720 p, 72 at 1440.
    #[test]
    fn a_screens_layout_finds_slots_buttons_and_fields_under_the_mouse() {
        let screen = inventory();
        let layout = ScreenLayout::new(&screen, 1280, 720);
        assert_eq!(layout.cell, CELL_PX);
        let centre = layout.panel.x + layout.panel.w / 2.0;
        assert!((centre - 640.0).abs() < 1.0, "centred: {:?}", layout.panel);
        let at = |x: f32, y: f32| {
            let [ox, oy] = layout.origin;
            layout.hit(
                &screen,
                ox + (x + 0.5) * layout.cell,
                oy + (y + 0.5) * layout.cell,
            )
        };
        let slot = |index| {
            Some(Hit::Slot {
                grid: "main".into(),
                index,
            })
        };
        assert_eq!(at(0.0, 1.0), slot(0));
        assert_eq!(at(7.0, 1.0), slot(7));
        assert_eq!(at(1.0, 2.0), slot(9), "the second row");
        assert_eq!(at(2.0, 2.0), None, "past the last slot");
        assert_eq!(at(8.0, 1.0), None, "past the columns");
        assert_eq!(at(3.0, 3.0), Some(Hit::Field("name".into())));
        assert_eq!(at(7.0, 3.0), Some(Hit::Button("ok".into())));
        assert_eq!(layout.hit(&screen, 1.0, 1.0), None);
        assert_eq!(ScreenLayout::new(&screen, 2560, 1440).cell, CELL_PX * 2.0);
    }

    struct OnlyStone;

    const STONE_UV: UvRect = [0.25, 0.25, 0.5, 0.5];

    impl Pictures for OnlyStone {
        fn item(&mut self, name: &str) -> Option<UvRect> {
            (name == "stone").then_some(STONE_UV)
        }
        fn file(&mut self, _: &str) -> Option<UvRect> {
            None
        }
    }

    /// Quads whose top left corner shows `uv` (each has it twice).
    fn uses(painter: &UiPainter, uv: [f32; 2]) -> usize {
        painter.vertices.iter().filter(|v| v.uv == uv).count() / 2
    }

    fn paint(state: &UiState, view: &UiView) -> UiPainter {
        let mut painter = UiPainter::new(1280, 720);
        painter.ui(&mut OnlyStone, state, state.screens.last(), view);
        painter
    }

    /// The hotbar's item slots draw their icons (or a swatch) and their
    /// counts; hearts show with the health; a screen draws each slot's
    /// icon.
    #[test]
    fn the_hotbar_and_screens_draw_item_icons_counts_and_hearts() {
        let mut state = UiState {
            hotbar_slots: Some(vec![stack("stone", 1), stack("dirt", 1), None]),
            ..UiState::default()
        };
        let view = UiView::default();
        let plain = paint(&state, &view);
        assert_eq!(uses(&plain, [0.25, 0.25]), 1, "one stone icon");
        state.hotbar_slots = Some(vec![stack("stone", 12), stack("dirt", 1), None]);
        let counted = paint(&state, &view);
        assert!(
            counted.vertices.len() > plain.vertices.len() + 6 * 10,
            "a count"
        );
        state.health = Some((7, 20));
        let hearts = paint(&state, &view);
        let red = |p: &UiPainter| {
            p.vertices
                .iter()
                .filter(|v| v.colour == [0.86, 0.08, 0.1, 1.0])
                .count()
        };
        let dark = |p: &UiPainter| {
            p.vertices
                .iter()
                .filter(|v| v.colour == [0.2, 0.04, 0.05, 0.85])
                .count()
        };
        assert!(
            red(&hearts) > 0 && dark(&hearts) > red(&hearts),
            "3.5 of 10 hearts lit"
        );
        state.screens = vec![inventory()];
        let screen = paint(&state, &view);
        assert_eq!(
            uses(&screen, [0.25, 0.25]),
            1 + 10,
            "the hotbar's and the grid's"
        );
    }

    /// Chat lines fade by the opacity the window gives them and all show
    /// while the line is being typed.
    #[test]
    fn chat_lines_fade_and_all_show_while_typing() {
        let state = UiState {
            chat_lines: (1..=3)
                .map(|serial| ChatLine {
                    serial,
                    text: format!("line {serial}"),
                })
                .collect(),
            ..UiState::default()
        };
        let mut view = UiView::default();
        let all = paint(&state, &view).vertices.len();
        view.chat_alpha = HashMap::from([(1, 0.0), (2, 0.0), (3, 0.5)]);
        let one = paint(&state, &view).vertices.len();
        assert!(one < all / 2, "{one} vs {all}");
        view.chat_input = Some("hi".into());
        let typing = paint(&state, &view).vertices.len();
        assert!(
            typing > all,
            "all lines and the typed one: {typing} vs {all}"
        );
    }
}
