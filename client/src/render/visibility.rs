//! Cave culling: which held chunks the eye can possibly see through open
//! space, so chunks sealed underground (caves with no opening towards the
//! eye) are not drawn. Per chunk, which of its six faces open space joins
//! ([`Connectivity`], flood-filled from its voxels); per frame, a walk from
//! the eye's chunk that goes from chunk to chunk only through faces the
//! chunk it crossed joins, and never back towards the eye along an axis
//! ([`reachable`]). Conservative where it does not know: a chunk not held
//! or not yet filled joins every face.
//!
//! Owns: the connectivity and the walk. Does not own: which voxels hide
//! (`mesh::Kind`), the frustum (`gpu`), the held chunks (`Scene`).

use std::collections::{HashMap, HashSet, VecDeque};

use buildat_voxel::geometry::{CHUNK_SIZE, Pos};

const SIZE: usize = CHUNK_SIZE as usize;

/// Which faces of a chunk (0..6: +x -x +y -y +z -z) open space inside it
/// joins: bit `a * 6 + b` set when a path through voxels that do not hide
/// leads from face `a` to face `b`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Connectivity(u64);

impl Connectivity {
    /// Every face joins every other (all air, or not known).
    pub const ALL: Self = Self((1 << 36) - 1);
    /// Nothing joins (solid through).
    pub const NONE: Self = Self(0);

    pub fn joins(self, a: usize, b: usize) -> bool {
        a < 6 && b < 6 && self.0 >> (a * 6 + b) & 1 == 1
    }

    /// Flood-fills a chunk's voxels (x fastest, then y, then z): each
    /// region of voxels that do not hide (`open`) joins the faces it
    /// touches.
    pub fn of(voxels: &[u32], open: impl Fn(u32) -> bool) -> Self {
        if voxels.len() < SIZE * SIZE * SIZE {
            return Self::ALL;
        }
        let mut seen = vec![false; SIZE * SIZE * SIZE];
        let mut bits = 0u64;
        let mut stack = Vec::new();
        for start in 0..seen.len() {
            if seen[start] || !open(voxels[start]) {
                continue;
            }
            seen[start] = true;
            stack.push(start);
            let mut faces = 0u32;
            while let Some(at) = stack.pop() {
                let p = [at % SIZE, at / SIZE % SIZE, at / (SIZE * SIZE)];
                for axis in 0..3 {
                    for (face, step) in [(axis * 2, 1isize), (axis * 2 + 1, -1)] {
                        let c = p[axis] as isize + step;
                        if c < 0 || c >= SIZE as isize {
                            faces |= 1 << face;
                            continue;
                        }
                        let stride = [1, SIZE, SIZE * SIZE][axis] as isize;
                        let next = (at as isize + step * stride) as usize;
                        if !seen[next] && open(voxels[next]) {
                            seen[next] = true;
                            stack.push(next);
                        }
                    }
                }
            }
            for a in 0..6 {
                if faces >> a & 1 == 1 {
                    for b in 0..6 {
                        if faces >> b & 1 == 1 {
                            bits |= 1 << (a * 6 + b);
                        }
                    }
                }
            }
            if bits == Self::ALL.0 {
                break;
            }
        }
        Self(bits)
    }
}

