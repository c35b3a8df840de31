//! `buildat-items-api`: the `items` module's public API: item definitions
//! ([`ItemDef`]), tool capabilities and how long a dig takes
//! ([`ToolCaps`], [`hand_caps`], [`dig_params_with`]), what a dig gives
//! ([`roll_drops`]), the registry every module reads ([`ItemRegistry`]),
//! its calls ([`RegisterItems`], [`GetItems`]) and its event
//! ([`ItemsChanged`]). Re-exports item stacks and the `items:defs` packet
//! from `buildat-items-protocol`, which the client links without this
//! crate.
//!
//! Owns: the meaning of groups, ratings and levels (Luanti's), the dig
//! time and wear formulas, the drop roll; all pure and deterministic.
//! Does not own: the registry's contents (the `items` module and whoever
//! registers), inventories (`inventory`), when a dig happens (`main`).

pub use buildat_items_protocol::*;

use std::collections::BTreeMap;

use buildat_interface::Event;
use serde::{Deserialize, Serialize};

/// The items module's name.
pub const MODULE: &str = "items";

/// What an item does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum ItemKind {
    /// Places a voxel of this name (every block of the voxel registry is an
    /// item: its name is the block's name).
    Block { voxel: String },
    /// Digs faster (and wears).
    Tool(ToolCaps),
    /// Anything else: an ingredient, a lump, a stick.
    Craft,
}

/// One item's definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ItemDef {
    pub name: String,
    pub description: String,
    /// The icon: a file of some module's `client_data` (`"pick_wood.png"`);
    /// "" for a block: drawn from its voxel's textures.
    pub texture: String,
    /// Tools 1, default [`DEFAULT_STACK_MAX`].
    pub stack_max: u16,
    /// Groups with ratings, Luanti's meaning: dig groups `cracky`, `choppy`,
    /// `crumbly`, `snappy`, `oddly_breakable_by_hand` (rating 1 hardest ..
    /// 3 easiest), `level` (0 default: a tool's `max_level` must be at
    /// least this), and any other (`wood`, `stone`: used by recipes as
    /// `group:wood`). A rating of 0 or less is not in the group.
    pub groups: BTreeMap<String, i32>,
    pub kind: ItemKind,
    /// Blocks: what digging gives; empty = the block item itself, count 1.
    pub drops: Vec<DropRule>,
    /// The module that defined it ("items" for the automatic block items).
    pub module: String,
}

impl ItemDef {
    /// A block item placing `voxel`, named as it, described from its name.
    pub fn block(voxel: &str) -> Self {
        Self {
            name: voxel.to_string(),
            description: describe(voxel),
            texture: String::new(),
            stack_max: DEFAULT_STACK_MAX,
            groups: BTreeMap::new(),
            kind: ItemKind::Block {
                voxel: voxel.to_string(),
            },
            drops: Vec::new(),
            module: MODULE.to_string(),
        }
    }

    /// A tool (a stack of 1).
    pub fn tool(name: &str, description: &str, texture: &str, caps: ToolCaps) -> Self {
        Self {
            name: name.to_string(),
            description: description.to_string(),
            texture: texture.to_string(),
            stack_max: 1,
            groups: BTreeMap::new(),
            kind: ItemKind::Tool(caps),
            drops: Vec::new(),
            module: String::new(),
        }
    }

    /// A craft item.
    pub fn craft(name: &str, description: &str, texture: &str) -> Self {
        Self {
            name: name.to_string(),
            description: description.to_string(),
            texture: texture.to_string(),
            stack_max: DEFAULT_STACK_MAX,
            groups: BTreeMap::new(),
            kind: ItemKind::Craft,
            drops: Vec::new(),
            module: String::new(),
        }
    }

    /// The same definition in `groups` (`[("cracky", 3)]`).
    pub fn with_groups(mut self, groups: &[(&str, i32)]) -> Self {
        self.groups
            .extend(groups.iter().map(|(g, r)| (g.to_string(), *r)));
        self
    }

    /// The same definition dropping `rules` when dug.
    pub fn with_drops(mut self, rules: Vec<DropRule>) -> Self {
        self.drops = rules;
        self
    }

