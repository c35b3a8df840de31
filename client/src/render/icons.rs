//! Item icons, drawn on the CPU into [`CELL`]² RGBA pictures for the UI
//! texture (`ui_gpu`): a block item is a small isometric cube of its
//! voxel's +y (top, full light), +x (right, darker) and +z (left, darkest)
//! textures; an item with a `texture` (or an image widget's file) is that
//! PNG scaled in, keeping its proportions.
//!
//! Owns: the cube's projection, scaling a PNG into a cell, finding an
//! item's picture. Does not own: the atlas's layers (`atlas`), the item
//! definitions (the game's Lua: `buildat.ui.define_items`), the texture
//! cells (`ui_gpu`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::Scene;
use super::atlas::{Atlas, TILE, find_texture};
use super::overlay::Pictures;
use super::png_rgba;
use super::ui_gpu::{CELL, UiLayer, UvRect};
use crate::sandbox::ItemDef;

/// The largest PNG (in pixels) decoded for a picture.
const MAX_IMAGE_PIXELS: u64 = 4096 * 4096;

/// Brightness of the top, the +x and the +z face.
const SHADES: [f32; 3] = [1.0, 0.78, 0.6];

/// A texel of a `TILE`² RGBA layer at (u, v) in 0..1, nearest.
fn texel(layer: &[u8], u: f32, v: f32) -> [u8; 4] {
    let tile = TILE as f32;
    let x = ((u * tile) as u32).min(TILE - 1);
    let y = ((v * tile) as u32).min(TILE - 1);
    let at = ((y * TILE + x) * 4) as usize;
    match layer.get(at..at + 4) {
        Some(&[r, g, b, a]) => [r, g, b, a],
        _ => [0; 4],
    }
}

/// An isometric cube from three `TILE`² RGBA layers: top (+y), right
/// (+x), left (+z). Transparent around it.
pub fn block_icon(top: &[u8], right: &[u8], left: &[u8]) -> Vec<u8> {
    let side = CELL as f32;
    // Half the cube's width, the top rhombus's half height, a side's height.
    let (a, b, c) = (side / 2.0 - 1.0, side / 4.0 - 0.5, side / 2.0 - 1.0);
    let (cx, y0) = (side / 2.0, 1.0);
    let mut out = vec![0u8; (CELL * CELL * 4) as usize];
    for py in 0..CELL {
        for px in 0..CELL {
            let (sx, sy) = ((px as f32 + 0.5 - cx) / a, (py as f32 + 0.5 - y0) / b);
            // Top: (x - z, x + z) = (sx, sy).
            let (x, z) = ((sy + sx) / 2.0, (sy - sx) / 2.0);
            let texel = if (0.0..1.0).contains(&x) && (0.0..1.0).contains(&z) {
                Some((texel(top, x, z), SHADES[0]))
            } else if sx >= 0.0 {
                // +x face (x = 1): sx = 1 - z, the height below the top edge.
                let z = 1.0 - sx;
                let down = (py as f32 + 0.5 - y0 - (1.0 + z) * b) / c;
                ((0.0..=1.0).contains(&z) && (0.0..1.0).contains(&down))
                    .then(|| (texel(right, 1.0 - z, down), SHADES[1]))
            } else {
                // +z face (z = 1): sx = x - 1.
                let x = 1.0 + sx;
                let down = (py as f32 + 0.5 - y0 - (1.0 + x) * b) / c;
                ((0.0..=1.0).contains(&x) && (0.0..1.0).contains(&down))
                    .then(|| (texel(left, x, down), SHADES[2]))
            };
            if let Some(([r, g, bl, al], shade)) = texel {
                let at = ((py * CELL + px) * 4) as usize;
                let lit = |v: u8| (f32::from(v) * shade).round() as u8;
                out[at..at + 4].copy_from_slice(&[lit(r), lit(g), lit(bl), al]);
            }
        }
    }
    out
}

