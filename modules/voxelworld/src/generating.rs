//! Asking the generator: a section loaded or asked for, requests reviewed
//! against what players want, a generator's answer applied and streamed,
//! and `pregen` (a region generated and saved, headless at once or on a
//! running server a slice a tick); the world border (`voxelworld.border`,
//! the `get_border` call): a section beyond it is never asked for, a
//! generator's answer for one is dropped, pregen skips them (a stored one
//! still loads).
//!
//! Owns: those calls to and from the generator module. Does not own: the
//! bookkeeping of what was asked (`generation.rs`), a pregen's plan
//! (`pregen.rs`), the terrain (the generator module).

use super::*;
use buildat_voxelworld_api::GetBorder;

impl VoxelWorld {
    /// Asks the generator for a section, once (again after a while, or
    /// when a player comes nearer). `distance`: from the player who wants
    /// it; `None` when a call waits on it.
    pub(crate) fn request_generation(
        &mut self,
        section: Pos,
        distance: Option<u32>,
    ) -> Result<(), ModuleError> {
        if self.beyond_border(section) {
            return Ok(());
        }
        if let Some(distance) = self.generation.ask(section, distance, Instant::now()) {
            self.host.emit(&GenerationRequest { section, distance })?;
        }
        Ok(())
    }

    /// Cancels the generation of sections no player wants any more and
    /// brings forward those a player came nearer to.
    pub(crate) fn review_generation(&mut self) -> Result<(), ModuleError> {
        if !self.generation.has_player_requests() {
            return Ok(());
        }
        let wanted = self.streamer.wanted_sections(self.world.section_size());
        let review = self.generation.review(&wanted, Instant::now());
        for (section, distance) in review.nearer {
            self.host.emit(&GenerationRequest { section, distance })?;
        }
        if !review.cancel.is_empty() {
            log::debug!(
                "{} sections nobody wants any more: generation cancelled",
                review.cancel.len()
            );
            self.host.emit(&GenerationCancel {
                sections: review.cancel,
            })?;
        }
        Ok(())
    }

    pub(crate) fn load_or_generate(&mut self, section: Pos) -> Result<SectionStatus, ModuleError> {
        let loaded = self
            .world
            .load_section(section)
            .map_err(ModuleError::from)?;
        if loaded != Loaded::Ready {
            self.request_generation(section, None)?;
        }
        let (generated, save_enabled) =
            self.world.section_status(section).unwrap_or((false, false));
        Ok(SectionStatus {
            generated,
            save_enabled,
        })
    }

    /// A generator's answer: store it and stream it.
    pub(crate) fn apply_generated(
        &mut self,
        generated: GeneratedSection,
    ) -> Result<(), ModuleError> {
        if self.beyond_border(generated.section) {
            self.generation.done(&generated.section);
            log::debug!(
                "section {:?} is beyond the world border: not applied",
                generated.section
            );
            return Ok(());
        }
        let chunks = generated
            .chunks
            .into_iter()
            .map(|(pos, data)| (pos, data.blob))
            .collect();
        let updated = self
            .world
            .apply_generated(generated.section, chunks)
            .map_err(ModuleError::from)?;
        self.generation.done(&generated.section);
        let updated: Vec<Committed> = updated
            .into_iter()
            .map(|(node_id, chunk)| Committed {
                node_id,
                chunk,
                voxels: None,
            })
            .collect();
        self.announce(&updated)?;
        self.pump()
    }

    /// A run over every section with x and z within `radius` of the origin
    /// and y within `height` that is not stored yet.
    pub(crate) fn plan_pregen(
        &mut self,
        radius: i32,
        height: i32,
        batch: usize,
    ) -> Result<PregenRun, ModuleError> {
        let mut missing = Vec::new();
        let mut already_present = 0;
        let mut beyond = 0;
        for section in pregen::region(radius, height) {
            if self.beyond_border(section) {
                beyond += 1;
            } else if self.world.is_stored(section).map_err(ModuleError::from)? {
                already_present += 1;
            } else {
                missing.push(section);
            }
        }
        if let Some(border) = self.border.filter(|_| beyond > 0) {
            log::info!(
                "pregen: {beyond} sections beyond the world border ({} blocks) skipped",
                border.blocks
            );
        }
        Ok(PregenRun::new(missing, already_present, batch))
    }

