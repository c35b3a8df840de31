//! The maps of the held world: the top-down slice around the map centre
//! (the focus, else the first chunk's middle), each column its highest held
//! non-air voxel, read from the world view's held chunks; what each block
//! kind looks like; the ASCII map and the PNG map (written atomically).
//!
//! Does not own: the held chunks, the focus or how stream packets fill them
//! (`world`), when a map is drawn or where it is written (`app`, from the
//! command line).

use std::io::BufWriter;
use std::path::{Path, PathBuf};

use buildat_voxel::colour::block_colour;
use buildat_voxel::geometry::{self, CHUNK_SIZE, Pos};
use buildat_voxel::{AIR, MAX_TYPE_ID};
use thiserror::Error;

use super::{Voxels, WorldView};

/// Pixels along each side of one voxel column in the PNG map.
pub const PNG_PIXELS_PER_COLUMN: u32 = 8;
/// Default half-width of the maps, in voxels (a 49 × 49 slice).
pub const DEFAULT_MAP_RADIUS: i32 = 24;
/// Largest map half-width accepted.
pub const MAX_MAP_RADIUS: i32 = 1024;

/// Writing a PNG map failed.
#[derive(Debug, Error)]
pub enum MapError {
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot encode {path} as PNG: {source}")]
    Png {
        path: PathBuf,
        source: png::EncodingError,
    },
}

/// What the maps draw for a block, by its block name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockKind {
    Stone,
    Grass,
    Dirt,
    Sand,
    Water,
    Ore,
    Snow,
    Ice,
    Wood,
    Leaves,
    Plant,
    Built,
    Other,
}

impl BlockKind {
    /// The kind of a block name (`coal_ore`, `iron_ore`, `ore`... are ores).
    pub fn of(block_name: &str) -> Self {
        match block_name {
            "stone" => Self::Stone,
            "grass" => Self::Grass,
            "dirt" => Self::Dirt,
            "sand" => Self::Sand,
            "water" => Self::Water,
            "snow" => Self::Snow,
            "ice" => Self::Ice,
            "wood" => Self::Wood,
            "leaves" | "pine_leaves" => Self::Leaves,
            "cactus" => Self::Plant,
            "cobblestone" | "mossy_cobblestone" => Self::Built,
            n if n == "ore" || n.ends_with("_ore") || n.starts_with("ore_") => Self::Ore,
            _ => Self::Other,
        }
    }

    /// Its character on the ASCII map.
    pub fn symbol(self) -> char {
        match self {
            Self::Stone => '#',
            Self::Grass => '"',
            Self::Dirt => '%',
            Self::Sand => '.',
            Self::Water => '~',
            Self::Ore => '*',
            Self::Snow => '^',
            Self::Ice => '=',
            Self::Wood => '|',
            Self::Leaves => '&',
            Self::Plant => '+',
            Self::Built => 'O',
            Self::Other => '?',
        }
    }

    /// Its colour on the PNG map: the colour of a block of the kind
    /// (magenta for unknown blocks, so they stand out).
    pub fn colour(self) -> [u8; 3] {
        let block = match self {
            Self::Stone => "stone",
            Self::Grass => "grass",
            Self::Dirt => "dirt",
            Self::Sand => "sand",
            Self::Water => "water",
            Self::Ore => "ore",
            Self::Snow => "snow",
            Self::Ice => "ice",
            Self::Wood => "wood",
            Self::Leaves => "leaves",
            Self::Plant => "cactus",
            Self::Built => "cobblestone",
            Self::Other => return [200, 40, 200],
        };
        block_colour(block)
    }
}

/// The legend line of the ASCII map.
pub const ASCII_LEGEND: &str = "# stone  \" grass  % dirt  . sand  ~ water  * ore  ^ snow  \
                                = ice  | wood  & leaves  + cactus  O cobblestone  ? other  \
                                (blank) nothing held  @ focus  o node";

/// One voxel column of a top-down slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Column {
    /// No chunk of this column is held.
    NotHeld,
    /// Held chunks, but only air in them.
    Air,
    /// The highest held non-air voxel.
    Top { kind: BlockKind, y: i32 },
}

