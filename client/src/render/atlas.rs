//! The texture atlas: one resolution ([`TILE`]² RGBA), one layer per
//! texture, built at runtime from the registry's texture names and the
//! modules' `client_data` files; a block whose texture is missing gets a
//! layer of a colour derived from its name. The renderer uploads the
//! layers as a texture array, so a greedy-merged quad repeats its texture
//! once per voxel.
//!
//! Owns: finding a texture file by name, decoding and resizing it, the
//! name-derived colours, and each voxel type's kind ([`kind_of`]: opaque,
//! cutout, blended or liquid, from its definition and its textures' alpha)
//! and layer per face (the mesher's [`MeshTable`]). Does not own: GPU textures (`gpu`), or which files
//! the server sends.

use std::collections::HashMap;
use std::io::Cursor;
use std::sync::Arc;

use buildat_voxel::{AIR, UNKNOWN_NAME, VoxelDefinition, VoxelRegistry, light};

use super::mesh::{Kind, MeshTable};

/// Texels along each side of a layer.
pub const TILE: u32 = 16;
const TILE_BYTES: usize = (TILE * TILE * 4) as usize;

/// The layers and the table the mesher reads them through.
#[derive(Debug, Clone)]
pub struct Atlas {
    /// RGBA, `TILE`² each; layer 0 is the `unknown` checker.
    pub layers: Vec<Vec<u8>>,
    pub table: Arc<MeshTable>,
    /// The table far chunks are meshed with ([`MeshTable::far`]).
    pub far_table: Arc<MeshTable>,
    /// Texture names found as files (the rest are name colours).
    pub textured: usize,
    /// Each block's mean colour (its top face), for the hotbar.
    pub swatches: HashMap<String, [u8; 3]>,
    /// Each block's layer per face (+x, -x, +y, -y, +z, -z), for its item
    /// icon (`icons`).
    pub faces: HashMap<String, [u32; 6]>,
}

/// The file holding texture `texture`: `<module>/client_data/textures/<texture>`
/// or `<module>/client_data/<texture>`, first by name.
pub fn find_texture<'a>(files: &'a HashMap<String, Arc<[u8]>>, texture: &str) -> Option<&'a [u8]> {
    let suffixes = [
        format!("/client_data/textures/{texture}"),
        format!("/client_data/{texture}"),
    ];
    let mut names: Vec<&String> = files
        .keys()
        .filter(|name| suffixes.iter().any(|s| name.ends_with(s.as_str())))
        .collect();
    names.sort();
    names
        .first()
        .and_then(|name| files.get(*name))
        .map(|c| &c[..])
}

/// Decodes a PNG to `TILE`² RGBA (nearest texel), or `None` if it is not
/// a PNG this can read.
pub fn decode_tile(png_bytes: &[u8]) -> Option<Vec<u8>> {
    let mut decoder = png::Decoder::new(Cursor::new(png_bytes));
    decoder.set_transformations(png::Transformations::normalize_to_color8());
    let mut reader = decoder.read_info().ok()?;
    let mut buffer = vec![0; reader.output_buffer_size()?];
    let info = reader.next_frame(&mut buffer).ok()?;
    let channels = match info.color_type {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return None,
    };
    let (width, height) = (info.width as usize, info.height as usize);
    if width == 0 || height == 0 {
        return None;
    }
    let mut tile = Vec::with_capacity(TILE_BYTES);
    for y in 0..TILE as usize {
        for x in 0..TILE as usize {
            let (sx, sy) = (x * width / TILE as usize, y * height / TILE as usize);
            let at = sy * info.line_size + sx * channels;
            let px = buffer.get(at..at + channels)?;
            let rgba = match *px {
                [g] => [g, g, g, 255],
                [g, a] => [g, g, g, a],
                [r, g, b] => [r, g, b, 255],
                [r, g, b, a] => [r, g, b, a],
                _ => return None,
            };
            tile.extend_from_slice(&rgba);
        }
    }
    Some(tile)
}