    /// Generates and saves every section of the region not stored yet, at
    /// once (headless, and the `Pregen` call). The generator makes the next
    /// batch while this thread saves and lights the last one. With `light`
    /// (headless only), every chunk of the run is lit once, for good: as
    /// soon as the run's sections around and above it are generated (as
    /// Luanti lights what it emerges, with the light of its neighbours),
    /// whole sections at a time; answers how many chunks and the seconds
    /// that took. Light is never stored: this is there to measure
    /// generation with light.
    pub(crate) fn pregen(
        &mut self,
        radius: i32,
        height: i32,
        light: bool,
    ) -> Result<(PregenReport, Option<(u64, f64)>), ModuleError> {
        let mut run = self.plan_pregen(radius, height, pregen::HEADLESS_BATCH)?;
        let mut unlit = pregen::Unlit::new(self.world.section_size(), height, run.remaining());
        let (mut lit, mut light_time) = (0u64, 0.0f64);
        let (host, generator) = (self.host, self.generator.clone());
        let ask = |sections: Vec<Pos>| host.call_module(&generator, &Generate { sections });
        std::thread::scope(|scope| -> Result<(), ModuleError> {
            // The next batch, asked of the generator on a thread of its own.
            let ask_next = |run: &mut PregenRun, world: &Self| {
                run.next_batch().map(|batch| {
                    let sections = world.within_border(batch.clone());
                    (batch, scope.spawn(move || ask(sections)))
                })
            };
            let mut asked = ask_next(&mut run, self);
            let mut settled = Vec::new();
            while let Some((batch, generating)) = asked.take() {
                // Meanwhile: light what the batch before settled.
                if light {
                    let started = Instant::now();
                    // A group at a time: the voxels a call gathers are held
                    // until it ends.
                    for group in std::mem::take(&mut settled).chunks(pregen::LIGHT_GROUP) {
                        lit += self.world.light_settled(group).map_err(ModuleError::from)?;
                    }
                    light_time += started.elapsed().as_secs_f64();
                }
                let generated = generating.join().map_err(|_| {
                    ModuleError::msg("pregen: the call to the generator panicked")
                })??;
                asked = ask_next(&mut run, self);
                unlit.generating(&batch);
                run.generated(self.save_generated(generated)?);
                if light {
                    settled = unlit.take_settled(run.is_finished());
                }
                // Told a batch at a time: a large region's are never all held.
                self.tell_sections()?;
            }
            if light {
                let started = Instant::now();
                for group in settled.chunks(pregen::LIGHT_GROUP) {
                    lit += self.world.light_settled(group).map_err(ModuleError::from)?;
                }
                light_time += started.elapsed().as_secs_f64();
            }
            Ok(())
        })?;
        run.finish();
        if light {
            log::info!("pregen: lit {lit} chunks in {light_time:.2} s");
        }
        Ok((run.report, light.then_some((lit, light_time))))
    }

    /// The running server's pregen, until `deadline`: batches while time is
    /// left. A failure ends the run (logged; what it saved stays).
    pub(crate) fn pregen_slice(&mut self, deadline: Instant) {
        let Some(mut run) = self.pregen_run.take() else {
            return;
        };
        while Instant::now() < deadline {
            let Some(batch) = run.next_batch() else {
                break;
            };
            match self.generate_and_save(batch) {
                Ok(generated) => run.generated(generated),
                Err(error) => {
                    log::error!("pregen stopped at {}: {error}", run.progress());
                    return;
                }
            }
        }
        if run.is_finished() {
            run.finish();
        } else {
            self.pregen_run = Some(run);
        }
    }

    /// Asks the generator for `sections`, applies and saves them. Returns
    /// how many were generated.
    pub(crate) fn generate_and_save(&mut self, sections: Vec<Pos>) -> Result<u64, ModuleError> {
        let sections = self.within_border(sections);
        if sections.is_empty() {
            return Ok(0);
        }
        let generated = self
            .host
            .call_module(&self.generator, &Generate { sections })?;
        self.save_generated(generated)
    }

    /// `sections` less those beyond the world border.
    fn within_border(&self, mut sections: Vec<Pos>) -> Vec<Pos> {
        sections.retain(|section| !self.beyond_border(*section));
        sections
    }

    /// Applies and saves what the generator answered (each section in its
    /// own transaction: an interrupted run keeps what it finished, and a
    /// rerun skips it). Returns how many were generated.
    fn save_generated(&mut self, generated: Vec<GeneratedSection>) -> Result<u64, ModuleError> {
        let mut count = 0;
        for section in generated {
            if self.beyond_border(section.section) {
                continue;
            }
            let chunks = section
                .chunks
                .into_iter()
                .map(|(pos, data)| (pos, data.blob))
                .collect();
            self.world
                .apply_generated(section.section, chunks)
                .map_err(ModuleError::from)?;
            self.world
                .set_section_save_enabled(section.section, true)
                .map_err(ModuleError::from)?;
            count += 1;
        }
        self.save()?;
        Ok(count)
    }

