//! The flow rules: what one voxel becomes, from itself and a small
//! neighbourhood around it ([`next`]), as Luanti's classic liquids: a
//! source never changes by flow; a voxel under a liquid becomes flowing at
//! [`MAX_LEVEL`] (a fall); beside a source, [`MAX_LEVEL`]; beside a flowing
//! voxel that rests on something (a solid voxel or a source below it), that
//! level less the liquid's drop (water 1, lava 2); fed by nothing, a
//! flowing voxel dries to air; solid voxels and anything else that is
//! neither air nor a flowing liquid stop it. Lava meeting water cools to
//! stone. Pure: no world, no host.
//!
//! Owns: the rules and the voxel ↔ [`Cell`] mapping ([`Kinds`]). Does not
//! own: which voxels are looked at when (`queue.rs`), reading and writing
//! the world (`lib.rs`).

use buildat_liquid_api::MAX_LEVEL;
use buildat_voxel::VoxelInstance;
use buildat_voxel::geometry::Pos;

/// A liquid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liquid {
    Water,
    Lava,
}

impl Liquid {
    /// Levels lost for each voxel flowed sideways.
    pub fn drop(self) -> u8 {
        match self {
            Liquid::Water => 1,
            Liquid::Lava => 2,
        }
    }
}

/// A voxel as the flow sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cell {
    /// Empty: liquid may flow in.
    Air,
    Source(Liquid),
    /// A flowing liquid at level 1..=[`MAX_LEVEL`].
    Flowing(Liquid, u8),
    /// Anything else (solid or not), or not generated: stops the flow.
    Block,
}

impl Cell {
    fn liquid(self) -> Option<Liquid> {
        match self {
            Cell::Source(l) | Cell::Flowing(l, _) => Some(l),
            _ => None,
        }
    }

    fn is(self, liquid: Liquid) -> bool {
        self.liquid() == Some(liquid)
    }
}

/// The voxel type ids of the liquids in this world's registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Kinds {
    pub water: u32,
    pub water_flowing: u32,
    /// `None`: lava is off.
    pub lava: Option<(u32, u32)>,
    /// What lava meeting water becomes (stone), if the world has it.
    pub cooled: Option<u32>,
}

impl Kinds {
    /// The cell of a voxel (`None`: not generated, a stop).
    pub fn cell(&self, voxel: Option<u32>) -> Cell {
        let Some(voxel) = voxel else {
            return Cell::Block;
        };
        let instance = VoxelInstance(voxel);
        let id = instance.type_id();
        let level = instance.game_bits().clamp(1, MAX_LEVEL);
        if id == buildat_voxel::AIR {
            Cell::Air
        } else if id == self.water {
            Cell::Source(Liquid::Water)
        } else if id == self.water_flowing {
            Cell::Flowing(Liquid::Water, level)
        } else if self.lava.is_some_and(|(source, _)| id == source) {
            Cell::Source(Liquid::Lava)
        } else if self.lava.is_some_and(|(_, flowing)| id == flowing) {
            Cell::Flowing(Liquid::Lava, level)
        } else {
            Cell::Block
        }
    }

    /// The voxel a cell is written as (`None` for [`Cell::Block`]: never
    /// written).
    pub fn voxel(&self, cell: Cell) -> Option<u32> {
        match cell {
            Cell::Air => Some(buildat_voxel::AIR),
            Cell::Source(Liquid::Water) => Some(self.water),
            Cell::Flowing(Liquid::Water, level) => {
                Some(VoxelInstance::new(self.water_flowing, level).0)
            }
            Cell::Source(Liquid::Lava) => self.lava.map(|(source, _)| source),
            Cell::Flowing(Liquid::Lava, level) => self
                .lava
                .map(|(_, flowing)| VoxelInstance::new(flowing, level).0),
            Cell::Block => None,
        }
    }

    /// Whether a voxel is a liquid (source or flowing).
    pub fn is_liquid(&self, voxel: u32) -> bool {
        self.cell(Some(voxel)).liquid().is_some()
    }

    /// Whether a voxel is a source.
    pub fn is_source(&self, voxel: u32) -> bool {
        matches!(self.cell(Some(voxel)), Cell::Source(_))
    }
}

