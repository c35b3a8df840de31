//! Draws a top-down PNG map of the default terrain straight from the
//! terrain function (no server): the top voxel's colour, lit from the
//! north-west by the height difference, water tinted by its depth.
//!
//! `cargo run --release -p buildat-worldgen-terrain --example map -- OUT.png [SIZE] [SEED] [X Z] [SCALE]`
//! (SIZE voxels square around X, Z; each pixel the average of SCALE × SCALE
//! columns).

use buildat_voxel::colour::block_colour;
use buildat_voxel::geometry::CHUNK_SIZE;
use buildat_worldgen_terrain::{AIR, PALETTE, WATER, generate_box};

const Y_MIN: i32 = -48;
const Y_MAX: i32 = 176;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let out = args
        .first()
        .ok_or("usage: map OUT.png [SIZE] [SEED] [X Z]")?;
    let size: i32 = args.get(1).map_or(Ok(512), |s| s.parse())?;
    let seed: u64 = args.get(2).map_or(Ok(1), |s| s.parse())?;
    let cx: i32 = args.get(3).map_or(Ok(0), |s| s.parse())?;
    let cz: i32 = args.get(4).map_or(Ok(0), |s| s.parse())?;
    let scale: usize = args.get(5).map_or(Ok(1), |s| s.parse())?;
    let (x0, z0) = (cx - size / 2, cz - size / 2);
    let side = size as usize;
    // Per column: top block, its height, and the ground under water.
    let mut tops = vec![(AIR, Y_MIN, Y_MIN); side * side];
    let started = std::time::Instant::now();
    let height = Y_MAX - Y_MIN;
    for bz in (0..size).step_by(CHUNK_SIZE as usize) {
        for bx in (0..size).step_by(CHUNK_SIZE as usize) {
            let [sx, sz] = [CHUNK_SIZE.min(size - bx), CHUNK_SIZE.min(size - bz)];
            let voxels = generate_box(seed, [x0 + bx, Y_MIN, z0 + bz], [sx, height, sz]);
            for lz in 0..sz {
                for lx in 0..sx {
                    let at = |ly: i32| voxels[(lx + sx * (ly + height * lz)) as usize];
                    let Some(top) = (0..height).rev().find(|&ly| at(ly) != AIR) else {
                        continue;
                    };
                    let ground = (0..=top).rev().find(|&ly| at(ly) != WATER).unwrap_or(0);
                    tops[(bx + lx) as usize + side * (bz + lz) as usize] =
                        (at(top), top + Y_MIN, ground + Y_MIN);
                }
            }
        }
        eprint!("\rrows {}/{size}", (bz + CHUNK_SIZE).min(size));
    }
    eprintln!(" in {:.1} s", started.elapsed().as_secs_f64());
    let mut rgb = Vec::with_capacity(side * side * 3);
    for z in 0..side {
        for x in 0..side {
            let (block, top, ground) = tops[x + side * z];
            let mut colour = block_colour(PALETTE[block as usize]).map(f64::from);
            if block == WATER {
                let depth = f64::from(top - ground).min(24.0);
                colour = colour.map(|c| c * (1.0 - depth / 40.0));
            } else {
                let west = if x > 0 { tops[x - 1 + side * z].1 } else { top };
                let north = if z > 0 {
                    tops[x + side * (z - 1)].1
                } else {
                    top
                };
                let slope = f64::from(2 * top - west - north).clamp(-6.0, 6.0);
                let light = 0.86 + slope * 0.07 + f64::from(top.max(0)) / 600.0;
                colour = colour.map(|c| c * light);
            }
            rgb.extend(colour.map(|c| c.clamp(0.0, 255.0) as u8));
        }
    }
    let (rgb, side) = downscale(&rgb, side, scale.max(1));
    let file = std::io::BufWriter::new(std::fs::File::create(out)?);
    let mut encoder = png::Encoder::new(file, side as u32, side as u32);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.write_header()?.write_image_data(&rgb)?;
    eprintln!("wrote {out}");
    Ok(())
}

/// Averages `scale` × `scale` pixel blocks of the `side`-square RGB image.
fn downscale(rgb: &[u8], side: usize, scale: usize) -> (Vec<u8>, usize) {
    let small = side / scale;
    let mut out = Vec::with_capacity(small * small * 3);
    for y in 0..small {
        for x in 0..small {
            let mut sum = [0usize; 3];
            for dy in 0..scale {
                for dx in 0..scale {
                    let at = 3 * ((y * scale + dy) * side + x * scale + dx);
                    for (channel, total) in sum.iter_mut().enumerate() {
                        *total += usize::from(rgb[at + channel]);
                    }
                }
            }
            out.extend(sum.map(|total| (total / (scale * scale)) as u8));
        }
    }
    (out, small)
}