/// The chunks the eye in chunk `start` may see: a walk from it, entering a
/// neighbour through a face only when the chunk it leaves joins the face
/// it came in by to the face it leaves by (any face from `start`), and
/// never stepping back towards `start` along an axis. `connectivity` of a
/// chunk in `bounds` (min, max, inclusive) that it does not know: every
/// face joins.
pub fn reachable(
    start: Pos,
    bounds: (Pos, Pos),
    connectivity: impl Fn(Pos) -> Option<Connectivity>,
) -> HashSet<Pos> {
    let (min, max) = bounds;
    let inside = |c: Pos| (0..3).all(|a| c[a] >= min[a] && c[a] <= max[a]);
    // Per chunk, the faces it was entered by.
    let mut entered: HashMap<Pos, u8> = HashMap::new();
    let mut queue: VecDeque<(Pos, Option<usize>)> = VecDeque::new();
    let mut seen = HashSet::new();
    seen.insert(start);
    queue.push_back((start, None));
    while let Some((chunk, from)) = queue.pop_front() {
        let joins = connectivity(chunk).unwrap_or(Connectivity::ALL);
        for face in 0..6 {
            let axis = face / 2;
            let step = if face % 2 == 0 { 1 } else { -1 };
            if (chunk[axis] - start[axis]) * step < 0 {
                continue; // back towards the eye
            }
            if from.is_some_and(|f| !joins.joins(f, face)) {
                continue;
            }
            let mut next = chunk;
            next[axis] += step;
            if !inside(next) {
                continue;
            }
            let by = face ^ 1;
            let mask = entered.entry(next).or_insert(0);
            if *mask & 1 << by != 0 {
                continue;
            }
            *mask |= 1 << by;
            seen.insert(next);
            queue.push_back((next, Some(by)));
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    const AIR: u32 = 0;
    const STONE: u32 = 1;

    fn chunk(fill: impl Fn(usize, usize, usize) -> u32) -> Vec<u32> {
        let mut out = Vec::with_capacity(SIZE * SIZE * SIZE);
        for z in 0..SIZE {
            for y in 0..SIZE {
                for x in 0..SIZE {
                    out.push(fill(x, y, z));
                }
            }
        }
        out
    }

    fn open(v: u32) -> bool {
        v == AIR
    }

    #[test]
    fn open_space_joins_the_faces_it_touches_and_stone_none() {
        assert_eq!(
            Connectivity::of(&chunk(|_, _, _| AIR), open),
            Connectivity::ALL
        );
        assert_eq!(
            Connectivity::of(&chunk(|_, _, _| STONE), open),
            Connectivity::NONE
        );
        // Ground below y 16, air above: the air joins the sides and the
        // top, never the bottom.
        let ground = Connectivity::of(&chunk(|_, y, _| if y < 16 { STONE } else { AIR }), open);
        assert!(ground.joins(2, 0) && ground.joins(0, 5) && ground.joins(1, 4));
        assert!(!ground.joins(2, 3) && !ground.joins(3, 0) && !ground.joins(3, 3));
        // A sealed bubble joins nothing; a tunnel along x joins -x and +x.
        let bubble = Connectivity::of(
            &chunk(|x, y, z| {
                if (10..20).contains(&x) && (10..20).contains(&y) && (10..20).contains(&z) {
                    AIR
                } else {
                    STONE
                }
            }),
            open,
        );
        assert_eq!(bubble, Connectivity::NONE);
        let tunnel = Connectivity::of(
            &chunk(|_, y, z| if y == 5 && z == 5 { AIR } else { STONE }),
            open,
        );
        assert!(tunnel.joins(0, 1) && tunnel.joins(1, 0));
        assert!(!tunnel.joins(0, 2) && !tunnel.joins(4, 5));
    }

    #[test]
    fn the_walk_skips_chunks_sealed_off_and_goes_through_openings() {
        // A column of chunks: the eye at y 0 over ground at y -1, which is
        // solid except one chunk (x 2) whose ground is open downwards.
        // The ground joins its sides and top, nothing to its bottom (face 3).
        let bottom = (0b111111 << 18) | (0o010101010101 << 3);
        let ground = Connectivity(Connectivity::ALL.0 & !bottom);
        let solid = Connectivity::NONE;
        let shaft = Connectivity::ALL;
        let of = |c: Pos| -> Option<Connectivity> {
            Some(match c[1] {
                0.. => Connectivity::ALL,
                -1 if c[0] == 2 => shaft,
                -1 => ground,
                _ => solid,
            })
        };
        let seen = reachable([0, 0, 0], ([-3, -3, -3], [3, 3, 3]), of);
        // The ground layer is seen (its top faces the air)...
        assert!(seen.contains(&[1, -1, 0]) && seen.contains(&[-3, -1, 2]));
        // ...under it only below the shaft.
        assert!(seen.contains(&[2, -2, 0]));
        assert!(!seen.contains(&[1, -2, 0]), "sealed under the ground");
        assert!(!seen.contains(&[0, -3, 0]));
        // Unknown chunks join everything: all within the bounds are seen.
        let all = reachable([0, 0, 0], ([-1, -1, -1], [1, 1, 1]), |_| None);
        assert_eq!(all.len(), 27);
    }
}