    /// A group's rating, 0 when not in it.
    pub fn group(&self, group: &str) -> i32 {
        self.groups.get(group).copied().unwrap_or(0)
    }

    /// The tool capabilities, for a tool.
    pub fn tool_caps(&self) -> Option<&ToolCaps> {
        match &self.kind {
            ItemKind::Tool(caps) => Some(caps),
            _ => None,
        }
    }

    /// The voxel a block item places.
    pub fn voxel(&self) -> Option<&str> {
        match &self.kind {
            ItemKind::Block { voxel } => Some(voxel),
            _ => None,
        }
    }

    /// Checks the bounds of a definition (not whether a block's voxel is
    /// registered: the registry knows): the name, description and texture
    /// lengths, a stack size of at least 1 (exactly 1 for a tool), drops
    /// that are valid stacks with a rarity of at least 1, finite dig times.
    pub fn check(&self) -> Result<(), ItemError> {
        check_item_name(&self.name)?;
        let bad = |why: String| {
            Err(ItemError::BadDef {
                name: self.name.clone(),
                why,
            })
        };
        if self.description.len() > MAX_DESCRIPTION {
            return bad(format!("a description is at most {MAX_DESCRIPTION} bytes"));
        }
        if self.texture.len() > MAX_TEXTURE_NAME {
            return bad(format!(
                "a texture name is at most {MAX_TEXTURE_NAME} bytes"
            ));
        }
        if self.stack_max == 0 {
            return bad("stack_max is at least 1".into());
        }
        if self
            .groups
            .keys()
            .any(|g| g.is_empty() || g.len() > MAX_ITEM_NAME)
        {
            return bad(format!("a group name is 1 to {MAX_ITEM_NAME} bytes"));
        }
        match &self.kind {
            ItemKind::Block { voxel } if voxel.is_empty() => {
                return bad("a block item names its voxel".into());
            }
            ItemKind::Tool(caps) => {
                if self.stack_max != 1 {
                    return bad("a tool's stack_max is 1".into());
                }
                for (group, cap) in &caps.groups {
                    if cap.times.iter().any(|t| t.is_nan() || t.is_infinite()) {
                        return bad(format!("the dig times of {group} are finite"));
                    }
                }
            }
            _ => {}
        }
        for rule in &self.drops {
            if rule.rarity == 0 {
                return bad("a drop's rarity is at least 1".into());
            }
            for stack in &rule.items {
                stack.check()?;
            }
        }
        Ok(())
    }

    /// What a client is told of it (`items:defs`).
    pub fn wire(&self) -> WireItem {
        let (kind, voxel) = match &self.kind {
            ItemKind::Block { voxel } => (WireKind::Block, voxel.clone()),
            ItemKind::Tool(_) => (WireKind::Tool, String::new()),
            ItemKind::Craft => (WireKind::Craft, String::new()),
        };
        WireItem {
            name: self.name.clone(),
            description: self.description.clone(),
            texture: self.texture.clone(),
            stack_max: self.stack_max,
            kind,
            voxel,
        }
    }
}

/// A name's description: `_` as spaces, the first letter upper case
/// (`coal_ore` → `Coal ore`).
pub fn describe(name: &str) -> String {
    let spaced = name.replace('_', " ");
    let mut chars = spaced.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// One possible drop: `items` with chance 1 in `rarity` (1 = always).
/// Luanti's drop table simplified: every rule is rolled independently.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DropRule {
    pub items: Vec<ItemStack>,
    pub rarity: u32,
}

impl DropRule {
    /// Always `count` of `name`.
    pub fn always(name: &str, count: u16) -> Self {
        Self {
            items: vec![ItemStack::new(name, count)],
            rarity: 1,
        }
    }
}

/// What a tool digs, per dig group.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolCaps {
    pub groups: BTreeMap<String, GroupCap>,
}

impl ToolCaps {
    /// The same caps also digging `group`.
    pub fn with(mut self, group: &str, cap: GroupCap) -> Self {
        self.groups.insert(group.to_string(), cap);
        self
    }
}