/// A PNG scaled (nearest texel) into a cell, centred, its proportions
/// kept; `None` when it does not decode or is too large.
pub fn image_icon(png_bytes: &[u8]) -> Option<Vec<u8>> {
    let fits = |w, h| u64::from(w) * u64::from(h) <= MAX_IMAGE_PIXELS;
    let image = png_rgba::decode(png_bytes, fits).ok()?;
    let (width, height) = (image.width, image.height);
    let scale = CELL as f32 / width.max(height) as f32;
    let (w, h) = (
        ((width as f32 * scale) as u32).clamp(1, CELL),
        ((height as f32 * scale) as u32).clamp(1, CELL),
    );
    let (ox, oy) = ((CELL - w) / 2, (CELL - h) / 2);
    let mut out = vec![0u8; (CELL * CELL * 4) as usize];
    for y in 0..h {
        for x in 0..w {
            let sx = (x as u64 * u64::from(width) / u64::from(w)) as usize;
            let sy = (y as u64 * u64::from(height) / u64::from(h)) as usize;
            let at = (sy * width as usize + sx) * 4;
            let to = (((oy + y) * CELL + ox + x) * 4) as usize;
            out[to..to + 4].copy_from_slice(image.rgba.get(at..at + 4)?);
        }
    }
    Some(out)
}

/// A file by a `client_data` name: exactly, else as a texture is found
/// (`<module>/client_data/textures/<name>`, `<module>/client_data/<name>`).
pub fn find_file<'a>(files: &'a HashMap<String, Arc<[u8]>>, name: &str) -> Option<&'a [u8]> {
    files
        .get(name)
        .map(|c| &c[..])
        .or_else(|| find_texture(files, name))
}

/// The picture of item `name`: its `texture`, else its voxel's cube (a
/// name the game did not define but that is a block is its cube too);
/// `None` when there is none (the slot shows its name's colour).
pub fn item_picture(
    items: &BTreeMap<String, ItemDef>,
    atlas: Option<&Atlas>,
    files: &HashMap<String, Arc<[u8]>>,
    name: &str,
) -> Option<Vec<u8>> {
    let def = items.get(name);
    if let Some(texture) = def.and_then(|d| d.texture.as_deref())
        && let Some(picture) = find_file(files, texture).and_then(image_icon)
    {
        return Some(picture);
    }
    let voxel = def.and_then(|d| d.voxel.as_deref()).unwrap_or(name);
    let atlas = atlas?;
    let faces = atlas.faces.get(voxel)?;
    let layer = |face: usize| atlas.layers.get(faces[face] as usize).map(Vec::as_slice);
    Some(block_icon(layer(2)?, layer(0)?, layer(4)?))
}

/// The pictures of a scene's items and files, made on first use into the
/// UI texture.
pub struct ScenePictures<'a> {
    pub layer: &'a mut UiLayer,
    pub queue: &'a wgpu::Queue,
    pub scene: &'a Scene,
}

impl<'a> ScenePictures<'a> {
    /// The pictures of `scene`, in `layer` (forgetting those of an older atlas).
    pub fn new(layer: &'a mut UiLayer, queue: &'a wgpu::Queue, scene: &'a Scene) -> Self {
        layer.set_version(scene.atlas_version);
        Self {
            layer,
            queue,
            scene,
        }
    }
}

