//! A mod's state and entities carried over a reload: the mod's value
//! (bincode) stamped with its layout (a hash of the type's name and
//! [`crate::Mod::VERSION`]), and the entities the modkit keeps.
//!
//! Owns: [`Kept`] (the table's stash) and the rule for a state of another
//! layout or that does not decode: dropped with a warning, the new
//! version starts from `Default` (its entities are still carried over).
//! Does not own: keeping the bytes between the versions (the host).

use buildat_interface::{ModuleError, Stash, log};
use serde::{Deserialize, Serialize};

use crate::{Entity, Mod, Modkit};

/// What a mod carries over its reload.
#[derive(Serialize, Deserialize)]
pub(crate) struct Kept {
    /// [`layout`] of the version that stored it.
    layout: u64,
    state: Vec<u8>,
    entities: Vec<Entity>,
}

impl Stash for Kept {
    const LAYOUT: u32 = 1;
}

/// The layout stamp of `M`'s state: FNV-1a of its type's name and version.
pub(crate) fn layout<M: Mod>() -> u64 {
    let name = std::any::type_name::<M>();
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in name.bytes().chain(M::VERSION.to_le_bytes()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    hash
}

pub(crate) fn save<M: Mod>(kit: &mut Modkit<M>) -> Kept {
    let state = buildat_interface::encode(&kit.state).unwrap_or_else(|error| {
        kit.ctx.host().log(
            log::Level::Warn,
            &format!("the state does not encode, the next version starts fresh: {error}"),
        );
        Vec::new()
    });
    Kept {
        layout: layout::<M>(),
        state,
        entities: std::mem::take(&mut kit.entities),
    }
}

pub(crate) fn restore<M: Mod>(kit: &mut Modkit<M>, kept: Kept) -> Result<(), ModuleError> {
    kit.entities = kept.entities;
    let host = kit.ctx.host();
    if kept.layout != layout::<M>() {
        host.log(
            log::Level::Warn,
            &format!(
                "the previous version's state is of another layout (not {} of this VERSION): \
                 starting from the default",
                std::any::type_name::<M>()
            ),
        );
        return Ok(());
    }
    match buildat_interface::decode(&kept.state) {
        Ok(state) => kit.state = state,
        Err(error) => host.log(
            log::Level::Warn,
            &format!(
                "the previous version's state does not decode as {} ({error}): starting from \
                 the default (bump Mod::VERSION when the state's fields change)",
                std::any::type_name::<M>()
            ),
        ),
    }
    Ok(())
}
