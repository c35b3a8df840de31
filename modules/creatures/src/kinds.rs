//! The kinds of creature and the node variables that describe one to
//! clients.
//!
//! Owns: [`KINDS`] (name, persistence, body, speed, colour) and the
//! variables a creature's node carries ([`Kind::vars`], read back with
//! [`kind_of`]; [`Kind::node_at`] the node to create). Does not own: how a creature moves (`physics.rs`,
//! `wander.rs`) or how many there are (`lib.rs`).

use std::collections::BTreeMap;

use buildat_voxelworld_api::CreateNode;

use crate::physics::Body;

/// Variable: the kind's name (UTF-8). Every creature's node has it; it is
/// how the module finds its creatures (`ListNodes { with_var }`).
pub const VAR_CREATURE: &str = "creature";
/// Variable: the colour to draw it, 3 bytes (red, green, blue).
pub const VAR_COLOUR: &str = "colour";
/// Variable: the model to draw (UTF-8), a file of this module's
/// `client_data` as clients name it: `creatures/client_data/models/<kind>.glb`
/// (written by `scripts/models.py`; docs/client.md "Models").
pub const VAR_MODEL: &str = "model";
/// Variable: the box to draw, in voxels: width (x), height (y), depth (z),
/// each a little-endian `f32` (12 bytes); the position is the middle of
/// its bottom face.
pub const VAR_SIZE: &str = "size";

/// A kind of creature.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Kind {
    pub name: &'static str,
    /// Saved with the world (it comes back after a restart) or not.
    pub persistent: bool,
    pub body: Body,
    /// Walking speed, voxels a second.
    pub speed: f64,
    pub colour: [u8; 3],
}

/// Every kind, in the order the `creatures` command lists them.
pub const KINDS: [Kind; 3] = [
    Kind {
        name: "chicken",
        persistent: false,
        body: Body {
            half_width: 0.2,
            height: 0.6,
        },
        speed: 3.5,
        colour: [240, 232, 210],
    },
    Kind {
        name: "cow",
        persistent: true,
        body: Body {
            half_width: 0.45,
            height: 1.4,
        },
        speed: 2.0,
        colour: [96, 64, 44],
    },
    Kind {
        name: "sheep",
        persistent: true,
        body: Body {
            half_width: 0.35,
            height: 1.0,
        },
        speed: 2.5,
        colour: [214, 214, 206],
    },
];

/// The transient kinds (spawned to keep `creatures.count` alive).
pub fn transient() -> impl Iterator<Item = usize> {
    (0..KINDS.len()).filter(|&k| !KINDS[k].persistent)
}

/// The persistent kinds (`creatures.persistent` made once per world).
pub fn persistent() -> impl Iterator<Item = usize> {
    (0..KINDS.len()).filter(|&k| KINDS[k].persistent)
}

impl Kind {
    /// The variables of a new node of this kind.
    pub fn vars(&self) -> BTreeMap<String, Vec<u8>> {
        let width = (self.body.half_width * 2.0) as f32;
        let size: Vec<u8> = [width, self.body.height as f32, width]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        BTreeMap::from([
            (VAR_CREATURE.to_string(), self.name.as_bytes().to_vec()),
            (VAR_COLOUR.to_string(), self.colour.to_vec()),
            (VAR_SIZE.to_string(), size),
            (VAR_MODEL.to_string(), self.model().into_bytes()),
        ])
    }

    /// The `client_data` name of this kind's model.
    pub fn model(&self) -> String {
        format!("creatures/client_data/models/{}.glb", self.name)
    }

    /// The node a creature of this kind standing at `position` is made
    /// as (saved with its section if the kind is persistent).
    pub fn node_at(&self, position: [f64; 3]) -> CreateNode {
        CreateNode {
            position,
            save_enabled: self.persistent,
            vars: self.vars(),
        }
    }
}

/// The kind (its index in [`KINDS`]) a node's variables name; `None` for
/// a node that is no creature or of a kind this version does not know.
pub fn kind_of(vars: &BTreeMap<String, Vec<u8>>) -> Option<usize> {
    let name = vars.get(VAR_CREATURE)?;
    KINDS
        .iter()
        .position(|k| k.name.as_bytes() == name.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinds_vars_name_it_and_say_how_to_draw_it() {
        for (index, kind) in KINDS.iter().enumerate() {
            let vars = kind.vars();
            assert_eq!(kind_of(&vars), Some(index));
            assert_eq!(vars[VAR_COLOUR].len(), 3);
            let size = &vars[VAR_SIZE];
            assert_eq!(size.len(), 12);
            let height = f32::from_le_bytes([size[4], size[5], size[6], size[7]]);
            assert_eq!(f64::from(height), kind.body.height as f32 as f64);
            assert!(kind.body.half_width < 0.5, "spans at most two voxels");
            // The model it names is in this module's client_data.
            let model = String::from_utf8(vars[VAR_MODEL].clone()).expect("UTF-8");
            let path = model
                .strip_prefix("creatures/")
                .expect("a file of this module");
            let on_disk = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
            assert!(on_disk.is_file(), "{} is missing", on_disk.display());
        }
        assert_eq!(kind_of(&BTreeMap::new()), None);
        let stranger = BTreeMap::from([(VAR_CREATURE.to_string(), b"dragon".to_vec())]);
        assert_eq!(kind_of(&stranger), None);
        assert!(transient().count() > 0 && persistent().count() > 0);
    }
}