/// A top-down slice of the held world around a centre.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopView {
    /// The centre voxel (the focus).
    pub center: Pos,
    /// Columns from `center - radius` to `center + radius` on x and z.
    pub radius: i32,
    /// Row by row (z ascending), each row x ascending.
    pub columns: Vec<Column>,
    /// Whether the centre is the focus Lua set (else the first chunk's
    /// middle, or the origin).
    pub focus_set: bool,
    /// Columns (dx, dz from the centre) holding a replicated node.
    pub nodes: std::collections::BTreeSet<(i32, i32)>,
}

impl TopView {
    fn side(&self) -> usize {
        usize::try_from(2 * self.radius + 1).unwrap_or(1)
    }

    /// The column at offset (dx, dz) from the centre.
    pub fn at(&self, dx: i32, dz: i32) -> Column {
        let side = self.side();
        let (Ok(x), Ok(z)) = (
            usize::try_from(dx + self.radius),
            usize::try_from(dz + self.radius),
        ) else {
            return Column::NotHeld;
        };
        if x >= side || z >= side {
            return Column::NotHeld;
        }
        self.columns
            .get(z * side + x)
            .copied()
            .unwrap_or(Column::NotHeld)
    }

    /// Marks the columns of these node positions (those on the map).
    pub fn mark_nodes(&mut self, positions: &[[f64; 3]]) {
        let r = f64::from(self.radius);
        for p in positions {
            let dx = (p[0].floor() - f64::from(self.center[0])).clamp(-r - 1.0, r + 1.0) as i32;
            let dz = (p[2].floor() - f64::from(self.center[2])).clamp(-r - 1.0, r + 1.0) as i32;
            if dx.abs() <= self.radius && dz.abs() <= self.radius {
                self.nodes.insert((dx, dz));
            }
        }
    }

    /// The ASCII map: a header, the legend, then the slice in a frame,
    /// x growing rightward and z downward, the centre marked `@`, nodes
    /// `o`.
    pub fn ascii(&self) -> String {
        let [cx, cy, cz] = self.center;
        let r = self.radius;
        let side = self.side();
        let mut out = format!(
            "map: top-down, highest held voxel per column; {} ({cx},{cy},{cz}) is @; \
             x {}..{} left to right, z {}..{} top to bottom\n",
            if self.focus_set {
                "focus"
            } else {
                "no focus set, centre"
            },
            cx - r,
            cx + r,
            cz - r,
            cz + r
        );
        out.push_str(&format!("legend: {ASCII_LEGEND}\n"));
        let border = format!("+{}+\n", "-".repeat(side));
        out.push_str(&border);
        for dz in -r..=r {
            out.push('|');
            for dx in -r..=r {
                out.push(if dx == 0 && dz == 0 {
                    '@'
                } else if self.nodes.contains(&(dx, dz)) {
                    'o'
                } else {
                    match self.at(dx, dz) {
                        Column::NotHeld | Column::Air => ' ',
                        Column::Top { kind, .. } => kind.symbol(),
                    }
                });
            }
            out.push_str("|\n");
        }
        out.push_str(&border);
        out
    }

    /// The slice as RGB pixels (one per column): the block's colour, darker
    /// below the centre's height and lighter above (a relief: 12 voxels
    /// down is 55 %, 12 up 115 %); black where nothing is
    /// held, dark blue where only air is; the centre red, nodes magenta.
    pub fn rgb(&self) -> Vec<u8> {
        let r = self.radius;
        let mut data = Vec::with_capacity(self.side() * self.side() * 3);
        for dz in -r..=r {
            for dx in -r..=r {
                let pixel = if dx == 0 && dz == 0 {
                    [255, 0, 0]
                } else if self.nodes.contains(&(dx, dz)) {
                    [255, 0, 255]
                } else {
                    match self.at(dx, dz) {
                        Column::NotHeld => [0, 0, 0],
                        Column::Air => [15, 15, 45],
                        Column::Top { kind, y } => {
                            let rel = f64::from(y.saturating_sub(self.center[1]))
                                .clamp(-12.0, 12.0)
                                / 12.0;
                            let factor = 0.85 + 0.3 * rel;
                            kind.colour()
                                .map(|c| (f64::from(c) * factor).clamp(0.0, 255.0) as u8)
                        }
                    }
                };
                data.extend_from_slice(&pixel);
            }
        }
        data
    }