    /// Whether `section` has no voxel inside the world border (never
    /// generated).
    pub(crate) fn beyond_border(&self, section: Pos) -> bool {
        self.border.is_some_and(|border| {
            border.section_beyond(section, self.world.section_size().0, CHUNK_SIZE)
        })
    }
}

/// The calls of this feature, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .call(|world, request: LoadOrGenerateSection| world.load_or_generate(request.section))
        .call(|world, request: SetSectionSaveEnabled| {
            world
                .world
                .set_section_save_enabled(request.section, request.enabled)
                .map_err(ModuleError::from)
        })
        .call(|world, request: ApplyGenerated| world.apply_generated(request.section))
        .call(|world, _: GetBorder| Ok(world.border))
        .call(|world, region: Pregen| {
            world
                .pregen(
                    region.radius.min(1024) as i32,
                    region.height.min(1024) as i32,
                    false,
                )
                .map(|(report, _)| report)
        });
}

#[cfg(test)]
mod tests {
    use buildat_interface::testing::TestHost;
    use buildat_voxel::geometry::{CHUNK_SIZE, Pos, SectionSize};
    use buildat_voxelworld_api::{
        ApplyGenerated, BlockDefinition, Border, ChunkData, Generate, GeneratedSection,
        GenerationRequest, GetBorder, GetVoxel, LoadOrGenerateSection, Pregen, RegisterBlock,
    };

    /// `section` all stone, as a generator would answer it.
    fn stone_section(section: Pos) -> GeneratedSection {
        let chunks = SectionSize::default()
            .chunks_of_section(section)
            .into_iter()
            .map(|chunk| {
                let voxels = vec![1u32; CHUNK_SIZE.pow(3) as usize];
                let blob =
                    buildat_format::encode_voxels(&voxels, |_| Some("stone")).expect("encodes");
                (chunk, ChunkData { node_id: 0, blob })
            })
            .collect();
        GeneratedSection { section, chunks }
    }

    /// With `voxelworld.border` = 20 (sections of 64 voxels: x and z
    /// sections -1 and 0 reach inside), a section beyond is never asked
    /// of the generator, a generator's answer for one is not stored, and
    /// pregen skips them.
    #[test]
    fn nothing_beyond_the_border_is_generated() {
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new()
            .world_path(dir.path())
            .config("voxelworld.border", "20");
        kit.answer(|generate: Generate| {
            Ok(generate.sections.into_iter().map(stone_section).collect())
        });
        let mut world = kit.load::<crate::VoxelWorld>().expect("loads");
        world
            .call(&RegisterBlock {
                block: BlockDefinition::simple("stone", "stone.png"),
            })
            .expect("registers");
        assert_eq!(
            world.call(&GetBorder {}).expect("answers"),
            Some(Border { blocks: 20 })
        );

        let beyond: Pos = [1, 0, 0];
        let inside: Pos = [-1, 0, -1];
        for section in [beyond, inside] {
            let status = world
                .call(&LoadOrGenerateSection { section })
                .expect("answers");
            assert!(!status.generated, "{section:?}");
        }
        let asked: Vec<Pos> = kit
            .emitted::<GenerationRequest>()
            .iter()
            .map(|r| r.section)
            .collect();
        assert_eq!(asked, [inside], "only the section inside is asked for");

        // A generator answering for a section beyond anyway: not stored.
        for section in [beyond, inside] {
            world
                .call(&ApplyGenerated {
                    section: stone_section(section),
                })
                .expect("answered");
        }
        let voxel = |world: &mut buildat_interface::testing::TestModule<crate::VoxelWorld>,
                     pos: Pos| world.call(&GetVoxel { pos }).expect("answers");
        assert_eq!(voxel(&mut world, [70, 5, 5]), None, "beyond: not generated");
        assert!(
            voxel(&mut world, [-30, 5, -30]).is_some(),
            "inside: generated"
        );
        assert!(!world.module_mut().world.is_stored(beyond).expect("reads"));

        // Pregen: the region's sections inside, none beyond.
        let report = world
            .call(&Pregen {
                radius: 2,
                height: 0,
            })
            .expect("pregen");
        assert_eq!(
            report.generated + report.already_present,
            4,
            "x and z sections -1 and 0: {report:?}"
        );
        let generated: Vec<Pos> = kit
            .calls::<Generate>()
            .into_iter()
            .flat_map(|g| g.sections)
            .collect();
        assert!(
            generated
                .iter()
                .all(|s| (-1..=0).contains(&s[0]) && (-1..=0).contains(&s[2])),
            "{generated:?}"
        );
        for x in -2..=2 {
            assert!(
                !world
                    .module_mut()
                    .world
                    .is_stored([x, 0, 2])
                    .expect("reads"),
                "{x}"
            );
        }
    }
}
