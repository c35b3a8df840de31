//! `buildat-voxel`: the voxel model shared by the server's world modules and
//! the client.
//!
//! Owns: [`VoxelInstance`] (a voxel as stored: 21-bit type id, 8 bits for
//! games, 3 reserved), [`VoxelName`] and its canonical string form,
//! [`VoxelDefinition`], the [`VoxelRegistry`] (id ↔ name ↔ definition) and
//! the [`BlockRegistry`] (blocks generate the voxel definitions they need,
//! per segment and rotation), world geometry helpers ([`geometry`]), the
//! colour a block is drawn in without a texture ([`colour`]), per-voxel
//! light ([`light`]: sunlight and block light, computed per chunk;
//! [`relight`]: updated in place after edits).
//! Does not own: storage, encoding of voxel arrays (`buildat-format`'s voxel
//! blob) or generation.

pub mod colour;
pub mod geometry;
pub mod light;
pub mod relight;

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

/// Bits of a voxel instance that hold its type id.
pub const TYPE_ID_BITS: u32 = 21;
/// The largest type id.
pub const MAX_TYPE_ID: u32 = (1 << TYPE_ID_BITS) - 1;
/// Type id 0: empty space.
pub const AIR: u32 = 0;
/// Type id 1: stands in for a stored voxel whose name is not registered.
pub const UNKNOWN: u32 = 1;
pub const AIR_NAME: &str = "air";
pub const UNKNOWN_NAME: &str = "unknown";

/// A voxel as stored in a chunk: low 21 bits the type id, next 8 bits free
/// for games, top 3 bits reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct VoxelInstance(pub u32);

impl VoxelInstance {
    pub fn new(type_id: u32, game_bits: u8) -> Self {
        Self((type_id & MAX_TYPE_ID) | (u32::from(game_bits) << TYPE_ID_BITS))
    }

    pub fn type_id(self) -> u32 {
        self.0 & MAX_TYPE_ID
    }

    pub fn game_bits(self) -> u8 {
        ((self.0 >> TYPE_ID_BITS) & 0xff) as u8
    }
}

/// A voxel type's identity: the block it belongs to, which segment of the
/// block, and its rotation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VoxelName {
    pub block_name: String,
    pub segment: [u8; 3],
    /// 0..4
    pub rotation_primary: u8,
    /// 0..6
    pub rotation_secondary: u8,
}

impl VoxelName {
    /// A one-segment, unrotated voxel of `block_name`.
    pub fn simple(block_name: &str) -> Self {
        Self {
            block_name: block_name.to_string(),
            segment: [0; 3],
            rotation_primary: 0,
            rotation_secondary: 0,
        }
    }

    /// The canonical string form, used to store voxels by name:
    /// `block` for segment 0 unrotated, otherwise `block@x,y,z/p,s`.
    pub fn canonical(&self) -> String {
        if self.segment == [0; 3] && self.rotation_primary == 0 && self.rotation_secondary == 0 {
            self.block_name.clone()
        } else {
            let [x, y, z] = self.segment;
            format!(
                "{}@{x},{y},{z}/{},{}",
                self.block_name, self.rotation_primary, self.rotation_secondary
            )
        }
    }

    /// Parses [`VoxelName::canonical`]'s output.
    pub fn parse(text: &str) -> Option<Self> {
        let Some((block, rest)) = text.split_once('@') else {
            return (!text.is_empty()).then(|| Self::simple(text));
        };
        let (segment, rotation) = rest.split_once('/')?;
        let segment: Vec<u8> = segment
            .split(',')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let rotation: Vec<u8> = rotation
            .split(',')
            .map(|n| n.parse().ok())
            .collect::<Option<_>>()?;
        let (&[x, y, z], &[p, s]) = (segment.as_slice(), rotation.as_slice()) else {
            return None;
        };
        (p < 4 && s < 6 && !block.is_empty()).then(|| Self {
            block_name: block.to_string(),
            segment: [x, y, z],
            rotation_primary: p,
            rotation_secondary: s,
        })
    }
}

