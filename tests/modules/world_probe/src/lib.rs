//! `world_probe`: a test fixture module for the world crash tests.
//!
//! Owns nothing a user sees. It makes four sections save-enabled, then on
//! every tick writes numbered rounds: round N stores N's 32 low bits as
//! stone (1) and dirt (0) voxels at 32 fixed places in each section, commits,
//! saves, and logs `saved round N` once the save returned. At start it reads
//! the round back from the world and continues after it. With the setting
//! `world_probe.idle` it writes nothing and only answers `hammer` (the
//! world benchmark's get/set_voxel calls from another module).

use buildat_interface::{Event, Host, Module, ModuleError, events, export_module, log};
use buildat_voxelworld_api::{
    Commit, GetRegistry, GetVoxel, LoadOrGenerateSection, Save, SetSectionSaveEnabled, SetVoxel,
};
use serde::{Deserialize, Serialize};

/// The `is_ready` call: whether the probe has prepared its sections.
#[derive(Serialize, Deserialize)]
pub struct IsReady {}

/// The `hammer` call: `count` get_voxel calls then `count` set_voxel calls;
/// answers the nanoseconds each batch took.
#[derive(Serialize, Deserialize)]
pub struct Hammer {
    pub count: u32,
}

buildat_interface::calls! {
    module "world_probe";
    IsReady = "is_ready" -> bool;
    Hammer = "hammer" -> (u64, u64);
}

/// High in the sky (y 256..320), above any terrain, so a fresh world holds
/// air at every bit place.
pub const SECTIONS: [[i32; 3]; 4] = [[0, 4, 0], [1, 4, 0], [2, 4, 0], [3, 4, 0]];
const ROUNDS_PER_TICK: u32 = 3;

/// The 32 places of a section that carry the round's bits.
pub fn bit_place(section: [i32; 3], bit: i32) -> [i32; 3] {
    [
        section[0] * 64 + bit,
        section[1] * 64 + 40,
        section[2] * 64 + 5,
    ]
}

struct WorldProbe {
    host: Host,
    round: u64,
    ready: bool,
    stone: u32,
    dirt: u32,
}

impl WorldProbe {
    fn get(&self, pos: [i32; 3]) -> Result<Option<u32>, ModuleError> {
        self.host.call(&GetVoxel { pos })
    }

    fn prepare(&mut self) -> Result<(), ModuleError> {
        for section in SECTIONS {
            let status = self.host.call(&LoadOrGenerateSection { section })?;
            if !status.generated {
                return Ok(());
            }
        }
        let mut registry = self.host.call(&GetRegistry {})?;
        registry.reindex();
        self.stone = registry.get_id("stone").ok_or("stone is not registered")?;
        self.dirt = registry.get_id("dirt").ok_or("dirt is not registered")?;
        for section in SECTIONS {
            self.host.call(&SetSectionSaveEnabled {
                section,
                enabled: true,
            })?;
        }
        // Continue after the round the world holds (0 on a fresh world).
        let mut round = 0u64;
        for bit in 0..32 {
            match self.get(bit_place(SECTIONS[0], bit))? {
                Some(v) if v == self.stone => round |= 1 << bit,
                Some(v) if v == self.dirt => {}
                _ => {
                    round = 0;
                    break;
                }
            }
        }
        self.round = round;
        self.ready = true;
        log::info!("world_probe ready at round {round}");
        Ok(())
    }

    fn write_round(&mut self) -> Result<(), ModuleError> {
        self.round += 1;
        for section in SECTIONS {
            for bit in 0..32 {
                let voxel = if self.round >> bit & 1 == 1 {
                    self.stone
                } else {
                    self.dirt
                };
                let request = SetVoxel {
                    pos: bit_place(section, bit),
                    voxel,
                };
                self.host.call(&request)?;
            }
        }
        self.host.call(&Commit {})?;
        self.host.call(&Save {})?;
        log::info!("saved round {}", self.round);
        Ok(())
    }
}

impl WorldProbe {
    /// `count` get_voxel calls then `count` set_voxel calls; answers the
    /// nanoseconds each batch took.
    fn hammer(&mut self, count: u32) -> Result<(u64, u64), ModuleError> {
        let started = std::time::Instant::now();
        for i in 0..count as i32 {
            let _: Option<u32> = self.get([i % 64, 20, (i / 64) % 64])?;
        }
        let gets = started.elapsed().as_nanos() as u64;
        let started = std::time::Instant::now();
        for i in 0..count as i32 {
            let voxel = if i % 2 == 0 { self.stone } else { self.dirt };
            let request = SetVoxel {
                pos: [i % 64, 20, (i / 64) % 64],
                voxel,
            };
            self.host.call(&request)?;
        }
        Ok((gets, started.elapsed().as_nanos() as u64))
    }
}

impl Module for WorldProbe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self {
            host,
            round: 0,
            ready: false,
            stone: 0,
            dirt: 0,
        })
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        self.host.sub_event(events::Tick::NAME)?;
        Ok(())
    }

    fn event(&mut self, name: &str, _payload: &[u8]) -> Result<(), ModuleError> {
        if name != events::Tick::NAME {
            return Ok(());
        }
        if !self.ready {
            return self.prepare();
        }
        if self.host.get_config("world_probe.idle").is_none() {
            for _ in 0..ROUNDS_PER_TICK {
                self.write_round()?;
            }
        }
        Ok(())
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        buildat_interface::answer_calls!(function, payload, {
            IsReady => |_| Ok(self.ready),
            Hammer => |request: Hammer| self.hammer(request.count),
        })
    }
}

export_module!(WorldProbe);
