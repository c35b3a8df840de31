//! `worldgen`: the default terrain generator.
//!
//! Owns: registering the blocks its terrain uses with `voxelworld`,
//! answering `voxelworld:generation_request` (generating the section and
//! calling `voxelworld`'s `apply_generated`), and the `generate` call used by
//! `pregen` (several sections at once, in parallel on every core). The seed
//! comes from voxelworld (`get_world_config`, the `world.toml` it owns). Does not own: storing
//! anything (voxelworld does).

use buildat_format::encode_voxels;
use buildat_interface::{Event, Host, Module, ModuleError, decode, events, export_module, log};
use buildat_voxel::geometry::{Pos, SectionSize};
use buildat_voxelworld_api::{
    ApplyGenerated, BlockDefinition, ChunkData, Generate, GeneratedSection, GenerationRequest,
    GetWorldConfig, RegisterBlock,
};
use buildat_worldgen_terrain as terrain;

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
}

impl Module for Worldgen {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            seed: 0,
            section_size: SectionSize::default(),
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(GenerationRequest::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        match name {
            events::Start::NAME | events::Continue::NAME => {
                for (name, solid) in terrain::PALETTE
                    .iter()
                    .zip([false, true, true, true, true, false, true, true])
                {
                    if *name == "air" {
                        continue;
                    }
                    let mut block = BlockDefinition::simple(name, &format!("{name}.png"));
                    block.physically_solid = solid;
                    self.host.call(&RegisterBlock { block })?;
                }
                let world = self.host.call(&GetWorldConfig {})?;
                self.section_size = SectionSize(world.section_size);
                self.seed = world.seed;
                log::info!("terrain seed {}", self.seed);
            }
            GenerationRequest::NAME => {
                let request: GenerationRequest = decode(payload)?;
                let generated = generate_section(self.seed, self.section_size, request.section);
                self.host.call(&ApplyGenerated { section: generated })?;
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
}

impl Worldgen {
    /// Generates sections on every core at once.
    fn generate(&self, sections: &[Pos]) -> Vec<GeneratedSection> {
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let (seed, size) = (self.seed, self.section_size);
        let per_worker = sections.len().div_ceil(workers).max(1);
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
