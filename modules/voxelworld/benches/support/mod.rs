//! What the voxelworld benches share: a world in a SQLite file (or any
//! storage) with the default terrain's blocks registered (solidity and
//! light absorption as the generator gives them).

use buildat_module_voxelworld::storage::{SqliteStorage, WorldStorage};
use buildat_module_voxelworld::world::World;
use buildat_voxel::BlockDefinition;
use buildat_voxel::geometry::SectionSize;
use buildat_worldgen_terrain as terrain;

pub fn open_world(path: &std::path::Path) -> World {
    let storage = SqliteStorage::open(path, SectionSize::default()).expect("open");
    open_world_on(Box::new(storage))
}

#[allow(dead_code)] // Not every bench stores in PostgreSQL.
pub fn open_world_on(storage: Box<dyn WorldStorage>) -> World {
    let mut world = World::new(storage, 100_000);
    for (id, name) in terrain::PALETTE.iter().enumerate().skip(1) {
        let mut block = BlockDefinition::simple(name, name);
        block.physically_solid = terrain::is_solid(id as u32);
        block.light_absorption = terrain::light_absorption(id as u32);
        world.register_block(block).expect("register");
    }
    world
}
