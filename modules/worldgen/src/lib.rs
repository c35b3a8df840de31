//! `worldgen`: the default terrain generator.
//!
//! Owns: registering the blocks its terrain uses with `voxelworld`,
//! answering `voxelworld:generation_request` (generating the section and
//! calling `voxelworld`'s `apply_generated`), and the `generate` call used by
//! `pregen` (several sections at once, in parallel on every core). The seed
//! comes from `<world>/world.toml` (`[world] seed`). Does not own: storing
//! anything (voxelworld does).

pub mod terrain;

use buildat_format::encode_voxels;
use buildat_interface::voxelworld::{
    self as api, BlockDefinition, ChunkData, GeneratedSection, GenerationRequest, Sizes,
};
use buildat_interface::{
    Event, Host, Module, ModuleError, decode, encode, events, export_module, log,
};
use buildat_voxel::geometry::{Pos, SectionSize};
use serde::Deserialize;

#[derive(Default, Deserialize)]
struct WorldToml {
    #[serde(default)]
    world: Seeded,
}

#[derive(Default, Deserialize)]
struct Seeded {
    #[serde(default)]
    seed: u64,
}

fn seed_of(host: &Host) -> Result<u64, ModuleError> {
    let path = host.world_path().join("world.toml");
    let Ok(text) = std::fs::read_to_string(&path) else {
        return Ok(0);
    };
    let parsed: WorldToml =
        toml::from_str(&text).map_err(|e| ModuleError::msg(format!("{}: {e}", path.display())))?;
    Ok(parsed.world.seed)
}

/// Generates every chunk of a section as voxel blobs by name.
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
            seed: seed_of(&host)?,
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
                    let _: Vec<u32> =
                        self.host
                            .call_typed(api::MODULE, api::REGISTER_BLOCK, &block)?;
                }
                let sizes: Sizes = self.host.call_typed(api::MODULE, api::GET_SIZES, &())?;
                self.section_size = SectionSize(sizes.section_size);
                log::info!("terrain seed {}", self.seed);
            }
            GenerationRequest::NAME => {
                let request: GenerationRequest = decode(payload)?;
                let generated = generate_section(self.seed, self.section_size, request.section);
                let _: () = self
                    .host
                    .call_typed(api::MODULE, api::APPLY_GENERATED, &generated)?;
            }
            _ => {}
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        match function {
            api::GENERATOR_GENERATE => {
                let sections: Vec<Pos> = decode(payload)?;
                let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
                let (seed, size) = (self.seed, self.section_size);
                let per_worker = sections.len().div_ceil(workers).max(1);
                let generated: Vec<GeneratedSection> = std::thread::scope(|scope| {
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
                });
                Ok(encode(&generated))
            }
            other => Err(ModuleError::UnknownFunction(other.to_string())),
        }
    }
}

export_module!(Worldgen);
