//! `world_probe`: a test fixture module for the world crash tests.
//!
//! Owns nothing a user sees. It makes four sections save-enabled, then on
//! every tick writes numbered rounds: round N stores N's 32 low bits as
//! stone (1) and dirt (0) voxels at 32 fixed places in each section, commits,
//! saves, and logs `saved round N` once the save returned. At start it reads
//! the round back from the world and continues after it. With the setting
//! `world_probe.idle` it writes nothing and only answers `hammer` (the
//! world benchmark's get/set_voxel calls from another module). Its console
//! command `probe-nodes` drives dynamic nodes for the node tests (`create
//! N`: N persistent nodes in section (0, 4, 0), each after the first
//! attached to the first; `walk DX`: moves the first DX voxels along x;
//! `at ID X Y Z`: puts a node there; `remove ID...`: one `RemoveNodes`;
//! `save`; `show ID...`), and it logs
//! each `voxelworld:nodes_changed`.

use std::collections::BTreeMap;

use buildat_interface::core_api::{RegisterCommand, RunCommand};
use buildat_interface::{Host, Module, ModuleError, Receive, events, export_module, log};
use buildat_voxelworld_api::{
    Commit, CreateNode, GetNode, GetRegistry, GetVoxel, IDENTITY, LoadOrGenerateSection, MoveNodes,
    NodeMotion, NodesChanged, RemoveNodes, Save, SetNodeParent, SetSectionSaveEnabled, SetVoxel,
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
    /// `world_probe.idle` is set: no rounds.
    idle: bool,
    round: u64,
    ready: bool,
    stone: u32,
    dirt: u32,
    /// The nodes `probe-nodes create` made, the first carrying the others.
    nodes: Vec<u64>,
}