/// The four horizontal directions.
pub const SIDES: [Pos; 4] = [[1, 0, 0], [-1, 0, 0], [0, 0, 1], [0, 0, -1]];

fn add(a: Pos, b: Pos) -> Pos {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}

/// The positions [`next`] reads for `pos`, in [`Around::from_cells`]'s
/// order: itself, above, below, the four sides, the four voxels below the
/// sides.
pub fn neighbourhood(pos: Pos) -> [Pos; 11] {
    let mut out = [pos; 11];
    out[1] = add(pos, [0, 1, 0]);
    out[2] = add(pos, [0, -1, 0]);
    for (i, side) in SIDES.iter().enumerate() {
        out[3 + i] = add(pos, *side);
        out[7 + i] = add(add(pos, *side), [0, -1, 0]);
    }
    out
}

/// The positions whose [`next`] may change when the voxel at `pos`
/// changes (those whose neighbourhood holds `pos`), `pos` itself first.
pub fn affected(pos: Pos) -> [Pos; 11] {
    let mut out = [pos; 11];
    out[1] = add(pos, [0, -1, 0]);
    out[2] = add(pos, [0, 1, 0]);
    for (i, side) in SIDES.iter().enumerate() {
        out[3 + i] = add(pos, *side);
        out[7 + i] = add(add(pos, *side), [0, 1, 0]);
    }
    out
}

/// A voxel and what [`next`] looks at around it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Around {
    pub center: Cell,
    pub above: Cell,
    pub below: Cell,
    pub sides: [Cell; 4],
    /// The voxel below each side, in [`SIDES`]' order.
    pub below_sides: [Cell; 4],
}

impl Around {
    /// From the cells of [`neighbourhood`], in its order.
    pub fn from_cells(cells: [Cell; 11]) -> Self {
        Self {
            center: cells[0],
            above: cells[1],
            below: cells[2],
            sides: [cells[3], cells[4], cells[5], cells[6]],
            below_sides: [cells[7], cells[8], cells[9], cells[10]],
        }
    }

    /// A voxel surrounded by `fill` (tests).
    pub fn all(center: Cell, fill: Cell) -> Self {
        Self {
            center,
            above: fill,
            below: fill,
            sides: [fill; 4],
            below_sides: [fill; 4],
        }
    }

    fn faces(&self) -> impl Iterator<Item = Cell> + '_ {
        [self.above, self.below].into_iter().chain(self.sides)
    }
}

/// What a voxel becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// Stays as it is.
    Keep,
    /// Becomes this.
    Set(Cell),
    /// Lava met water: becomes stone.
    Cool,
}

/// The level `liquid` feeds the voxel with (0: none): a fall gives
/// [`MAX_LEVEL`], a source beside it [`MAX_LEVEL`], a flowing voxel beside
/// it resting on a block or a source its level less the drop.
fn fed(around: &Around, liquid: Liquid) -> u8 {
    if around.above.is(liquid) {
        return MAX_LEVEL;
    }
    let mut best = 0;
    for (side, below) in around.sides.iter().zip(around.below_sides) {
        let level = match *side {
            Cell::Source(l) if l == liquid => MAX_LEVEL,
            Cell::Flowing(l, level) if l == liquid => {
                let rests = matches!(below, Cell::Block | Cell::Source(_));
                if rests {
                    level.saturating_sub(liquid.drop())
                } else {
                    0
                }
            }
            _ => 0,
        };
        best = best.max(level);
    }
    best
}