/// How a voxel's faces meet its neighbours' (for meshing on clients).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum EdgeMaterial {
    Empty,
    Solid,
    Transparent,
}

/// Everything a client and the server know about one voxel type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoxelDefinition {
    pub id: u32,
    pub name: VoxelName,
    /// Texture references (atlas entries), one per face: +x, -x, +y, -y, +z, -z.
    pub textures: [String; 6],
    /// The module that handles this voxel's behaviour (may be empty).
    pub handler_module: String,
    pub physically_solid: bool,
    pub edge_material: EdgeMaterial,
    /// Block light this voxel gives off, 0..=15 (a torch: 14).
    #[serde(default)]
    pub light_source: u8,
    /// How much light a voxel of this type takes away as light crosses it,
    /// beyond the 1 per step every voxel costs: 0 clear (air, glass), 1
    /// (water, leaves) to 14 dimming, [`light::OPAQUE`] (15) or more: no
    /// light enters. Old data without it reads as opaque.
    #[serde(default = "light::opaque")]
    pub light_absorption: u8,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RegistryError {
    #[error("the voxel type id space (2^21 ids) is exhausted registering {0}")]
    Exhausted(String),
    #[error("block {0} is already registered with another definition")]
    BlockConflict(String),
    #[error("block {name}: {why}")]
    BadBlock { name: String, why: String },
}

/// The world's voxel registry ("main"): id ↔ canonical name ↔ definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VoxelRegistry {
    definitions: Vec<VoxelDefinition>,
    #[serde(skip)]
    by_name: HashMap<String, u32>,
}

impl Default for VoxelRegistry {
    fn default() -> Self {
        let mut registry = Self {
            definitions: Vec::new(),
            by_name: HashMap::new(),
        };
        for (name, solid) in [(AIR_NAME, false), (UNKNOWN_NAME, true)] {
            let _ = registry.add(
                VoxelName::simple(name),
                [""; 6].map(String::from),
                "",
                solid,
            );
        }
        registry
    }
}

impl VoxelRegistry {
    /// Rebuilds the name index (after deserialising).
    pub fn reindex(&mut self) {
        self.by_name = self
            .definitions
            .iter()
            .map(|d| (d.name.canonical(), d.id))
            .collect();
    }

    /// Registers a voxel type, or returns the id it already has. Its light
    /// follows its solidity: a solid voxel is opaque, any other clear;
    /// neither gives off light ([`VoxelRegistry::add_lit`] says otherwise).
    pub fn add(
        &mut self,
        name: VoxelName,
        textures: [String; 6],
        handler_module: &str,
        physically_solid: bool,
    ) -> Result<u32, RegistryError> {
        let absorption = if physically_solid { light::OPAQUE } else { 0 };
        self.add_lit(
            name,
            textures,
            handler_module,
            physically_solid,
            VoxelLight {
                source: 0,
                absorption,
            },
        )
    }

    /// [`VoxelRegistry::add`] with the voxel's light properties.
    pub fn add_lit(
        &mut self,
        name: VoxelName,
        textures: [String; 6],
        handler_module: &str,
        physically_solid: bool,
        light: VoxelLight,
    ) -> Result<u32, RegistryError> {
        let canonical = name.canonical();
        if let Some(id) = self.by_name.get(&canonical) {
            return Ok(*id);
        }
        let id = u32::try_from(self.definitions.len())
            .ok()
            .filter(|id| *id <= MAX_TYPE_ID)
            .ok_or_else(|| RegistryError::Exhausted(canonical.clone()))?;
        self.definitions.push(VoxelDefinition {
            id,
            name,
            textures,
            handler_module: handler_module.to_string(),
            physically_solid,
            edge_material: if physically_solid {
                EdgeMaterial::Solid
            } else {
                EdgeMaterial::Empty
            },
            light_source: light.source.min(light::MAX_LIGHT),
            light_absorption: light.absorption.min(light::OPAQUE),
        });
        self.by_name.insert(canonical, id);
        Ok(id)
    }