/// How fast and how long a tool digs one group.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroupCap {
    /// Seconds to dig a voxel of rating 1, 2, 3 (index rating − 1); a
    /// negative time, or a rating past the end, cannot be dug by this cap.
    pub times: Vec<f32>,
    /// Digs before the tool breaks (0 = never wears).
    pub uses: u32,
    /// The highest `level` group this cap digs.
    pub max_level: i32,
}

impl GroupCap {
    /// Digs ratings 1, 2, 3 in `times` seconds (negative: cannot).
    pub fn new(times: &[f32], uses: u32, max_level: i32) -> Self {
        Self {
            times: times.to_vec(),
            uses,
            max_level,
        }
    }
}

/// The hand (an empty wielded slot, or an item that is not a tool): digs
/// crumbly (dirt 0.7 s), snappy (leaves 0.4 s), choppy slowly (wood 3 s)
/// and oddly_breakable_by_hand; never cracky (stone). Never wears.
pub fn hand_caps() -> ToolCaps {
    ToolCaps::default()
        .with("crumbly", GroupCap::new(&[-1.0, 3.0, 0.7], 0, 0))
        .with("snappy", GroupCap::new(&[-1.0, -1.0, 0.4], 0, 0))
        .with("choppy", GroupCap::new(&[-1.0, 3.0, 2.0], 0, 0))
        .with(
            "oddly_breakable_by_hand",
            GroupCap::new(&[3.5, 2.0, 0.7], 0, 0),
        )
}

/// How long a dig takes and the wear it adds to the tool.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DigParams {
    pub seconds: f32,
    pub wear: u16,
}

/// The wear one dig adds with `uses` digs before breaking: `WEAR_MAX /
/// uses` rounded up (Luanti's), 0 when `uses` is 0.
pub fn wear_per_use(uses: u32) -> u16 {
    if uses == 0 {
        return 0;
    }
    let wear = u32::from(WEAR_MAX).div_ceil(uses);
    u16::try_from(wear).unwrap_or(WEAR_MAX)
}

/// How long digging a voxel in `groups` takes with `caps`, and the wear it
/// adds; `None` when it cannot be dug that way (no cap for any of its dig
/// groups at its rating, or its `level` above the cap's `max_level`). The
/// fastest matching group cap wins.
pub fn dig_params(groups: &BTreeMap<String, i32>, caps: &ToolCaps) -> Option<DigParams> {
    let level = groups.get("level").copied().unwrap_or(0);
    caps.groups
        .iter()
        .filter(|(_, cap)| cap.max_level >= level)
        .filter_map(|(group, cap)| {
            let rating = *groups.get(group)?;
            let index = usize::try_from(rating.checked_sub(1)?).ok()?;
            let seconds = *cap.times.get(index)?;
            (seconds >= 0.0 && seconds.is_finite()).then_some(DigParams {
                seconds,
                wear: wear_per_use(cap.uses),
            })
        })
        .min_by(|a, b| a.seconds.total_cmp(&b.seconds))
}

/// Digging with a tool: its caps when they can dig it, else the hand's
/// (no wear then). `None`: neither can.
pub fn dig_params_with(
    groups: &BTreeMap<String, i32>,
    tool: Option<&ToolCaps>,
) -> Option<DigParams> {
    tool.and_then(|caps| dig_params(groups, caps))
        .or_else(|| dig_params(groups, &hand_caps()))
}