/// FNV-1a of a name: the seed of its colour and texel noise.
fn name_hash(name: &str) -> u32 {
    name.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// The colour a block without a texture is drawn in: a hue from its name,
/// moderately saturated, mid-bright.
pub fn name_colour(name: &str) -> [u8; 3] {
    let hue = (name_hash(name) % 360) as f32;
    let (s, v) = (0.45f32, 0.75f32);
    let c = v * s;
    let x = c * (1.0 - ((hue / 60.0) % 2.0 - 1.0).abs());
    let (r, g, b) = match (hue / 60.0) as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = v - c;
    [r, g, b].map(|ch| ((ch + m) * 255.0).round() as u8)
}

/// A layer of `colour` with a little fixed texel noise, so faces read.
fn colour_tile(name: &str, colour: [u8; 3]) -> Vec<u8> {
    let mut state = name_hash(name) | 1;
    let mut tile = Vec::with_capacity(TILE_BYTES);
    for _ in 0..TILE * TILE {
        state ^= state << 13;
        state ^= state >> 17;
        state ^= state << 5;
        let shade = 0.9 + (state % 21) as f32 / 100.0;
        for c in colour {
            tile.push((f32::from(c) * shade).min(255.0) as u8);
        }
        tile.push(255);
    }
    tile
}

/// Magenta and black: `unknown` voxels and broken references.
fn checker_tile() -> Vec<u8> {
    let mut tile = Vec::with_capacity(TILE_BYTES);
    for y in 0..TILE {
        for x in 0..TILE {
            let on = (x / 4 + y / 4) % 2 == 0;
            tile.extend_from_slice(if on {
                &[200, 0, 200, 255]
            } else {
                &[20, 20, 20, 255]
            });
        }
    }
    tile
}

/// The mean RGB of an RGBA layer.
fn mean_colour(layer: &[u8]) -> [u8; 3] {
    mean_rgb(layer.chunks_exact(4))
}

/// The mean RGB of RGBA texels (black for none).
fn mean_rgb<'a>(texels: impl Iterator<Item = &'a [u8]>) -> [u8; 3] {
    let (mut sum, mut n) = ([0u64; 3], 0u64);
    for px in texels {
        for (s, &c) in sum.iter_mut().zip(px) {
            *s += u64::from(c);
        }
        n += 1;
    }
    sum.map(|s| u8::try_from(s / n.max(1)).unwrap_or(u8::MAX))
}

/// Gives an RGBA layer's clear texels (alpha 0) the mean colour of its
/// others, at 60 %, keeping their alpha: what a cutout texture shows where
/// it is drawn opaque.
fn fill_holes(layer: &mut [u8]) {
    let mean = mean_rgb(layer.chunks_exact(4).filter(|px| px[3] > 0));
    let fill = mean.map(|c| u8::try_from(u16::from(c) * 3 / 5).unwrap_or(u8::MAX));
    for px in layer.chunks_exact_mut(4).filter(|px| px[3] == 0) {
        px[..3].copy_from_slice(&fill);
    }
}

/// How a drawn voxel type is drawn, from its definition and its faces'
/// layers: not physically solid (water, lava, and a torch or a sapling,
/// which the player walks through) a liquid; else light-opaque
/// ([`light::OPAQUE`]) opaque whatever its texture; else its texture's
/// alpha decides: some texel strictly between 0 and 255 blended (glass,
/// ice), some texel 0 cutout (leaves), none opaque.
pub fn kind_of(definition: &VoxelDefinition, layers: [Option<&Vec<u8>>; 6]) -> Kind {
    if definition.id == AIR {
        return Kind::Empty;
    }
    if !definition.physically_solid {
        return Kind::Liquid;
    }
    if definition.light_absorption >= light::OPAQUE {
        return Kind::Opaque;
    }
    let alphas = || {
        layers
            .iter()
            .flatten()
            .flat_map(|layer| layer.chunks_exact(4).map(|px| px[3]))
    };
    if alphas().any(|a| a > 0 && a < 255) {
        Kind::Blended
    } else if alphas().any(|a| a == 0) {
        Kind::Cutout
    } else {
        Kind::Opaque
    }
}