    pub fn get(&self, id: u32) -> Option<&VoxelDefinition> {
        self.definitions.get(id as usize)
    }

    pub fn get_id(&self, canonical_name: &str) -> Option<u32> {
        self.by_name.get(canonical_name).copied()
    }

    /// The canonical name of a type id.
    pub fn get_name(&self, id: u32) -> Option<String> {
        self.get(id).map(|d| d.name.canonical())
    }

    pub fn len(&self) -> usize {
        self.definitions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.definitions.is_empty()
    }

    pub fn definitions(&self) -> &[VoxelDefinition] {
        &self.definitions
    }
}

/// A voxel type's light properties (see [`light`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct VoxelLight {
    /// Block light given off, 0..=15.
    pub source: u8,
    /// Light taken away crossing it beyond the step's 1; 15: opaque.
    pub absorption: u8,
}

/// A block: one or more voxel segments, optionally rotatable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BlockDefinition {
    pub name: String,
    /// Segments along x, y, z (1,1,1 for a plain block).
    pub size: [u8; 3],
    pub rotatable: bool,
    pub textures: [String; 6],
    pub handler_module: String,
    pub physically_solid: bool,
    /// Block light its voxels give off, 0..=15 (a torch: 14).
    #[serde(default)]
    pub light_source: u8,
    /// Light its voxels take away (see `VoxelDefinition::light_absorption`):
    /// 0 clear, 15 opaque. Old data without it reads as opaque.
    #[serde(default = "light::opaque")]
    pub light_absorption: u8,
}

impl BlockDefinition {
    /// A plain one-voxel, unrotatable solid block with one texture.
    pub fn simple(name: &str, texture: &str) -> Self {
        Self {
            name: name.to_string(),
            size: [1, 1, 1],
            rotatable: false,
            textures: std::array::from_fn(|_| texture.to_string()),
            handler_module: String::new(),
            physically_solid: true,
            light_source: 0,
            light_absorption: light::OPAQUE,
        }
    }

    /// Its voxels' light properties.
    pub fn light(&self) -> VoxelLight {
        VoxelLight {
            source: self.light_source,
            absorption: self.light_absorption,
        }
    }
}

/// Blocks by name; registering one adds the voxel types it needs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BlockRegistry {
    blocks: Vec<BlockDefinition>,
}

impl BlockRegistry {
    /// Registers `block` and every voxel type it needs (each segment, and
    /// each of the 4×6 rotations when rotatable); returns their ids in order.
    pub fn add(
        &mut self,
        block: BlockDefinition,
        voxels: &mut VoxelRegistry,
    ) -> Result<Vec<u32>, RegistryError> {
        if block.name.is_empty() || block.name.contains(['@', '/', ',']) {
            return Err(RegistryError::BadBlock {
                name: block.name.clone(),
                why: "a block name is non-empty and holds no '@', '/' or ','".into(),
            });
        }
        if block.size.contains(&0) {
            return Err(RegistryError::BadBlock {
                name: block.name.clone(),
                why: "every size is at least 1".into(),
            });
        }
        if let Some(existing) = self.blocks.iter().find(|b| b.name == block.name) {
            if *existing != block {
                return Err(RegistryError::BlockConflict(block.name));
            }
        } else {
            self.blocks.push(block.clone());
        }
        let rotations: Vec<(u8, u8)> = if block.rotatable {
            (0..4).flat_map(|p| (0..6).map(move |s| (p, s))).collect()
        } else {
            vec![(0, 0)]
        };
        let mut ids = Vec::new();
        for x in 0..block.size[0] {
            for y in 0..block.size[1] {
                for z in 0..block.size[2] {
                    for &(p, s) in &rotations {
                        let name = VoxelName {
                            block_name: block.name.clone(),
                            segment: [x, y, z],
                            rotation_primary: p,
                            rotation_secondary: s,
                        };
                        ids.push(voxels.add_lit(
                            name,
                            block.textures.clone(),
                            &block.handler_module,
                            block.physically_solid,
                            block.light(),
                        )?);
                    }
                }
            }
        }
        Ok(ids)
    }