/// A well-mixed 64-bit value of `roll` and `index` (splitmix64).
fn mix(roll: u64, index: u64) -> u64 {
    let mut z = roll.wrapping_add(index.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// What a dig gives: each rule rolled with the random `roll` (any u64; the
/// same roll gives the same drops, so tests are deterministic), or the item
/// itself, count 1, when `drops` is empty.
pub fn roll_drops(def: &ItemDef, roll: u64) -> Vec<ItemStack> {
    if def.drops.is_empty() {
        return vec![ItemStack::new(def.name.clone(), 1)];
    }
    let mut out: Vec<ItemStack> = Vec::new();
    for (index, rule) in def.drops.iter().enumerate() {
        let hit =
            rule.rarity <= 1 || mix(roll, index as u64).is_multiple_of(u64::from(rule.rarity));
        if !hit {
            continue;
        }
        for stack in &rule.items {
            match out.iter_mut().find(|s| s.stacks_with(stack)) {
                Some(same) => same.count = same.count.saturating_add(stack.count),
                None => out.push(stack.clone()),
            }
        }
    }
    out
}

/// The registry every module reads ([`GetItems`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemRegistry {
    /// Grows with every change.
    pub version: u64,
    pub items: BTreeMap<String, ItemDef>,
}

impl ItemRegistry {
    pub fn get(&self, name: &str) -> Option<&ItemDef> {
        self.items.get(name)
    }

    /// The block item of a voxel: by its block's name (a canonical voxel
    /// name's part before `@`: every segment and rotation of a block is the
    /// same item), of kind Block.
    pub fn get_block(&self, voxel: &str) -> Option<&ItemDef> {
        let block = voxel.split_once('@').map_or(voxel, |(block, _)| block);
        match self.items.get(block) {
            Some(def) if def.voxel() == Some(block) => Some(def),
            _ => self.items.values().find(|def| def.voxel() == Some(block)),
        }
    }

    /// How many of `name` fit in one slot; [`DEFAULT_STACK_MAX`] for an
    /// unknown item.
    pub fn stack_max(&self, name: &str) -> u16 {
        self.get(name)
            .map_or(DEFAULT_STACK_MAX, |def| def.stack_max)
    }

    /// Whether item `name` is in `group` (a rating above 0).
    pub fn in_group(&self, name: &str, group: &str) -> bool {
        self.get(name).is_some_and(|def| def.group(group) > 0)
    }

    /// The tool capabilities of item `name`, when it is a tool.
    pub fn tool_caps(&self, name: &str) -> Option<&ToolCaps> {
        self.get(name).and_then(ItemDef::tool_caps)
    }

    /// How long digging `voxel` takes wielding `item` (none: the hand);
    /// `None` when it cannot be dug so or has no block item.
    pub fn dig_params(&self, voxel: &str, item: Option<&str>) -> Option<DigParams> {
        let block = self.get_block(voxel)?;
        dig_params_with(&block.groups, item.and_then(|name| self.tool_caps(name)))
    }

    /// Checks a stack against the registry: a valid stack of a known item,
    /// at most its stack size.
    pub fn check_stack(&self, stack: &ItemStack) -> Result<(), ItemError> {
        stack.check()?;
        let def = self.get(&stack.name).ok_or_else(|| ItemError::Unknown {
            name: stack.name.clone(),
        })?;
        if stack.count > def.stack_max {
            return Err(ItemError::BadDef {
                name: stack.name.clone(),
                why: format!(
                    "a stack holds at most {}, not {}",
                    def.stack_max, stack.count
                ),
            });
        }
        Ok(())
    }

    /// The `items:defs` packet of every item.
    pub fn defs_packet(&self) -> ItemDefs {
        ItemDefs {
            version: self.version,
            items: self.items.values().map(ItemDef::wire).collect(),
        }
    }
}

/// Call `register_items`: adds or replaces item definitions. A definition
/// for an existing block item (the same name, kind Block) refines it
/// (groups, drops, description, texture, stack size). Bad definitions
/// (bounds, a Block of an unregistered voxel) refuse the whole call, naming
/// why; nothing is registered then.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RegisterItems {
    pub items: Vec<ItemDef>,
}

/// Call `get_items`: the whole registry.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GetItems {}

buildat_interface::calls! {
    module MODULE;
    RegisterItems = "register_items" -> ();
    GetItems = "get_items" -> ItemRegistry;
}

/// `items:changed`: the registry changed (a registration, or the voxel
/// registry grew): readers refresh with [`GetItems`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ItemsChanged {
    pub version: u64,
}
impl Event for ItemsChanged {
    const NAME: &'static str = "items:changed";
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(list: &[(&str, i32)]) -> BTreeMap<String, i32> {
        list.iter().map(|(g, r)| (g.to_string(), *r)).collect()
    }

