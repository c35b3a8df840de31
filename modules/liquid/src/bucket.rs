//! Buckets: the items `bucket`, `bucket_water` (and `bucket_lava`),
//! registered with `items` (and a recipe for `bucket`, three iron lumps in
//! a V, with `crafting` once the registry knows iron lumps), used through
//! main's `main:voxel_actions`. A `bucket` used on a source (or on a voxel
//! beside one: a client points at solid voxels, so the bed under a lake)
//! takes it; a full bucket used on air or a flowing voxel pours a source
//! there, else into the face neighbour nearest the player's eyes that is
//! air or flowing. Each is one inventory `Transact`: the bucket taken from
//! the wielded slot, the other given, and the edit (`Replace::Exactly` what
//! was read), all or nothing. Which voxel is the pure [`plan`].
//!
//! Owns: the bucket items, their recipe, what a use of one does. Does not
//! own: judging the use (`main`), the transaction (`inventory`).

use buildat_crafting_api::{Recipe, RegisterRecipes};
use buildat_interface::{Host, ModuleError, log};
use buildat_inventory_api::{
    Change, EditVoxel, LIST_MAIN, Overflow, Owner, SlotRef, Transact, Transaction, TxOutcome,
};
use buildat_items_api::{GetItems, ItemDef, ItemStack, RegisterItems};
use buildat_main_api::{BlockAction, BlockActionKind, GetPlayers};
use buildat_voxel::geometry::Pos;
use buildat_voxelworld_api::{GetVoxels, Replace};

use crate::flow::{Cell, Kinds, Liquid};

pub const BUCKET: &str = "bucket";
pub const BUCKET_WATER: &str = "bucket_water";
pub const BUCKET_LAVA: &str = "bucket_lava";
/// The ingredient of a bucket (survival's).
pub const IRON_LUMP: &str = "iron_lump";

/// The bucket items.
pub fn items(lava: bool) -> Vec<ItemDef> {
    let mut items = vec![
        ItemDef::craft(BUCKET, "Empty bucket", "bucket.png").with_groups(&[("tool", 1)]),
        full(ItemDef::craft(
            BUCKET_WATER,
            "Water bucket",
            "bucket_water.png",
        )),
    ];
    if lava {
        items.push(full(ItemDef::craft(
            BUCKET_LAVA,
            "Lava bucket",
            "bucket_lava.png",
        )));
    }
    items
}

/// A full bucket: one to a slot.
fn full(mut def: ItemDef) -> ItemDef {
    def.stack_max = 1;
    def
}

/// Three iron lumps in a V make a bucket.
pub fn recipe() -> Recipe {
    Recipe::shaped(BUCKET, 1, 3, &[IRON_LUMP, "", IRON_LUMP, "", IRON_LUMP, ""])
}

/// What a bucket's use does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// Take the source `seen` at `pos`, giving `gives`.
    Take {
        pos: Pos,
        seen: u32,
        gives: &'static str,
    },
    /// Pour `source` at `pos` over `seen`, giving an empty bucket.
    Pour { pos: Pos, seen: u32, source: u32 },
    /// Nothing to take or no room to pour.
    Nothing,
}

/// The used voxel and its face neighbours, the used one first, then the
/// neighbours nearest `eyes` first.
pub fn candidates(pos: Pos, eyes: [f64; 3]) -> Vec<Pos> {
    let mut faces: Vec<Pos> = [
        [0, 1, 0],
        [0, -1, 0],
        [1, 0, 0],
        [-1, 0, 0],
        [0, 0, 1],
        [0, 0, -1],
    ]
    .iter()
    .map(|d| [pos[0] + d[0], pos[1] + d[1], pos[2] + d[2]])
    .collect();
    let distance = |p: &Pos| {
        (0..3)
            .map(|i| (f64::from(p[i]) + 0.5 - eyes[i]).powi(2))
            .sum::<f64>()
    };
    faces.sort_by(|a, b| distance(a).total_cmp(&distance(b)));
    let mut out = vec![pos];
    out.extend(faces);
    out
}

/// What using `item` does, given the voxels at [`candidates`] (in its
/// order; `None`: not generated).
pub fn plan(kinds: &Kinds, item: &str, at: &[(Pos, Option<u32>)]) -> Plan {
    let pour = |source: Option<u32>| {
        let Some(source) = source else {
            return Plan::Nothing;
        };
        at.iter()
            .find_map(|(pos, voxel)| {
                let seen = (*voxel)?;
                matches!(kinds.cell(Some(seen)), Cell::Air | Cell::Flowing(..)).then_some(
                    Plan::Pour {
                        pos: *pos,
                        seen,
                        source,
                    },
                )
            })
            .unwrap_or(Plan::Nothing)
    };
    match item {
        BUCKET => at
            .iter()
            .find_map(|(pos, voxel)| {
                let seen = (*voxel)?;
                let gives = match kinds.cell(Some(seen)) {
                    Cell::Source(Liquid::Water) => BUCKET_WATER,
                    Cell::Source(Liquid::Lava) => BUCKET_LAVA,
                    _ => return None,
                };
                Some(Plan::Take {
                    pos: *pos,
                    seen,
                    gives,
                })
            })
            .unwrap_or(Plan::Nothing),
        BUCKET_WATER => pour(Some(kinds.water)),
        BUCKET_LAVA => pour(kinds.lava.map(|(source, _)| source)),
        _ => Plan::Nothing,
    }
}