    pub fn get(&self, name: &str) -> Option<&BlockDefinition> {
        self.blocks.iter().find(|b| b.name == name)
    }

    pub fn blocks(&self) -> &[BlockDefinition] {
        &self.blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_packs_type_and_game_bits() {
        let voxel = VoxelInstance::new(MAX_TYPE_ID, 0xab);
        assert_eq!(voxel.type_id(), MAX_TYPE_ID);
        assert_eq!(voxel.game_bits(), 0xab);
        assert_eq!(voxel.0 >> 29, 0, "reserved bits stay clear");
    }

    #[test]
    fn names_round_trip_through_canonical_text() {
        let plain = VoxelName::simple("stone");
        assert_eq!(plain.canonical(), "stone");
        let rotated = VoxelName {
            block_name: "stairs".into(),
            segment: [1, 0, 2],
            rotation_primary: 3,
            rotation_secondary: 5,
        };
        assert_eq!(rotated.canonical(), "stairs@1,0,2/3,5");
        for name in [plain, rotated] {
            assert_eq!(VoxelName::parse(&name.canonical()), Some(name));
        }
        for bad in ["", "x@1,2/0,0", "x@1,2,3/4,0", "x@1,2,3/0,6", "@1,1,1/0,0"] {
            assert_eq!(VoxelName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn blocks_generate_their_voxels_and_reregistering_is_idempotent() {
        let mut voxels = VoxelRegistry::default();
        let mut blocks = BlockRegistry::default();
        let stone = blocks
            .add(BlockDefinition::simple("stone", "stone.png"), &mut voxels)
            .unwrap();
        assert_eq!(stone, vec![2]);
        let mut stairs = BlockDefinition::simple("stairs", "wood.png");
        stairs.rotatable = true;
        stairs.size = [2, 1, 1];
        let ids = blocks.add(stairs.clone(), &mut voxels).unwrap();
        assert_eq!(ids.len(), 2 * 24);
        assert_eq!(
            blocks.add(stairs, &mut voxels).unwrap(),
            ids,
            "same ids again"
        );
        assert_eq!(voxels.get_id("stone"), Some(2));
        assert_eq!(
            voxels.get_name(ids[47]).as_deref(),
            Some("stairs@1,0,0/3,5")
        );
        let mut other = BlockDefinition::simple("stone", "granite.png");
        other.physically_solid = false;
        assert!(matches!(
            blocks.add(other, &mut voxels),
            Err(RegistryError::BlockConflict(_))
        ));
    }

    #[test]
    fn a_block_s_light_reaches_its_voxels_and_the_light_table() {
        let mut voxels = VoxelRegistry::default();
        let mut blocks = BlockRegistry::default();
        let mut torch = BlockDefinition::simple("torch", "torch.png");
        torch.physically_solid = false;
        torch.light_source = 14;
        torch.light_absorption = 0;
        let id = blocks.add(torch, &mut voxels).unwrap()[0];
        let stone = blocks
            .add(BlockDefinition::simple("stone", "stone.png"), &mut voxels)
            .unwrap()[0];
        let table = light::LightTable::new(&voxels);
        assert_eq!(
            table.get(id),
            VoxelLight {
                source: 14,
                absorption: 0
            }
        );
        assert_eq!(table.get(stone).absorption, light::OPAQUE);
        assert_eq!(table.get(AIR), VoxelLight::default(), "air is clear");
        assert_eq!(table.get(UNKNOWN).absorption, light::OPAQUE);
    }

    #[test]
    fn exhausting_the_id_space_is_a_clear_error() {
        let mut voxels = VoxelRegistry::default();
        let filler = voxels.definitions[0].clone();
        voxels
            .definitions
            .resize((MAX_TYPE_ID + 1) as usize, filler);
        let error = voxels
            .add(
                VoxelName::simple("one_too_many"),
                [""; 6].map(String::from),
                "",
                true,
            )
            .unwrap_err();
        assert!(
            error
                .to_string()
                .contains("exhausted registering one_too_many"),
            "{error}"
        );
    }
}