impl Atlas {
    /// Layers for every texture the registry names, from `files`.
    pub fn build(registry: &VoxelRegistry, files: &HashMap<String, Arc<[u8]>>) -> Self {
        let mut layers = vec![checker_tile()];
        let mut by_key: HashMap<String, u32> = HashMap::new();
        let mut textured = 0;
        let mut swatches = HashMap::new();
        let mut block_faces = HashMap::new();
        let mut entries = Vec::new();
        for definition in registry.definitions() {
            let id = definition.id as usize;
            if entries.len() <= id {
                entries.resize(id + 1, (Kind::Opaque, [0; 6]));
            }
            let block = &definition.name.block_name;
            let kind = if definition.id == AIR {
                Kind::Empty
            } else {
                Kind::Opaque
            };
            if kind == Kind::Empty || block == UNKNOWN_NAME {
                // Not drawn, or the checker of layer 0.
                if let Some(entry) = entries.get_mut(id) {
                    *entry = (kind, [0; 6]);
                }
                continue;
            }
            let faces = definition.textures.clone().map(|texture| {
                let tile = find_texture(files, &texture).and_then(decode_tile);
                let key = match &tile {
                    Some(_) => format!("file:{texture}"),
                    None => format!("colour:{block}"),
                };
                if let Some(&layer) = by_key.get(&key) {
                    return layer;
                }
                let layer = u32::try_from(layers.len()).unwrap_or(0);
                match tile {
                    Some(tile) => {
                        textured += 1;
                        layers.push(tile);
                    }
                    None => layers.push(colour_tile(block, name_colour(block))),
                }
                by_key.insert(key, layer);
                layer
            });
            block_faces.entry(block.clone()).or_insert(faces);
            if let Some(layer) = layers.get(faces[2] as usize) {
                swatches
                    .entry(block.clone())
                    .or_insert_with(|| mean_colour(layer));
            }
            let kind = kind_of(definition, faces.map(|f| layers.get(f as usize)));
            if let Some(entry) = entries.get_mut(id) {
                *entry = (kind, faces);
            }
        }
        // Far away, cutout types are drawn opaque: their holes show the
        // leaves' own colour, darker (the alpha-tested pass discards them).
        for (kind, faces) in &entries {
            if *kind == Kind::Cutout {
                for &face in faces {
                    if let Some(layer) = layers.get_mut(face as usize) {
                        fill_holes(layer);
                    }
                }
            }
        }
        let table = MeshTable::new(entries);
        Self {
            layers,
            far_table: Arc::new(table.far()),
            table: Arc::new(table),
            textured,
            swatches,
            faces: block_faces,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_voxel::VoxelName;

    fn png_of(rgb: [u8; 3], side: u32) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, side, side);
            encoder.set_color(png::ColorType::Rgb);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().expect("header");
            let pixels: Vec<u8> = (0..side * side).flat_map(|_| rgb).collect();
            writer.write_image_data(&pixels).expect("data");
        }
        out
    }

    /// A `side`² RGBA PNG whose texel (x, y) is `texel(x, y)`.
    fn rgba_png(side: u32, texel: impl Fn(u32, u32) -> [u8; 4]) -> Vec<u8> {
        let mut out = Vec::new();
        {
            let mut encoder = png::Encoder::new(&mut out, side, side);
            encoder.set_color(png::ColorType::Rgba);
            encoder.set_depth(png::BitDepth::Eight);
            let mut writer = encoder.write_header().expect("header");
            let pixels: Vec<u8> = (0..side * side)
                .flat_map(|i| texel(i % side, i / side))
                .collect();
            writer.write_image_data(&pixels).expect("data");
        }
        out
    }

    #[test]
    fn kinds_come_from_solidity_light_and_texture_alpha() {
        // (name, solid, light absorption, texture alpha at x < 8 and x >= 8)
        let blocks: [(&str, bool, u8, [u8; 2]); 8] = [
            ("stone", true, light::OPAQUE, [255, 255]),
            ("water", false, 1, [160, 160]),
            ("lava", false, light::OPAQUE, [255, 255]),
            ("leaves", true, 1, [0, 255]),
            ("ice", true, 2, [180, 180]),
            ("glass", true, 0, [36, 230]),
            // Light-opaque: its holes are not drawn through.
            ("grate", true, light::OPAQUE, [0, 255]),
            // Not solid: walked through like water, drawn like it.
            ("torch", false, 0, [255, 255]),
        ];
        let mut registry = VoxelRegistry::default();
        let mut files = HashMap::new();
        for (name, solid, absorption, alpha) in blocks {
            registry
                .add_lit(
                    VoxelName::simple(name),
                    std::array::from_fn(|_| format!("{name}.png")),
                    "",
                    solid,
                    buildat_voxel::VoxelLight {
                        source: 0,
                        absorption,
                    },
                )
                .expect("add");
            let texture = rgba_png(16, |x, _| [90, 90, 90, alpha[usize::from(x >= 8)]]);
            files.insert(
                format!("main/client_data/textures/{name}.png"),
                Arc::<[u8]>::from(texture),
            );
        }
        let atlas = Atlas::build(&registry, &files);
        let kind = |name: &str| {
            let id = registry
                .get_id(&VoxelName::simple(name).canonical())
                .expect("registered");
            atlas.table.kind(id)
        };
        assert_eq!(kind("air"), Kind::Empty);
        assert_eq!(kind("stone"), Kind::Opaque);
        assert_eq!(kind("water"), Kind::Liquid);
        assert_eq!(kind("lava"), Kind::Liquid);
        assert_eq!(kind("leaves"), Kind::Cutout);
        assert_eq!(kind("ice"), Kind::Blended);
        assert_eq!(kind("glass"), Kind::Blended);
        assert_eq!(kind("grate"), Kind::Opaque);
        assert_eq!(kind("torch"), Kind::Liquid);
    }

    #[test]
    fn the_default_games_see_through_textures_have_the_kinds_they_are_drawn_for() {
        let dir = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../modules/main/client_data/textures"
        );
        let layer = |name: &str| {
            let bytes = std::fs::read(format!("{dir}/{name}.png")).expect("texture file");
            decode_tile(&bytes).expect("a PNG")
        };
        let definition = |solid: bool, absorption: u8| VoxelDefinition {
            id: 1,
            name: VoxelName::simple("x"),
            textures: std::array::from_fn(|_| String::new()),
            handler_module: String::new(),
            physically_solid: solid,
            edge_material: buildat_voxel::EdgeMaterial::Solid,
            light_source: 0,
            light_absorption: absorption,
        };
        let kind = |name: &str, absorption: u8| {
            let tile = layer(name);
            kind_of(&definition(true, absorption), [Some(&tile); 6])
        };
        assert_eq!(kind("leaves", 1), Kind::Cutout);
        assert_eq!(kind("pine_leaves", 1), Kind::Cutout);
        assert_eq!(kind("ice", 2), Kind::Blended);
        assert_eq!(kind("glass", 0), Kind::Blended);
        assert_eq!(
            kind("water", 1),
            Kind::Blended,
            "its texture is see-through too"
        );
        assert_eq!(kind("stone", 0), Kind::Opaque);
    }

    /// A cutout texture drawn opaque (far away) shows its own colour,
    /// darker, where its holes are; its alpha is kept for the near pass.
    #[test]
    fn holes_take_the_textures_darker_mean_colour() {
        let mut layer = Vec::new();
        for i in 0..4u8 {
            let texel = if i < 2 {
                [100, 200, 50, 255]
            } else {
                [0, 0, 0, 0]
            };
            layer.extend_from_slice(&texel);
        }
        fill_holes(&mut layer);
        assert_eq!(&layer[..8], &[100, 200, 50, 255, 100, 200, 50, 255]);
        assert_eq!(&layer[8..12], &[60, 120, 30, 0]);
        let mut clear = vec![0u8; 8];
        fill_holes(&mut clear);
        assert_eq!(clear, vec![0; 8], "all holes: black, no division by zero");
    }

    #[test]
    fn textures_come_from_files_and_the_rest_from_names() {
        let mut registry = VoxelRegistry::default();
        for name in ["stone", "moss"] {
            registry
                .add(
                    VoxelName::simple(name),
                    std::array::from_fn(|_| format!("{name}.png")),
                    "",
                    true,
                )
                .expect("add");
        }
        let files = HashMap::from([(
            "main/client_data/textures/stone.png".to_string(),
            Arc::<[u8]>::from(png_of([10, 20, 30], 32)),
        )]);
        let atlas = Atlas::build(&registry, &files);
        assert_eq!(atlas.textured, 1);
        assert_eq!(atlas.layers.len(), 3, "checker, stone, moss's colour");
        assert!(atlas.layers.iter().all(|l| l.len() == TILE_BYTES));
        assert_eq!(&atlas.layers[1][..4], &[10, 20, 30, 255]);
        let moss = name_colour("moss");
        let texel = &atlas.layers[2][..3];
        assert!(
            texel
                .iter()
                .zip(moss)
                .all(|(&t, m)| (i32::from(t) - i32::from(m)).abs() < 40),
            "{texel:?} vs {moss:?}"
        );
        assert_ne!(name_colour("moss"), name_colour("stone"));
    }
}
