//! Entities: a mod's dynamic nodes (voxelworld's, transient) that its
//! step closure moves every tick.
//!
//! Owns: [`Entity`], making the ones missing (at most once a second, all
//! in one `CreateNodes` call), stepping every one each tick and moving
//! those that moved in one `MoveNodes` call, forgetting those the world
//! lost (their section unloaded: made again), removing them when the
//! module unloads for good. Does not own: the nodes (`voxelworld`),
//! telling clients (`replicate`), drawing (the client's game draws a node
//! with `colour` and `size` variables as a box).

use std::collections::BTreeMap;

use buildat_interface::{ModuleError, log};
use buildat_voxelworld_api::{CreateNode, CreateNodes, MoveNodes, NodeMotion, RemoveNodes};
use serde::{Deserialize, Serialize};

use crate::setup::Kind;
use crate::{Mod, Modkit};

/// Seconds between two looks for a place for the entities missing.
pub(crate) const SPAWN_RETRY: f64 = 1.0;

/// Node variable: the entity's kind (UTF-8).
pub const VAR_ENTITY: &str = "entity";
/// Node variable: the colour to draw it, 3 bytes (red, green, blue).
pub const VAR_COLOUR: &str = "colour";
/// Node variable: the box to draw, width, height, depth in voxels, each a
/// little-endian `f32`.
pub const VAR_SIZE: &str = "size";

/// One entity, as its step closure sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entity {
    /// Its node's id.
    pub id: u64,
    /// Its kind's name.
    pub kind: String,
    /// Where it was made.
    pub home: [f64; 3],
    /// Where it is: the step closure moves it by changing this.
    pub position: [f64; 3],
    /// Its turn about +y, in radians (0 faces +z).
    pub yaw: f32,
    /// Seconds since it was made.
    pub age: f64,
}

/// A node's move from `before` to `position` in `dtime` seconds, turned
/// `yaw` about +y (its velocity the mean over the move).
pub fn motion(id: u64, before: [f64; 3], position: [f64; 3], yaw: f32, dtime: f64) -> NodeMotion {
    let velocity = std::array::from_fn(|i| {
        if dtime > 0.0 {
            ((position[i] - before[i]) / dtime) as f32
        } else {
            0.0
        }
    });
    NodeMotion {
        id,
        position,
        orientation: turn(yaw),
        velocity,
    }
}

/// A turn about +y as a quaternion (x, y, z, w).
pub fn turn(yaw: f32) -> [f32; 4] {
    let half = yaw / 2.0;
    [0.0, half.sin(), 0.0, half.cos()]
}

fn vars<M>(kind: &Kind<M>) -> BTreeMap<String, Vec<u8>> {
    BTreeMap::from([
        (VAR_ENTITY.to_string(), kind.name.as_bytes().to_vec()),
        (VAR_COLOUR.to_string(), kind.colour.to_vec()),
        (
            VAR_SIZE.to_string(),
            kind.size.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    ])
}

/// One tick: make the entities missing (once a second), step every one,
/// move those that moved.
pub(crate) fn tick<M: Mod>(
    kit: &mut Modkit<M>,
    kinds: &mut [Kind<M>],
    dtime: f64,
) -> Result<(), ModuleError> {
    kit.ctx.player = None;
    kit.spawn_wait -= dtime;
    if kit.spawn_wait <= 0.0 {
        kit.spawn_wait = SPAWN_RETRY;
        spawn_missing(kit, kinds)?;
    }
    let mut moves = Vec::new();
    let mut failed = Vec::new();
    for entity in &mut kit.entities {
        let Some(kind) = kinds.iter_mut().find(|k| k.name == entity.kind) else {
            continue;
        };
        let (before, yaw) = (entity.position, entity.yaw);
        entity.age += dtime;
        if let Err(error) = (kind.step)(&mut kit.state, &mut kit.ctx, entity, dtime) {
            failed.push((format!("{} {} step", entity.kind, entity.id), error));
            // A failed step moves it nowhere.
            (entity.position, entity.yaw) = (before, yaw);
            continue;
        }
        if entity.position != before || entity.yaw != yaw {
            moves.push(motion(
                entity.id,
                before,
                entity.position,
                entity.yaw,
                dtime,
            ));
        }
    }
    if !moves.is_empty() {
        let lost = kit.ctx.host().call(&MoveNodes { moves })?;
        if !lost.is_empty() {
            kit.entities.retain(|e| !lost.contains(&e.id));
        }
    }
    for (what, error) in failed {
        kit.failed(&what, &error);
    }
    Ok(())
}

/// Makes the entities each kind lacks where its place closure (or the
/// world's spawn point) says, in one call.
fn spawn_missing<M: Mod>(kit: &mut Modkit<M>, kinds: &mut [Kind<M>]) -> Result<(), ModuleError> {
    let mut nodes = Vec::new();
    let mut made = Vec::new();
    for kind in kinds.iter_mut() {
        let alive = kit.entities.iter().filter(|e| e.kind == kind.name).count();
        for _ in alive..kind.keep {
            let at = match &mut kind.place {
                Some(place) => place(&mut kit.state, &mut kit.ctx)?,
                None => kit.ctx.spawn_point()?,
            };
            let Some(at) = at else {
                break;
            };
            nodes.push(CreateNode {
                position: at,
                save_enabled: false,
                vars: vars(kind),
            });
            made.push((kind.name.clone(), at));
        }
    }
    if nodes.is_empty() {
        return Ok(());
    }
    let ids = kit.ctx.host().call(&CreateNodes { nodes })?;
    for ((kind, at), id) in made.into_iter().zip(ids) {
        let Some(id) = id else {
            continue;
        };
        kit.ctx
            .host()
            .log(log::Level::Info, &format!("made {kind} {id} at {at:?}"));
        kit.entities.push(Entity {
            id,
            kind,
            home: at,
            position: at,
            yaw: 0.0,
            age: 0.0,
        });
    }
    Ok(())
}

/// Removes every entity's node (the module goes for good).
pub(crate) fn remove_all<M: Mod>(kit: &mut Modkit<M>) {
    if kit.entities.is_empty() {
        return;
    }
    let ids = kit.entities.drain(..).map(|e| e.id).collect();
    if let Err(error) = kit.ctx.host().call(&RemoveNodes { ids }) {
        kit.ctx
            .host()
            .log(log::Level::Warn, &format!("removing the entities: {error}"));
    }
}
