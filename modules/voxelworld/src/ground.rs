//! Where the ground is: `get_ground` (a column's highest physically solid
//! voxel within the surface band) and `get_spawn` (where players spawn:
//! on the ground at x = 0, z = 0).
//!
//! Owns: the band searched ([`GROUND_SECTIONS_Y`]), the rule for the
//! ground (the highest physically solid voxel, read from the top down) and
//! for spawn (the middle of that column, one voxel above its ground; the
//! band's top where there is none). Does not own: loading or generating
//! the band's sections (`lib.rs` asks the world and the generator).

use buildat_interface::{ModuleError, Receive};
use buildat_voxel::geometry::{self, CHUNK_SIZE, Pos, SectionSize};
use buildat_voxelworld_api::{ColumnTops, GetGround, GetSpawn};
use buildat_voxelworld_api::{GROUND_SECTIONS_Y, Ground};

use crate::VoxelWorld;
use crate::world::Loaded;

/// The band's sections holding the column at `x`, `z`, top first.
pub fn band_sections(size: SectionSize, x: i32, z: i32) -> [Pos; 3] {
    let [sx, _, sz] = size.section_of_chunk(geometry::chunk_of_voxel([x, 0, z]));
    GROUND_SECTIONS_Y.map(|sy| [sx, sy, sz])
}

/// The band's highest and lowest voxel y.
pub fn band(size: SectionSize) -> (i32, i32) {
    let h = size.0[1] * CHUNK_SIZE;
    let top = (GROUND_SECTIONS_Y[0] + 1) * h - 1;
    let bottom = GROUND_SECTIONS_Y[GROUND_SECTIONS_Y.len() - 1] * h;
    (top, bottom)
}

/// The ground of a column whose voxel at each y `voxel_at` reads (`None`:
/// not generated), from `top` down to `bottom`.
pub fn ground_in<E>(
    top: i32,
    bottom: i32,
    mut voxel_at: impl FnMut(i32) -> Result<Option<u32>, E>,
    solid: impl Fn(u32) -> bool,
) -> Result<Ground, E> {
    let mut above = buildat_voxel::AIR;
    for y in (bottom..=top).rev() {
        let Some(voxel) = voxel_at(y)? else {
            return Ok(Ground::NotGenerated);
        };
        if solid(voxel) {
            return Ok(Ground::Solid { y, above });
        }
        above = voxel;
    }
    Ok(Ground::NoGround)
}

/// Where players spawn given the ground at x = 0, z = 0 (`None`: not
/// generated yet).
pub fn spawn_on(ground: Ground, top: i32) -> Option<[f64; 3]> {
    match ground {
        Ground::Solid { y, .. } => Some([0.5, f64::from(y) + 1.0, 0.5]),
        Ground::NoGround => Some([0.5, f64::from(top), 0.5]),
        Ground::NotGenerated => None,
    }
}

/// Whether `voxel` is physically solid (a type the registry lacks is not).
pub(crate) fn world_solid(voxels: &buildat_voxel::VoxelRegistry, voxel: u32) -> bool {
    voxels
        .get(buildat_voxel::VoxelInstance(voxel).type_id())
        .is_some_and(|d| d.physically_solid)
}

impl crate::VoxelWorld {
    /// The ground of the column at `x`, `z` (`ground.rs`), its band's
    /// sections loaded, or asked of the generator when not generated.
    pub(crate) fn ground(&mut self, x: i32, z: i32) -> Result<Ground, ModuleError> {
        let size = self.world.section_size();
        for section in band_sections(size, x, z) {
            if self
                .world
                .load_section(section)
                .map_err(ModuleError::from)?
                != Loaded::Ready
            {
                self.request_generation(section, None)?;
                return Ok(Ground::NotGenerated);
            }
        }
        let (top, bottom) = band(size);
        let column = (bottom..=top)
            .rev()
            .map(|y| self.world.get_voxel([x, y, z]))
            .collect::<Result<Vec<_>, _>>()
            .map_err(ModuleError::from)?;
        ground_in(
            top,
            bottom,
            |y| Ok::<_, ModuleError>(column.get((top - y) as usize).copied().flatten()),
            |voxel| world_solid(&self.world.voxels, voxel),
        )
    }
}

