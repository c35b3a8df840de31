//! `worldgen`: the default terrain generator.
//!
//! Owns: registering the blocks its terrain uses with `voxelworld`,
//! answering `voxelworld:generation_request` on a pool of worker threads
//! (`pool.rs`: one per core, nearest to a player first, dropping what
//! `voxelworld:generation_cancel` says nobody wants any more; each
//! worker generates a section and hands it to voxelworld's
//! `apply_generated`, so no module's thread waits on generation, this one's
//! included), and the `generate` call used by `pregen` (several sections at
//! once, on every core). The seed comes from voxelworld (`get_world_config`,
//! the `world.toml` it owns). Does not own: the terrain itself (the
//! `buildat-worldgen-terrain` crate beside it) or storing anything
//! (voxelworld does).

mod pool;

use buildat_format::encode_voxels;
use buildat_interface::{
    Event, Host, Module, ModuleError, UnloadKind, decode, events, export_module, log,
};
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxelworld_api::{
    BlockDefinition, ChunkData, Generate, GeneratedSection, GenerationCancel, GenerationRequest,
    GetWorldConfig, RegisterBlock,
};
use buildat_worldgen_terrain as terrain;

/// A section's chunks, generated and encoded as voxel blobs.
pub fn generate_section(seed: u64, section_size: SectionSize, section: Pos) -> GeneratedSection {
    let chunks = section_size
        .chunks_of_section(section)
        .into_iter()
        .map(|chunk| {
            let voxels = terrain::generate_chunk(seed, chunk);
            let blob = encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                .unwrap_or_default();
            (chunk, ChunkData { node_id: 0, blob })
        })
        .collect();
    GeneratedSection { section, chunks }
}

struct Worldgen {
    host: Host,
    seed: u64,
    section_size: SectionSize,
    pool: Option<pool::GenerationPool>,
}

impl Module for Worldgen {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            seed: 0,
            section_size: SectionSize::default(),
            pool: None,
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(GenerationRequest::NAME)?;
        self.host.sub_event(GenerationCancel::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME | events::Continue::NAME => {
                for (id, name) in terrain::PALETTE.iter().enumerate().skip(1) {
                    let mut block = BlockDefinition::simple(name, &format!("{name}.png"));
                    block.physically_solid = terrain::is_solid(id as u32);
                    block.light_absorption = terrain::light_absorption(id as u32);
                    self.host.call(&RegisterBlock { block })?;
                }
                let world = self.host.call(&GetWorldConfig {})?;
                self.section_size = SectionSize(world.section_size);
                self.seed = world.seed;
                if let Some(pool) = self.pool.take() {
                    pool.stop();
                }
                self.pool = Some(pool::GenerationPool::start(
                    self.host,
                    self.seed,
                    self.section_size,
                    workers(),
                ));
                log::info!(
                    "terrain seed {}, {} generation workers",
                    self.seed,
                    workers()
                );
            }
            GenerationRequest::NAME => {
                let request: GenerationRequest = decode(payload)?;
                let pool = self
                    .pool
                    .as_ref()
                    .ok_or_else(|| ModuleError::msg("a generation request before core:start"))?;
                pool.request(request.section, request.distance);
            }
            GenerationCancel::NAME => {
                let cancel: GenerationCancel = decode(payload)?;
                if let Some(pool) = &self.pool {
                    pool.cancel(&cancel.sections);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        buildat_interface::answer_calls!(function, payload, {
            Generate => |request: Generate| Ok(self.generate(&request.sections)),
        })
    }

    fn unload(&mut self, _kind: UnloadKind) -> Result<(), ModuleError> {
        // Queued requests are dropped: voxelworld asks again for sections
        // it did not get.
        if let Some(pool) = self.pool.take() {
            pool.stop();
        }
        Ok(())
    }
}

/// One generation worker per core.
fn workers() -> usize {
    std::thread::available_parallelism().map_or(2, |n| n.get())
}

impl Worldgen {
    /// Generates sections on every core at once.
    fn generate(&self, sections: &[Pos]) -> Vec<GeneratedSection> {
        let (seed, size) = (self.seed, self.section_size);
        let per_worker = sections.len().div_ceil(workers()).max(1);
        std::thread::scope(|scope| {
            let handles: Vec<_> = sections
                .chunks(per_worker)
                .map(|batch| {
                    scope.spawn(move || {
                        batch
                            .iter()
                            .map(|s| generate_section(seed, size, *s))
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_default())
                .collect()
        })
    }
}

export_module!(Worldgen);