    /// Writes the slice as a PNG ([`PNG_PIXELS_PER_COLUMN`] pixels square per
    /// column, so a person can read it), atomically.
    pub fn write_png(&self, path: &Path) -> Result<(), MapError> {
        let columns = self.side();
        let scale = PNG_PIXELS_PER_COLUMN as usize;
        let side = u32::try_from(columns * scale).unwrap_or(1);
        let rgb = self.rgb();
        let mut pixels = Vec::with_capacity(rgb.len() * scale * scale);
        for row in rgb.chunks(columns * 3) {
            let mut wide = Vec::with_capacity(row.len() * scale);
            for pixel in row.chunks(3) {
                for _ in 0..scale {
                    wide.extend_from_slice(pixel);
                }
            }
            for _ in 0..scale {
                pixels.extend_from_slice(&wide);
            }
        }
        write_rgb_png(path, side, side, &pixels)
    }
}

/// Writes `width`×`height` RGB pixels (rows top to bottom) as a PNG,
/// atomically (a temporary file beside `path`, then renamed): the maps and
/// the renderer's screenshots.
pub fn write_rgb_png(path: &Path, width: u32, height: u32, rgb: &[u8]) -> Result<(), MapError> {
    let io = |source| MapError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".png-");
    // A picture for people: the usual permissions (0666 less the umask),
    // not a temporary file's 0600.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        builder.permissions(std::fs::Permissions::from_mode(0o666));
    }
    let mut temp = builder.tempfile_in(dir).map_err(io)?;
    {
        let mut encoder = png::Encoder::new(BufWriter::new(temp.as_file_mut()), width, height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        let png = |source| MapError::Png {
            path: path.to_path_buf(),
            source,
        };
        let mut writer = encoder.write_header().map_err(png)?;
        writer.write_image_data(rgb).map_err(png)?;
        writer.finish().map_err(png)?;
    }
    temp.persist(path).map_err(|e| io(e.error))?;
    Ok(())
}

impl WorldView {
    /// The map centre: the focus, else the first chunk's middle, else the
    /// origin; and whether it is the focus.
    pub fn map_center(&self) -> (Pos, bool) {
        if let Some(f) = self.focus {
            return (f.map(|v| v.floor().clamp(-2e9, 2e9) as i32), true);
        }
        let center = self.stats.first_chunk.map_or([0; 3], |c| {
            geometry::chunk_origin(c).map(|v| v.saturating_add(CHUNK_SIZE / 2))
        });
        (center, false)
    }

    /// The top-down slice of `radius` voxels around the map centre.
    pub fn top_view(&mut self, radius: i32) -> TopView {
        let radius = radius.clamp(0, MAX_MAP_RADIUS);
        let (center, focus_set) = self.map_center();
        let mut columns = Vec::new();
        for dz in -radius..=radius {
            for dx in -radius..=radius {
                columns
                    .push(self.column(center[0].saturating_add(dx), center[2].saturating_add(dz)));
            }
        }
        TopView {
            center,
            radius,
            columns,
            focus_set,
            nodes: Default::default(),
        }
    }

    /// The highest held non-air voxel of the voxel column (x, z).
    fn column(&mut self, x: i32, z: i32) -> Column {
        let key = [x.div_euclid(CHUNK_SIZE), z.div_euclid(CHUNK_SIZE)];
        let Some(ys) = self.columns.get(&key) else {
            return Column::NotHeld;
        };
        let ys: Vec<i32> = ys.iter().copied().collect();
        let size = CHUNK_SIZE as usize;
        let (lx, lz) = (
            x.rem_euclid(CHUNK_SIZE) as usize,
            z.rem_euclid(CHUNK_SIZE) as usize,
        );
        for &cy in ys.iter().rev() {
            let Some(voxels) = self.voxels_of([key[0], cy, key[1]]) else {
                continue;
            };
            let voxels: &Voxels = voxels;
            if voxels.is_air() {
                continue;
            }
            for ly in (0..size).rev() {
                let id = voxels.get(lx + size * (ly + size * lz)) & MAX_TYPE_ID;
                if id == AIR {
                    continue;
                }
                let kind = self
                    .registry
                    .get(id)
                    .map_or(BlockKind::Other, |d| BlockKind::of(&d.name.block_name));
                let y = cy.saturating_mul(CHUNK_SIZE).saturating_add(ly as i32);
                return Column::Top { kind, y };
            }
        }
        Column::Air
    }
}