    fn pick_wood() -> ToolCaps {
        ToolCaps::default().with("cracky", GroupCap::new(&[-1.0, -1.0, 1.5], 10, 0))
    }

    #[test]
    fn the_hand_digs_dirt_leaves_and_wood_but_not_stone() {
        let hand = hand_caps();
        let dirt = dig_params(&groups(&[("crumbly", 3)]), &hand).unwrap();
        assert_eq!((dirt.seconds, dirt.wear), (0.7, 0));
        assert_eq!(
            dig_params(&groups(&[("choppy", 2), ("wood", 1)]), &hand).map(|p| p.seconds),
            Some(3.0)
        );
        assert!(dig_params(&groups(&[("snappy", 3)]), &hand).is_some());
        assert!(dig_params(&groups(&[("cracky", 3)]), &hand).is_none());
        assert!(dig_params(&groups(&[("crumbly", 1)]), &hand).is_none());
        assert!(dig_params(&groups(&[]), &hand).is_none());
        assert!(dig_params(&groups(&[("wood", 1)]), &hand).is_none());
    }

    #[test]
    fn the_fastest_cap_wins_and_levels_limit_a_tool() {
        let caps = ToolCaps::default()
            .with("cracky", GroupCap::new(&[4.0, 1.6, 0.8], 20, 1))
            .with("crumbly", GroupCap::new(&[1.0, 0.5, 0.3], 0, 1));
        let both = groups(&[("cracky", 3), ("crumbly", 3)]);
        let fast = dig_params(&both, &caps).unwrap();
        assert_eq!((fast.seconds, fast.wear), (0.3, 0));
        let ore = groups(&[("cracky", 2), ("level", 1)]);
        assert_eq!(dig_params(&ore, &caps).map(|p| p.seconds), Some(1.6));
        let deep = groups(&[("cracky", 2), ("level", 2)]);
        assert!(dig_params(&deep, &caps).is_none());
        // Ratings past the end and ratings of 0 or less are not dug.
        assert!(dig_params(&groups(&[("cracky", 4)]), &caps).is_none());
        assert!(dig_params(&groups(&[("cracky", 0)]), &caps).is_none());
        assert!(dig_params(&groups(&[("cracky", -3)]), &caps).is_none());
    }

    #[test]
    fn wear_is_wear_max_over_uses_rounded_up() {
        assert_eq!(wear_per_use(0), 0);
        assert_eq!(wear_per_use(1), WEAR_MAX);
        assert_eq!(wear_per_use(10), 6554);
        assert_eq!(wear_per_use(65535), 1);
        assert_eq!(wear_per_use(u32::MAX), 1);
        let stone = groups(&[("cracky", 3)]);
        assert_eq!(dig_params(&stone, &pick_wood()).unwrap().wear, 6554);
    }

    #[test]
    fn a_tool_that_cannot_dig_falls_back_to_the_hand() {
        let wood = groups(&[("choppy", 2)]);
        let with_pick = dig_params_with(&wood, Some(&pick_wood())).unwrap();
        assert_eq!((with_pick.seconds, with_pick.wear), (3.0, 0));
        let stone = groups(&[("cracky", 3)]);
        assert_eq!(
            dig_params_with(&stone, Some(&pick_wood())).map(|p| p.seconds),
            Some(1.5)
        );
        assert!(dig_params_with(&stone, None).is_none());
    }

    #[test]
    fn drops_are_the_block_itself_or_rolled_rules() {
        let plain = ItemDef::block("dirt");
        assert_eq!(roll_drops(&plain, 7), vec![ItemStack::new("dirt", 1)]);
        let stone = ItemDef::block("stone").with_drops(vec![DropRule::always("cobblestone", 1)]);
        assert_eq!(
            roll_drops(&stone, 99),
            vec![ItemStack::new("cobblestone", 1)]
        );
        let leaves = ItemDef::block("leaves").with_drops(vec![
            DropRule::always("leaves", 1),
            DropRule {
                items: vec![ItemStack::new("sapling", 1)],
                rarity: 20,
            },
        ]);
        let rolls: Vec<Vec<ItemStack>> = (0..2000).map(|r| roll_drops(&leaves, r)).collect();
        assert_eq!(
            rolls,
            (0..2000)
                .map(|r| roll_drops(&leaves, r))
                .collect::<Vec<_>>()
        );
        let saplings = rolls.iter().filter(|d| d.len() == 2).count();
        assert!(
            (50..=160).contains(&saplings),
            "{saplings} saplings in 2000"
        );
        assert!(rolls.iter().all(|d| d[0] == ItemStack::new("leaves", 1)));
        let twice = ItemDef::block("x").with_drops(vec![
            DropRule::always("lump", 1),
            DropRule::always("lump", 2),
        ]);
        assert_eq!(roll_drops(&twice, 0), vec![ItemStack::new("lump", 3)]);
    }

