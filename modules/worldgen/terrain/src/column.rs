//! What a column of the world is, from a seed and its x, z: surface height,
//! biome, and whether water covers it.
//!
//! Owns: the large-scale shape (continents and oceans, hills, ridged
//! mountains, lake basins) and the climate (temperature and humidity noise,
//! colder with height) that picks the biome. Pure: a column never depends on
//! another column or on what was generated before. Does not own: the voxels
//! of a column (`lib.rs`) or what grows on it (`structures.rs`).

use crate::noise::{fractal2, noise2, smoothstep};

/// The height of the sea's surface: columns below it are under water.
pub const SEA_LEVEL: i32 = 0;

/// A biome: what covers the ground and what grows on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Biome {
    /// Sea floor and lake beds: sand near the shore, gravel deeper.
    Ocean,
    /// Sand along the water's edge.
    Beach,
    /// Grass with a tree here and there.
    Grassland,
    /// Grass under dense trees.
    Forest,
    /// Sand over sandstone, with cacti.
    Desert,
    /// Bare stone capped with snow, above the snow line.
    SnowyPeaks,
}

impl Biome {
    pub const ALL: [Biome; 6] = [
        Biome::Ocean,
        Biome::Beach,
        Biome::Grassland,
        Biome::Forest,
        Biome::Desert,
        Biome::SnowyPeaks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Biome::Ocean => "ocean",
            Biome::Beach => "beach",
            Biome::Grassland => "grassland",
            Biome::Forest => "forest",
            Biome::Desert => "desert",
            Biome::SnowyPeaks => "snowy peaks",
        }
    }
}

/// One column of the world.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    /// The y of the highest ground voxel.
    pub height: i32,
    pub biome: Biome,
    /// Temperature in [0, 1), after cooling with height.
    pub temperature: f64,
    /// Humidity in [0, 1).
    pub humidity: f64,
}

impl Column {
    /// Whether water lies on this column (its ground is below sea level).
    pub fn is_under_water(&self) -> bool {
        self.height < SEA_LEVEL
    }
}

/// Salts keeping the noise fields independent of each other.
mod salt {
    pub const CONTINENT: u64 = 0x10;
    pub const HILLS: u64 = 0x11;
    pub const MOUNTAIN_MASK: u64 = 0x12;
    pub const RIDGES: u64 = 0x13;
    pub const LAKES: u64 = 0x14;
    pub const TEMPERATURE: u64 = 0x20;
    pub const HUMIDITY: u64 = 0x21;
    pub const SNOW_LINE: u64 = 0x22;
}

/// The ground height of a column, without its biome.
pub fn surface_height(seed: u64, x: i32, z: i32) -> i32 {
    shape(seed, x, z).floor() as i32
}

fn shape(seed: u64, x: i32, z: i32) -> f64 {
    // Continents: broad swells from deep ocean (-30) to uplands (+34).
    let continent = fractal2(seed ^ salt::CONTINENT, x, z, 640.0, 3);
    let base = -30.0 + 64.0 * smoothstep(0.28, 0.72, continent);
    let hills = (fractal2(seed ^ salt::HILLS, x, z, 72.0, 3) - 0.5) * 16.0;
    // Mountains rise where a slow mask is high, shaped by ridged noise,
    // only on land.
    let mask = smoothstep(
        0.52,
        0.7,
        fractal2(seed ^ salt::MOUNTAIN_MASK, x, z, 420.0, 2),
    ) * smoothstep(2.0, 14.0, base);
    let ridge = 1.0 - (2.0 * fractal2(seed ^ salt::RIDGES, x, z, 140.0, 3) - 1.0).abs();
    let mountains = mask * (24.0 + 70.0 * ridge * ridge);
    // Lakes: round basins inland, filled to sea level.
    let lake = smoothstep(
        0.74,
        0.86,
        noise2(
            seed ^ salt::LAKES,
            f64::from(x) / 150.0,
            f64::from(z) / 150.0,
        ),
    );
    let land = base + hills + mountains;
    land - lake * (land.max(0.0) + 10.0) * (1.0 - mask)
}

/// The column at `x`, `z`.
pub fn column(seed: u64, x: i32, z: i32) -> Column {
    let height = surface_height(seed, x, z);
    let humidity = fractal2(seed ^ salt::HUMIDITY, x, z, 520.0, 3);
    let climate = fractal2(seed ^ salt::TEMPERATURE, x, z, 700.0, 3);
    // Colder with height: about a tenth of the range per 24 voxels.
    let temperature = (climate - f64::from(height.max(0)) / 240.0).clamp(0.0, 0.999);
    let snow_line = 60
        + (noise2(
            seed ^ salt::SNOW_LINE,
            f64::from(x) / 24.0,
            f64::from(z) / 24.0,
        ) * 10.0) as i32;
    let biome = if height < SEA_LEVEL {
        Biome::Ocean
    } else if height >= snow_line || (temperature < 0.2 && height > 16) {
        Biome::SnowyPeaks
    } else if height <= SEA_LEVEL + 2 && climate < 0.62 {
        Biome::Beach
    } else if climate > 0.55 && humidity < 0.48 {
        Biome::Desert
    } else if humidity > 0.56 {
        Biome::Forest
    } else {
        Biome::Grassland
    };
    Column {
        height,
        biome,
        temperature,
        humidity,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_biome_appears_within_a_few_thousand_voxels() {
        let mut seen = std::collections::HashSet::new();
        for x in (-4000..4000).step_by(37) {
            for z in (-4000..4000).step_by(41) {
                seen.insert(column(1, x, z).biome);
            }
        }
        for biome in Biome::ALL {
            assert!(seen.contains(&biome), "no {} in {seen:?}", biome.name());
        }
    }

    #[test]
    fn water_columns_are_ocean_and_land_is_not() {
        for x in (-2000..2000).step_by(53) {
            let c = column(3, x, -x / 2);
            assert_eq!(c.is_under_water(), c.biome == Biome::Ocean, "{c:?}");
        }
    }
}