/// What the voxel at the centre of `around` becomes.
pub fn next(around: &Around) -> Next {
    let touches_water = || around.faces().any(|c| c.is(Liquid::Water));
    match around.center {
        Cell::Block => Next::Keep,
        Cell::Source(Liquid::Lava) if touches_water() => Next::Cool,
        Cell::Source(_) => Next::Keep,
        Cell::Flowing(Liquid::Lava, _) if touches_water() => Next::Cool,
        Cell::Air | Cell::Flowing(..) => {
            let water = fed(around, Liquid::Water);
            let lava = fed(around, Liquid::Lava);
            let now = if water > 0 && lava > 0 {
                return Next::Cool;
            } else if water > 0 {
                Cell::Flowing(Liquid::Water, water)
            } else if lava > 0 {
                Cell::Flowing(Liquid::Lava, lava)
            } else {
                Cell::Air
            };
            if now == around.center {
                Next::Keep
            } else {
                Next::Set(now)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const W: Cell = Cell::Source(Liquid::Water);
    const A: Cell = Cell::Air;
    const B: Cell = Cell::Block;

    fn flowing(level: u8) -> Cell {
        Cell::Flowing(Liquid::Water, level)
    }

    #[test]
    fn a_source_beside_air_on_ground_feeds_it_level_seven() {
        let mut around = Around::all(A, B);
        around.above = A;
        around.sides[0] = W;
        assert_eq!(next(&around), Next::Set(flowing(7)));
    }

    #[test]
    fn a_fall_makes_level_seven_below_whatever_feeds_it() {
        let mut around = Around::all(A, A);
        around.above = flowing(2);
        assert_eq!(next(&around), Next::Set(flowing(7)));
        around.above = W;
        assert_eq!(next(&around), Next::Set(flowing(7)));
    }

    #[test]
    fn flowing_water_spreads_sideways_only_where_it_rests() {
        let mut around = Around::all(A, B);
        around.above = A;
        around.sides[2] = flowing(5);
        assert_eq!(next(&around), Next::Set(flowing(4)));
        // Over a hole it falls instead of spreading.
        around.below_sides[2] = A;
        assert_eq!(next(&around), Next::Keep);
        // On a lake's surface it spreads.
        around.below_sides[2] = W;
        assert_eq!(next(&around), Next::Set(flowing(4)));
        // Level 1 reaches no further.
        around.sides[2] = flowing(1);
        assert_eq!(next(&around), Next::Keep);
    }

    #[test]
    fn flowing_water_not_fed_dries_and_sources_and_blocks_never_change() {
        let mut around = Around::all(flowing(7), B);
        around.above = A;
        assert_eq!(next(&around), Next::Set(A));
        around.sides[1] = flowing(7);
        assert_eq!(next(&around), Next::Set(flowing(6)));
        assert_eq!(next(&Around::all(W, A)), Next::Keep);
        assert_eq!(next(&Around::all(B, W)), Next::Keep);
        // The best feed wins.
        around.sides[3] = W;
        assert_eq!(next(&around), Next::Keep);
    }

    #[test]
    fn lava_drops_two_a_step_and_cools_where_it_meets_water() {
        let lava = |level| Cell::Flowing(Liquid::Lava, level);
        let mut around = Around::all(A, B);
        around.above = A;
        around.sides[0] = lava(7);
        assert_eq!(next(&around), Next::Set(lava(5)));
        around.sides[1] = flowing(3);
        assert_eq!(next(&around), Next::Cool);
        let mut source = Around::all(Cell::Source(Liquid::Lava), B);
        assert_eq!(next(&source), Next::Keep);
        source.above = flowing(7);
        assert_eq!(next(&source), Next::Cool);
    }

    #[test]
    fn cells_map_to_voxels_and_back() {
        let kinds = Kinds {
            water: 5,
            water_flowing: 30,
            lava: Some((31, 32)),
            cooled: Some(1),
        };
        for cell in [
            A,
            W,
            flowing(1),
            flowing(7),
            Cell::Source(Liquid::Lava),
            Cell::Flowing(Liquid::Lava, 3),
        ] {
            assert_eq!(kinds.cell(kinds.voxel(cell)), cell);
        }
        assert_eq!(kinds.cell(Some(1)), B);
        assert_eq!(kinds.cell(None), B);
        assert_eq!(kinds.voxel(B), None);
        assert!(kinds.is_liquid(kinds.voxel(flowing(3)).unwrap()));
        assert!(kinds.is_source(5) && !kinds.is_source(30));
        let no_lava = Kinds {
            lava: None,
            ..kinds
        };
        assert_eq!(no_lava.cell(Some(31)), B);
    }

    #[test]
    fn what_a_change_affects_is_what_reads_it() {
        let changed = [3, 4, 5];
        for around in affected(changed) {
            assert!(neighbourhood(around).contains(&changed));
        }
        // And nothing else within reach reads it.
        for x in 1..6 {
            for y in 2..7 {
                for z in 3..8 {
                    let pos = [x, y, z];
                    if neighbourhood(pos).contains(&changed) {
                        assert!(affected(changed).contains(&pos), "{pos:?}");
                    }
                }
            }
        }
    }
}