    #[test]
    fn definitions_are_checked() {
        assert!(ItemDef::block("stone").check().is_ok());
        assert!(
            ItemDef::tool("pick", "Pick", "pick.png", pick_wood())
                .check()
                .is_ok()
        );
        let mut tool = ItemDef::tool("pick", "Pick", "pick.png", pick_wood());
        tool.stack_max = 5;
        assert!(tool.check().is_err());
        let nan = ToolCaps::default().with("cracky", GroupCap::new(&[f32::NAN], 1, 0));
        assert!(ItemDef::tool("pick", "", "", nan).check().is_err());
        let mut zero = ItemDef::craft("stick", "Stick", "stick.png");
        zero.stack_max = 0;
        assert!(zero.check().is_err());
        let never = ItemDef::block("x").with_drops(vec![DropRule {
            items: vec![ItemStack::new("x", 1)],
            rarity: 0,
        }]);
        assert!(never.check().is_err());
        let empty = ItemDef::block("x").with_drops(vec![DropRule::always("x", 0)]);
        assert!(empty.check().is_err());
        assert!(ItemDef::block("Stone").check().is_err());
        let mut long = ItemDef::craft("x", "", "");
        long.description = "d".repeat(MAX_DESCRIPTION + 1);
        assert!(long.check().is_err());
    }

    #[test]
    fn the_registry_answers_by_name_voxel_and_group() {
        let mut registry = ItemRegistry::default();
        for def in [
            ItemDef::block("wood").with_groups(&[("choppy", 2), ("wood", 1)]),
            ItemDef::block("stairs"),
            ItemDef::tool("pick_wood", "Wooden pickaxe", "pick_wood.png", pick_wood()),
        ] {
            registry.items.insert(def.name.clone(), def);
        }
        assert_eq!(registry.get_block("wood").unwrap().name, "wood");
        assert_eq!(
            registry.get_block("stairs@0,0,0/1,2").unwrap().name,
            "stairs"
        );
        assert!(registry.get_block("pick_wood").is_none());
        assert!(registry.get_block("nothing").is_none());
        assert_eq!(registry.stack_max("pick_wood"), 1);
        assert_eq!(registry.stack_max("wood"), 99);
        assert_eq!(registry.stack_max("unknown_thing"), DEFAULT_STACK_MAX);
        assert!(registry.in_group("wood", "wood"));
        assert!(!registry.in_group("stairs", "wood"));
        assert!(!registry.in_group("nothing", "wood"));
        assert_eq!(
            registry.dig_params("wood", None).map(|p| p.seconds),
            Some(3.0)
        );
        assert!(
            registry
                .check_stack(&ItemStack::new("pick_wood", 1))
                .is_ok()
        );
        assert!(
            registry
                .check_stack(&ItemStack::new("pick_wood", 2))
                .is_err()
        );
        assert!(registry.check_stack(&ItemStack::new("nothing", 1)).is_err());
        let defs = registry.defs_packet();
        assert_eq!(defs.items.len(), 3);
        assert_eq!(defs.items[0].kind, WireKind::Tool);
        assert_eq!(defs.items[1].voxel, "stairs");
    }

    #[test]
    fn descriptions_come_from_names() {
        assert_eq!(describe("coal_ore"), "Coal ore");
        assert_eq!(describe(""), "");
        assert_eq!(
            ItemDef::block("crafting_table").description,
            "Crafting table"
        );
    }
}