/// The calls of this feature, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .call(|world, request: ColumnTops| {
            world.world.column_tops(&request).map_err(ModuleError::from)
        })
        .call(|world, request: GetGround| world.ground(request.x, request.z))
        .call(|world, _: GetSpawn| {
            let ground = world.ground(0, 0)?;
            Ok(spawn_on(ground, band(world.world.section_size()).0))
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    const STONE: u32 = 3;
    const WATER: u32 = 4;

    fn column(ground: i32, water_to: i32) -> impl FnMut(i32) -> Result<Option<u32>, Infallible> {
        move |y| {
            Ok(Some(if y <= ground {
                STONE
            } else if y <= water_to {
                WATER
            } else {
                buildat_voxel::AIR
            }))
        }
    }

    #[test]
    fn the_ground_is_the_highest_solid_voxel_with_what_is_on_it() {
        let solid = |v| v == STONE;
        assert_eq!(
            ground_in(127, -64, column(12, 12), solid),
            Ok(Ground::Solid {
                y: 12,
                above: buildat_voxel::AIR
            })
        );
        assert_eq!(
            ground_in(127, -64, column(-3, 5), solid),
            Ok(Ground::Solid {
                y: -3,
                above: WATER
            }),
            "under the sea"
        );
        assert_eq!(
            ground_in(127, -64, column(-100, -100), solid),
            Ok(Ground::NoGround)
        );
        let gap = |y: i32| Ok::<_, Infallible>((y > 50).then_some(buildat_voxel::AIR));
        assert_eq!(ground_in(127, -64, gap, solid), Ok(Ground::NotGenerated));
    }

    /// The voxelworld module behind the test kit, with stone and air
    /// registered, answering `get_ground` and `get_spawn`: not generated
    /// (and asked of the generator), then on the ground it was given.
    #[test]
    fn the_world_tells_a_module_where_the_ground_and_spawn_are() {
        use buildat_interface::testing::TestHost;
        use buildat_voxelworld_api::{
            ApplyGenerated, BlockDefinition, ChunkData, GeneratedSection, GenerationRequest,
            GetGround, GetSpawn, RegisterBlock,
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<crate::VoxelWorld>().expect("loads");
        let stone = BlockDefinition::simple("stone", "stone.png");
        world
            .call(&RegisterBlock { block: stone })
            .expect("registers");
        assert_eq!(
            world.call(&GetGround { x: 5, z: -7 }).expect("answers"),
            Ground::NotGenerated
        );
        assert_eq!(world.call(&GetSpawn {}).expect("answers"), None);
        let asked: Vec<Pos> = kit
            .emitted::<GenerationRequest>()
            .iter()
            .map(|r| r.section)
            .collect();
        assert!(
            asked.contains(&[0, 1, 0]) && asked.contains(&[0, 1, -1]),
            "{asked:?}"
        );
        // The band's sections: stone up to y = 9, air above.
        let size = SectionSize::default();
        for section in band_sections(size, 0, 0) {
            let chunks = size
                .chunks_of_section(section)
                .into_iter()
                .map(|chunk| {
                    let origin = geometry::chunk_origin(chunk);
                    let voxels: Vec<u32> = (0..CHUNK_SIZE.pow(3))
                        .map(|i| u32::from(origin[1] + (i / CHUNK_SIZE) % CHUNK_SIZE <= 9))
                        .collect();
                    let blob = buildat_format::encode_voxels(&voxels, |v| {
                        Some(if v == 1 { "stone" } else { "air" })
                    })
                    .expect("encodes");
                    (chunk, ChunkData { node_id: 0, blob })
                })
                .collect();
            world
                .call(&ApplyGenerated {
                    section: GeneratedSection { section, chunks },
                })
                .expect("applied");
        }
        assert_eq!(
            world.call(&GetGround { x: 3, z: 30 }).expect("answers"),
            Ground::Solid {
                y: 9,
                above: buildat_voxel::AIR
            }
        );
        assert_eq!(
            world.call(&GetSpawn {}).expect("answers"),
            Some([0.5, 10.0, 0.5])
        );
    }

    #[test]
    fn spawn_stands_on_the_ground_at_the_origin() {
        let (top, bottom) = band(SectionSize([2, 2, 2]));
        assert_eq!((top, bottom), (127, -64));
        assert_eq!(
            spawn_on(Ground::Solid { y: 12, above: 0 }, top),
            Some([0.5, 13.0, 0.5])
        );
        assert_eq!(spawn_on(Ground::NoGround, top), Some([0.5, 127.0, 0.5]));
        assert_eq!(spawn_on(Ground::NotGenerated, top), None);
        assert_eq!(
            band_sections(SectionSize([2, 2, 2]), -1, 70),
            [[-1, 1, 1], [-1, 0, 1], [-1, -1, 1]]
        );
    }
}