impl Pictures for ScenePictures<'_> {
    fn item(&mut self, name: &str) -> Option<UvRect> {
        let scene = self.scene;
        let def = scene.ui.items.get(name);
        let key = format!(
            "item:{name}:{:?}:{:?}",
            def.map(|d| &d.texture),
            def.map(|d| &d.voxel)
        );
        self.layer.picture(self.queue, &key, || {
            item_picture(&scene.ui.items, scene.atlas(), scene.files(), name)
        })
    }

    fn file(&mut self, file: &str) -> Option<UvRect> {
        let files = self.scene.files();
        self.layer.picture(self.queue, &format!("file:{file}"), || {
            find_file(files, file).and_then(image_icon)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(rgb: [u8; 3]) -> Vec<u8> {
        (0..TILE * TILE)
            .flat_map(|_| [rgb[0], rgb[1], rgb[2], 255])
            .collect()
    }

    fn pixel(icon: &[u8], x: u32, y: u32) -> [u8; 4] {
        let at = ((y * CELL + x) * 4) as usize;
        icon[at..at + 4].try_into().expect("4 bytes")
    }

    /// The cube shows the top texture at the top, the +x one on the right
    /// (darker), the +z one on the left (darker still), and nothing in the
    /// corners.
    #[test]
    fn a_block_icon_is_a_cube_of_its_top_and_two_sides() {
        let icon = block_icon(
            &layer([200, 0, 0]),
            &layer([0, 200, 0]),
            &layer([0, 0, 200]),
        );
        assert_eq!(icon.len(), (CELL * CELL * 4) as usize);
        let top = pixel(&icon, CELL / 2, CELL / 8);
        assert_eq!(top, [200, 0, 0, 255], "top middle");
        let right = pixel(&icon, CELL * 3 / 4, CELL * 3 / 4);
        assert!(
            right[1] > 100 && right[1] < 200 && right[0] == 0,
            "{right:?}"
        );
        let left = pixel(&icon, CELL / 4, CELL * 3 / 4);
        assert!(
            left[2] > 80 && left[2] < right[1] && left[1] == 0,
            "{left:?}"
        );
        for (x, y) in [(0, 0), (CELL - 1, 0), (0, CELL - 1), (CELL - 1, CELL - 1)] {
            assert_eq!(pixel(&icon, x, y)[3], 0, "corner {x},{y} is clear");
        }
        let drawn = icon.chunks_exact(4).filter(|p| p[3] > 0).count();
        let all = (CELL * CELL) as usize;
        assert!(drawn > all / 2 && drawn < all * 7 / 8, "{drawn} of {all}");
    }

    fn png_of(width: u32, height: u32, rgba: [u8; 4]) -> Vec<u8> {
        let pixels = rgba.repeat((width * height) as usize);
        png_rgba::encode(width, height, png::ColorType::Rgba, &pixels)
    }

    /// A wide PNG is scaled in with its proportions: centred, clear above
    /// and below; garbage is no picture.
    #[test]
    fn an_image_is_scaled_into_a_cell_keeping_its_proportions() {
        let icon = image_icon(&png_of(32, 16, [1, 2, 3, 255])).expect("decodes");
        assert_eq!(pixel(&icon, CELL / 2, CELL / 2), [1, 2, 3, 255]);
        assert_eq!(pixel(&icon, CELL / 2, 2)[3], 0, "clear above");
        assert_eq!(pixel(&icon, 0, CELL / 2), [1, 2, 3, 255], "full width");
        assert!(image_icon(b"not a png").is_none());
    }

    /// An item's picture: its texture file when it has one, else its
    /// voxel's cube, else nothing.
    #[test]
    fn an_items_picture_is_its_texture_or_its_voxels_cube() {
        let files = HashMap::from([(
            "survival/client_data/textures/stick.png".to_string(),
            Arc::<[u8]>::from(png_of(16, 16, [9, 9, 9, 255])),
        )]);
        let items = BTreeMap::from([
            (
                "stick".to_string(),
                ItemDef {
                    description: "Stick".into(),
                    texture: Some("stick.png".into()),
                    voxel: None,
                },
            ),
            (
                "nothing".to_string(),
                ItemDef {
                    description: "?".into(),
                    texture: Some("missing.png".into()),
                    voxel: None,
                },
            ),
        ]);
        let stick = item_picture(&items, None, &files, "stick").expect("the texture");
        assert_eq!(pixel(&stick, 5, 5), [9, 9, 9, 255]);
        assert!(item_picture(&items, None, &files, "nothing").is_none());
        let atlas = Atlas {
            layers: vec![layer([0, 0, 0]), layer([50, 60, 70])],
            table: Default::default(),
            far_table: Default::default(),
            textured: 1,
            swatches: HashMap::new(),
            faces: HashMap::from([("stone".to_string(), [1; 6])]),
        };
        let stone = item_picture(&items, Some(&atlas), &files, "stone").expect("a cube");
        assert_eq!(pixel(&stone, CELL / 2, CELL / 8), [50, 60, 70, 255]);
    }
}
