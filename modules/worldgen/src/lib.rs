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
//! the `world.toml` it owns). A section that does not encode, or whose
//! generation panics, is a [`GenerateError`] naming it: logged, the
//! `generate` call's answer, never an empty section or a section fewer.
//! Does not own: the terrain itself (the
//! `buildat-worldgen-terrain` crate beside it) or storing anything
//! (voxelworld does).

mod pool;

use buildat_format::{VoxelBlobError, encode_voxels};
use buildat_interface::{
    Host, Module, ModuleError, Receive, UnloadKind, events, export_module, log,
};
use buildat_voxel::geometry::{self, CHUNK_SIZE, Pos, SectionSize};
use buildat_voxelworld_api::{
    BlockDefinition, ChunkData, Generate, GeneratedSection, GenerationCancel, GenerationRequest,
    GetWorldConfig, RegisterBlock,
};
use buildat_worldgen_terrain as terrain;

/// Why a section could not be generated. Never an empty or partial
/// section in its place: the error names the section, is logged, and
/// answers the `generate` call that asked for it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GenerateError {
    #[error("section {section:?}: chunk {chunk:?} does not encode: {source}")]
    Encode {
        section: Pos,
        chunk: Pos,
        #[source]
        source: VoxelBlobError,
    },
    #[error("section {section:?}: generating it panicked: {message}")]
    Panicked { section: Pos, message: String },
}

impl From<GenerateError> for ModuleError {
    fn from(error: GenerateError) -> Self {
        ModuleError::msg(error.to_string())
    }
}

/// A section's chunks, generated and encoded as voxel blobs.
pub fn generate_section(
    seed: u64,
    section_size: SectionSize,
    section: Pos,
) -> Result<GeneratedSection, GenerateError> {
    generate_section_in(&mut None, seed, section_size, section)
}

/// [`generate_section`] with the columns of the section's x and z kept in
/// `columns` (reused when the last section generated with it was in the
/// same column of sections, as pregen's sections mostly are).
pub fn generate_section_in(
    columns: &mut Option<terrain::Columns>,
    seed: u64,
    section_size: SectionSize,
    section: Pos,
) -> Result<GeneratedSection, GenerateError> {
    let origin = geometry::chunk_origin(std::array::from_fn(|a| section[a] * section_size.0[a]));
    let [w, _, d] = section_size.0.map(|chunks| chunks * CHUNK_SIZE);
    let area = ([origin[0], origin[2]], [w, d]);
    let columns = match columns.take() {
        Some(kept) if kept.covers(seed, area.0, area.1) => columns.insert(kept),
        _ => columns.insert(terrain::Columns::new(seed, area.0, area.1)),
    };
    let columns = &*columns;
    generate_section_with(section_size, section, |chunk| {
        terrain::generate_box_in(columns, geometry::chunk_origin(chunk), [CHUNK_SIZE; 3])
    })
}

/// A section's chunks from `chunk_voxels` (ids into [`terrain::PALETTE`]),
/// encoded; a panic in `chunk_voxels` is an error naming the section.
pub fn generate_section_with(
    section_size: SectionSize,
    section: Pos,
    chunk_voxels: impl Fn(Pos) -> Vec<u32>,
) -> Result<GeneratedSection, GenerateError> {
    let generate = || {
        section_size
            .chunks_of_section(section)
            .into_iter()
            .map(|chunk| {
                let voxels = chunk_voxels(chunk);
                let blob = encode_voxels(&voxels, |id| terrain::PALETTE.get(id as usize).copied())
                    .map_err(|source| GenerateError::Encode {
                        section,
                        chunk,
                        source,
                    })?;
                Ok((chunk, ChunkData { node_id: 0, blob }))
            })
            .collect::<Result<Vec<_>, GenerateError>>()
    };
    let chunks =
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(generate)).map_err(|panic| {
            GenerateError::Panicked {
                section,
                message: panic_message(panic.as_ref()),
            }
        })??;
    Ok(GeneratedSection { section, chunks })
}

/// What a panic said, if it said it as text.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_string())
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

    fn receive(table: &mut Receive<Self>) {
        table
            .event(|worldgen, _: events::Start| worldgen.start())
            .event(|worldgen, _: events::Continue| worldgen.start())
            .event(|worldgen, request: GenerationRequest| {
                let pool = worldgen
                    .pool
                    .as_ref()
                    .ok_or_else(|| ModuleError::msg("a generation request before core:start"))?;
                pool.request(request.section, request.distance);
                Ok(())
            })
            .event(|worldgen, cancel: GenerationCancel| {
                if let Some(pool) = &worldgen.pool {
                    pool.cancel(&cancel.sections);
                }
                Ok(())
            })
            .call(|worldgen, request: Generate| Ok(worldgen.generate(&request.sections)?));
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
    /// Registers the terrain's blocks, reads the seed and starts the
    /// workers (again after a reload of voxelworld or of this module).
    fn start(&mut self) -> Result<(), ModuleError> {
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
        Ok(())
    }

    /// Generates sections on every core at once; the first that fails is
    /// the answer (logged with its section).
    fn generate(&self, sections: &[Pos]) -> Result<Vec<GeneratedSection>, GenerateError> {
        let (seed, size) = (self.seed, self.section_size);
        generate_sections(sections, workers(), |columns, section| {
            generate_section_in(columns, seed, size, section)
        })
        .inspect_err(|error| log::error!("generate: {error}"))
    }
}