/// Where `probe-nodes create` puts its nodes: section (0, 4, 0), above any
/// terrain.
const NODE_Y: f64 = 4.0 * 64.0 + 10.5;

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
    /// `probe-nodes`, answered by hand (its words are parsed in
    /// [`WorldProbe::run_command`]).
    fn register_command(&mut self) -> Result<(), ModuleError> {
        self.host.call(&RegisterCommand {
            name: "probe-nodes".into(),
            usage: "create N | walk DX | at ID X Y Z | save | show ID...".into(),
            help: "drive dynamic nodes (a test fixture)".into(),
            privilege: None,
        })
    }

    fn tick(&mut self) -> Result<(), ModuleError> {
        if !self.ready {
            return self.prepare();
        }
        if !self.idle {
            for _ in 0..ROUNDS_PER_TICK {
                self.write_round()?;
            }
        }
        Ok(())
    }

    fn run_command(&mut self, command: RunCommand) -> Result<String, ModuleError> {
        let args: Vec<&str> = command.args.iter().map(String::as_str).collect();
        match args.as_slice() {
            ["create", count] => {
                let count: usize = count.parse().map_err(|_| "create N: N a number")?;
                let mut ids = Vec::new();
                for i in 0..count {
                    let id = self.host.call(&CreateNode {
                        position: [1.5 + 2.0 * i as f64, NODE_Y, 1.5],
                        save_enabled: true,
                        vars: BTreeMap::from([("index".to_string(), vec![i as u8])]),
                    })?;
                    if let Some(&first) = ids.first() {
                        self.host.call(&SetNodeParent {
                            id,
                            parent: Some(first),
                        })?;
                    }
                    ids.push(id);
                }
                self.nodes = ids.clone();
                let ids: Vec<String> = ids.iter().map(u64::to_string).collect();
                Ok(format!("created nodes {}", ids.join(" ")))
            }
            ["walk", dx] => {
                let dx: f64 = dx.parse().map_err(|_| "walk DX: DX a number")?;
                let first = *self.nodes.first().ok_or("no nodes: create some first")?;
                let node = self
                    .host
                    .call(&GetNode { id: first })?
                    .ok_or("the first node is gone")?;
                let mut position = node.position;
                position[0] += dx;
                let unknown = self.host.call(&MoveNodes {
                    moves: vec![NodeMotion {
                        id: first,
                        position,
                        orientation: IDENTITY,
                        velocity: [dx as f32, 0.0, 0.0],
                    }],
                })?;
                Ok(format!("moved 1 node, {} unknown", unknown.len()))
            }
            ["at", id, x, y, z] => {
                let number = |v: &str| -> Result<f64, ModuleError> {
                    v.parse()
                        .map_err(|_| ModuleError::msg("at ID X Y Z: numbers"))
                };
                let id: u64 = id.parse().map_err(|_| "at ID X Y Z: ID a number")?;
                let unknown = self.host.call(&MoveNodes {
                    moves: vec![NodeMotion {
                        id,
                        position: [number(x)?, number(y)?, number(z)?],
                        orientation: IDENTITY,
                        velocity: [0.0; 3],
                    }],
                })?;
                Ok(format!("put node {id} there, {} unknown", unknown.len()))
            }
            ["remove", ids @ ..] => {
                let ids = ids
                    .iter()
                    .map(|id| id.parse())
                    .collect::<Result<Vec<u64>, _>>()
                    .map_err(|_| "remove ID...: IDs are numbers")?;
                let asked = ids.len();
                let absent = self.host.call(&RemoveNodes { ids })?;
                let absent: Vec<String> = absent.iter().map(u64::to_string).collect();
                Ok(format!(
                    "removed {} of {asked} nodes, not there: [{}]",
                    asked - absent.len(),
                    absent.join(" ")
                ))
            }
            ["save"] => Ok(format!("saved {} sections", self.host.call(&Save {})?)),
            ["show", ids @ ..] => {
                for section in [[0, 4, 0], [1, 4, 0], [2, 4, 0]] {
                    self.host.call(&LoadOrGenerateSection { section })?;
                }
                let mut lines = Vec::new();
                for id in ids {
                    let id: u64 = id.parse().map_err(|_| "show ID...: IDs are numbers")?;
                    lines.push(match self.host.call(&GetNode { id })? {
                        Some(node) => format!(
                            "node {id} at {:?} parent {}",
                            node.position,
                            node.parent.map_or("none".to_string(), |p| p.to_string())
                        ),
                        None => format!("node {id} unknown"),
                    });
                }
                Ok(lines.join("\n"))
            }
            _ => Err(ModuleError::msg(
                "usage: probe-nodes create N | walk DX | at ID X Y Z | remove ID... | save | show ID...",
            )),
        }
    }

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

buildat_interface::settings! {
    /// The probe's one setting.
    struct ProbeSettings in "world_probe" {
        /// Set (to anything): write no rounds, only answer `hammer`.
        idle: Option<String> = None,
    }
}

impl Module for WorldProbe {
    fn create(host: Host) -> Result<Self, ModuleError> {
        use buildat_interface::settings::Settings;
        Ok(Self {
            idle: ProbeSettings::read(&host)?.idle.is_some(),
            host,
            round: 0,
            ready: false,
            stone: 0,
            dirt: 0,
            nodes: Vec::new(),
        })
    }

    fn receive(table: &mut Receive<Self>) {
        table
            .settings::<ProbeSettings>()
            .event(|probe, _: events::Start| probe.register_command())
            .event(|probe, _: events::Continue| probe.register_command())
            .event(|probe, _: events::Tick| probe.tick())
            .event(|_, changes: NodesChanged| {
                log::info!(
                    "world_probe: nodes changed {}, removed {}",
                    changes.changed.len() + changes.moved.len(),
                    changes.removed.len()
                );
                Ok(())
            })
            .call(|probe, _: IsReady| Ok(probe.ready))
            .call(|probe, request: Hammer| probe.hammer(request.count))
            .call(|probe, command: RunCommand| probe.run_command(command));
    }
}

export_module!(WorldProbe);