/// The transaction of a use: the bucket out of the wielded slot, the other
/// in, the edit with them.
pub fn transaction(player: &str, wield: u16, item: &str, plan: &Plan) -> Option<Transaction> {
    let (pos, seen, now, gives) = match *plan {
        Plan::Take { pos, seen, gives } => (pos, seen, buildat_voxel::AIR, gives),
        Plan::Pour { pos, seen, source } => (pos, seen, source, BUCKET),
        Plan::Nothing => return None,
    };
    let owner = Owner::Player(player.to_string());
    Some(Transaction {
        changes: vec![
            Change::Take {
                slot: SlotRef {
                    owner: owner.clone(),
                    list: LIST_MAIN.to_string(),
                    index: wield,
                },
                name: item.to_string(),
                count: 1,
            },
            Change::Give {
                owner,
                list: LIST_MAIN.to_string(),
                stack: ItemStack::new(gives, 1),
                overflow: Overflow::DropAt(pos.map(|v| f64::from(v) + 0.5)),
            },
        ],
        edit: Some(EditVoxel {
            pos,
            voxel: now,
            replace: Replace::Exactly(seen),
            save: true,
            by: Some(player.to_string()),
        }),
        by: Some(player.to_string()),
    })
}

fn is_bucket(name: &str) -> bool {
    [BUCKET, BUCKET_WATER, BUCKET_LAVA].contains(&name)
}

/// What is registered where.
#[derive(Debug, Default)]
pub struct Buckets {
    pub lava: bool,
    items_done: bool,
    recipe_done: bool,
}

impl Buckets {
    /// Registers the items and the recipe (again), as far as the modules
    /// are there.
    pub fn register(&mut self, host: &Host) {
        self.items_done = false;
        self.recipe_done = false;
        self.try_register(host);
    }

    fn try_register(&mut self, host: &Host) {
        if !self.items_done {
            match host.call(&RegisterItems {
                items: items(self.lava),
            }) {
                Ok(()) => self.items_done = true,
                Err(error) => {
                    log::info!("no buckets until the items module answers: {error}");
                    return;
                }
            }
        }
        if !self.recipe_done {
            let Ok(registry) = host.call(&GetItems {}) else {
                return;
            };
            let recipe = recipe();
            if let Err(error) = recipe.check(&registry) {
                log::debug!("no bucket recipe yet: {error}");
                return;
            }
            match host.call(&RegisterRecipes {
                recipes: vec![recipe],
            }) {
                Ok(()) => self.recipe_done = true,
                Err(error) => log::info!("no bucket recipe until crafting answers: {error}"),
            }
        }
    }

    /// The item registry changed: iron lumps may be known now.
    pub fn items_changed(&mut self, host: &Host) {
        if !(self.items_done && self.recipe_done) {
            self.try_register(host);
        }
    }

    /// `items` or `crafting` (re)loaded: register with it again.
    pub fn module_loaded(&mut self, host: &Host, module: &str) {
        match module {
            buildat_items_api::MODULE => self.register(host),
            buildat_crafting_api::MODULE => {
                self.recipe_done = false;
                self.try_register(host);
            }
            _ => {}
        }
    }

    /// The uses of buckets among a tick's voxel actions: each one
    /// transaction.
    pub fn used(
        &mut self,
        host: &Host,
        kinds: &Kinds,
        actions: Vec<BlockAction>,
    ) -> Result<(), ModuleError> {
        let uses: Vec<BlockAction> = actions
            .into_iter()
            .filter(|a| a.kind == BlockActionKind::Use)
            .filter(|a| a.item.as_ref().is_some_and(|item| is_bucket(&item.name)))
            .collect();
        if uses.is_empty() {
            return Ok(());
        }
        let players = host.call(&GetPlayers {})?;
        for action in uses {
            let (Some(item), Some(player)) = (
                action.item.as_ref(),
                players.iter().find(|p| p.name == action.player),
            ) else {
                continue;
            };
            let [x, y, z] = player.position;
            let around = candidates(action.pos, [x, y + 1.6, z]);
            let mut voxels = host.call(&GetVoxels {
                positions: around[1..].to_vec(),
            })?;
            // The used voxel as main judged it.
            voxels.insert(0, Some(action.voxel));
            let at: Vec<(Pos, Option<u32>)> = around.into_iter().zip(voxels).collect();
            let plan = plan(kinds, &item.name, &at);
            let Some(tx) = transaction(&player.name, player.wield, &item.name, &plan) else {
                continue;
            };
            match host.call(&Transact { tx })? {
                TxOutcome::Done => log::debug!("{} used {} ({plan:?})", player.name, item.name),
                TxOutcome::Refused(why) => {
                    log::info!("{}'s {} use refused: {why}", player.name, item.name)
                }
            }
        }
        Ok(())
    }
}