/// `generate` for each of `sections`, on `threads` threads at once, in
/// order (each thread a run of neighbours, with its own kept columns); the
/// first error of any (a panic included) is the answer.
pub fn generate_sections(
    sections: &[Pos],
    threads: usize,
    generate: impl Fn(&mut Option<terrain::Columns>, Pos) -> Result<GeneratedSection, GenerateError>
    + Sync,
) -> Result<Vec<GeneratedSection>, GenerateError> {
    let per_thread = sections.len().div_ceil(threads.max(1)).max(1);
    let generate = &generate;
    std::thread::scope(|scope| {
        let handles: Vec<_> = sections
            .chunks(per_thread)
            .map(|batch| {
                let handle = scope.spawn(move || {
                    let mut columns = None;
                    batch
                        .iter()
                        .map(|section| generate(&mut columns, *section))
                        .collect::<Result<Vec<_>, _>>()
                });
                (batch, handle)
            })
            .collect();
        let mut generated = Vec::with_capacity(sections.len());
        for (batch, handle) in handles {
            // `generate` catches its own panics; this one is anything else.
            let sections = handle.join().map_err(|panic| GenerateError::Panicked {
                section: batch[0],
                message: panic_message(panic.as_ref()),
            })??;
            generated.extend(sections);
        }
        Ok(generated)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SIZE: SectionSize = SectionSize([1, 1, 1]);

    #[test]
    fn a_chunk_that_does_not_encode_is_an_error_naming_its_section_not_an_empty_chunk() {
        let section = [3, -1, 2];
        let error = generate_section_with(SIZE, section, |_| vec![u32::MAX; 16])
            .expect_err("a voxel id outside the palette has no name");
        assert!(
            matches!(error, GenerateError::Encode { section: s, .. } if s == section),
            "{error}"
        );
        assert!(error.to_string().contains("[3, -1, 2]"), "{error}");
    }

    #[test]
    fn a_panicking_generator_is_an_error_naming_its_section_not_fewer_sections() {
        let sections = [[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]];
        let result = generate_sections(&sections, 2, |_, section| {
            generate_section_with(SIZE, section, |chunk| {
                assert_ne!(chunk, [2, 0, 0], "the generator's bug");
                vec![1; 8]
            })
        });
        let error = result.expect_err("one of four sections panicked");
        assert!(
            matches!(&error, GenerateError::Panicked { section, message }
                if *section == [2, 0, 0] && message.contains("the generator's bug")),
            "{error}"
        );
        let all = generate_sections(&sections, 3, |_, section| {
            generate_section_with(SIZE, section, |_| vec![1; 8])
        })
        .expect("all four generate");
        let order: Vec<Pos> = all.iter().map(|s| s.section).collect();
        assert_eq!(order, sections, "every section, in order");
    }

    /// The module on the test kit: what its table subscribes, a request
    /// handed back through `apply_generated` by a worker, the `generate`
    /// call, and a malformed request refused naming the event.
    #[test]
    fn requests_are_generated_on_the_workers_and_handed_back() {
        use buildat_interface::Event;
        use buildat_interface::testing::TestHost;
        use buildat_voxelworld_api::{ApplyGenerated, WorldConfig};
        let kit = TestHost::new();
        kit.answer(|_: RegisterBlock| Ok(vec![1]));
        kit.answer(|_: GetWorldConfig| {
            Ok(WorldConfig {
                name: "test".into(),
                seed: 1,
                section_size: [1, 1, 1],
            })
        });
        let (handed, received) = std::sync::mpsc::channel();
        kit.answer(move |applied: ApplyGenerated| {
            let _ = handed.send(applied.section.section);
            Ok(())
        });
        let mut worldgen = kit.load::<Worldgen>().expect("loads");
        let subscribed = kit.subscriptions();
        assert!(
            subscribed.iter().any(|s| s == GenerationRequest::NAME)
                && subscribed.iter().any(|s| s == GenerationCancel::NAME),
            "{subscribed:?}"
        );
        worldgen
            .emit(&GenerationRequest {
                section: [2, 0, -1],
                distance: 0,
            })
            .expect("queued");
        let section = received
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("a worker hands the section back");
        assert_eq!(section, [2, 0, -1]);
        let generated = worldgen
            .call(&Generate {
                sections: vec![[0, 0, 0], [1, 0, 0]],
            })
            .expect("generated");
        assert_eq!(generated.len(), 2);
        let error = worldgen
            .emit_raw(GenerationRequest::NAME, b"\xff")
            .expect_err("malformed");
        assert!(
            error.to_string().contains(GenerationRequest::NAME),
            "{error}"
        );
        worldgen
            .unload(UnloadKind::ForGood)
            .expect("stops its workers");
    }

    #[test]
    fn the_terrain_generates_a_section() {
        let generated = generate_section(1, SIZE, [0, 0, 0]).expect("terrain encodes");
        assert_eq!(generated.chunks.len(), 1);
        assert!(!generated.chunks[0].1.blob.is_empty());
    }
}

export_module!(Worldgen);
