//! Occlusion culling: chunks hidden behind nearer opaque terrain are not
//! drawn. Each meshed chunk brings its [`Occluder`]: for each of its 4×4
//! columns of 8×8 voxels, the longest run of whole layers that are opaque
//! as drawn (a box nothing can be seen through). Each frame the boxes of
//! the chunks in view are drawn near to far into a small [`DepthMap`] of
//! the screen (each cell keeps the farthest depth, over the cell, of the
//! nearest boxes that cover it), then a chunk whose quads' box lies behind
//! that depth in every cell its projection's rectangle touches is not
//! drawn.
//!
//! Conservative but for a sliver: a cell holds a depth only where boxes
//! cover all of it, judged at 4 × 4 samples (so two boxes meeting along
//! an edge cover the cells they share), which may miss up to an eighth of
//! a cell (a pixel at 1280 wide) at a box's outer edge. A box the eye is
//! inside, or a chunk reaching behind the eye, hides nothing and is always
//! drawn.
//!
//! Owns: the occluder of a chunk's voxels, the depth map and the test.
//! Does not own: which voxels are opaque (`mesh::MeshTable`), the frustum
//! and cave culling (`gpu`, `visibility`), the draw order.

use glam::{Mat4, Vec3, Vec4};

use buildat_voxel::geometry::CHUNK_SIZE;

const SIZE: usize = CHUNK_SIZE as usize;
/// Voxels per side of an occluder's column.
const COLUMN: usize = 8;
/// Columns per side of a chunk.
const COLUMNS: usize = SIZE / COLUMN;
/// Corners closer to the eye than this (view depth, voxels) are treated
/// as behind it.
const NEAR: f32 = 0.01;

/// The opaque boxes of a chunk: per column (x fastest, then z), its
/// longest run of whole opaque layers (`bottom..top`, empty if none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Occluder {
    spans: [(u8, u8); COLUMNS * COLUMNS],
}

impl Occluder {
    /// Of a chunk's voxels (x fastest, then y, then z); `opaque`: whether a
    /// voxel hides what is behind it as drawn. Not a whole chunk: none.
    pub fn of(voxels: &[u32], opaque: impl Fn(u32) -> bool) -> Self {
        let mut occluder = Self::default();
        if voxels.len() != SIZE * SIZE * SIZE {
            return occluder;
        }
        for (column, span) in occluder.spans.iter_mut().enumerate() {
            let (cx, cz) = (column % COLUMNS * COLUMN, column / COLUMNS * COLUMN);
            let layer_opaque = |y: usize| {
                (cz..cz + COLUMN)
                    .all(|z| (cx..cx + COLUMN).all(|x| opaque(voxels[x + SIZE * (y + SIZE * z)])))
            };
            // The longest run of whole opaque layers (the highest of equal
            // ones).
            let mut run_from = 0;
            for y in 0..=SIZE {
                if y < SIZE && layer_opaque(y) {
                    continue;
                }
                if y - run_from >= usize::from(span.1 - span.0) && y > run_from {
                    *span = (run_from as u8, y as u8);
                }
                run_from = y + 1;
            }
        }
        occluder
    }

    /// The opaque boxes, chunk-relative (`min`, `max` in voxels): columns
    /// of equal height merged along x, then equal runs along z.
    pub fn boxes(&self) -> Vec<(Vec3, Vec3)> {
        // Runs along x: (x0, x1, span) per row of columns.
        type Run = (usize, usize, (u8, u8));
        let mut rows: Vec<Vec<Run>> = Vec::with_capacity(COLUMNS);
        for z in 0..COLUMNS {
            let mut runs: Vec<Run> = Vec::new();
            for x in 0..COLUMNS {
                let span = self.spans[x + z * COLUMNS];
                match runs.last_mut() {
                    Some((_, x1, last)) if *last == span && *x1 == x => *x1 = x + 1,
                    _ => runs.push((x, x + 1, span)),
                }
            }
            rows.push(runs);
        }
        let mut boxes = Vec::new();
        let side = COLUMN as f32;
        for z0 in 0..COLUMNS {
            for &run in &rows[z0] {
                if run.2.0 == run.2.1 || (z0 > 0 && rows[z0 - 1].contains(&run)) {
                    continue;
                }
                let z1 = (z0 + 1..COLUMNS)
                    .find(|&z| !rows[z].contains(&run))
                    .unwrap_or(COLUMNS);
                let (x0, x1, (bottom, top)) = run;
                boxes.push((
                    Vec3::new(x0 as f32 * side, f32::from(bottom), z0 as f32 * side),
                    Vec3::new(x1 as f32 * side, f32::from(top), z1 as f32 * side),
                ));
            }
        }
        boxes
    }
}

/// A small depth buffer over the screen (cells of several pixels): each
/// cell holds the depth (0 near .. 1 far, as the renderer's) behind which
/// everything is hidden, 1 + where nothing covers it whole.
pub struct DepthMap {
    view_projection: Mat4,
    eye: Vec3,
    width: usize,
    height: usize,
    depth: Vec<f32>,
    /// Per cell, which of its samples polygons that did not cover it whole
    /// covered, and their farthest depth there.
    parts: Vec<u16>,
    parts_far: Vec<f32>,
}

/// A point projected into the map: x, y in cells, z the depth.
#[derive(Debug, Clone, Copy)]
struct Projected {
    x: f32,
    y: f32,
    z: f32,
}

impl DepthMap {
    /// Empty (hides nothing): `width` × `height` cells over the screen seen
    /// through `view_projection` from `eye`.
    pub fn new(view_projection: Mat4, eye: Vec3, width: usize, height: usize) -> Self {
        Self {
            view_projection,
            eye,
            width,
            height,
            depth: vec![f32::INFINITY; width * height],
            parts: vec![0; width * height],
            parts_far: vec![f32::MIN; width * height],
        }
    }

    fn project(&self, clip: Vec4) -> Projected {
        Projected {
            x: (clip.x / clip.w + 1.0) * 0.5 * self.width as f32,
            y: (1.0 - clip.y / clip.w) * 0.5 * self.height as f32,
            z: clip.z / clip.w,
        }
    }

    /// Draws an opaque box's faces that face the eye (none when the eye is
    /// inside it).
    pub fn draw_box(&mut self, min: Vec3, max: Vec3) {
        let eye = self.eye;
        // Inside it, or it is hidden already (nearer boxes first).
        if eye.cmpge(min).all() && eye.cmple(max).all() || self.hides(min, max) {
            return;
        }
        for axis in 0..3 {
            let plane = if eye[axis] < min[axis] {
                min[axis]
            } else if eye[axis] > max[axis] {
                max[axis]
            } else {
                continue;
            };
            let (u, v) = ((axis + 1) % 3, (axis + 2) % 3);
            let corner = |a: f32, b: f32| {
                let mut p = Vec3::ZERO;
                p[axis] = plane;
                p[u] = a;
                p[v] = b;
                self.view_projection * p.extend(1.0)
            };
            let quad = [
                corner(min[u], min[v]),
                corner(max[u], min[v]),
                corner(max[u], max[v]),
                corner(min[u], max[v]),
            ];
            self.fill(&clip_near(&quad));
        }
    }

    /// Fills the cells a convex polygon (clip space, all in front of the
    /// eye) covers whole with its farthest depth over each.
    fn fill(&mut self, polygon: &[Vec4]) {
        if polygon.len() < 3 {
            return;
        }
        let points: Vec<Projected> = polygon.iter().map(|c| self.project(*c)).collect();
        // Twice the signed area: the winding, and whether it is a plane.
        let area: f32 = (0..points.len())
            .map(|i| {
                let (a, b) = (points[i], points[(i + 1) % points.len()]);
                a.x * b.y - b.x * a.y
            })
            .sum();
        if area.abs() < 1e-6 || !area.is_finite() {
            return;
        }
        let winding = area.signum();
        // The depth's plane z = dx x + dy y + z0, from the first point and
        // the two that make the largest triangle with it.
        let p0 = points[0];
        let (mut best, mut pair) = (0.0f32, (1, 2));
        for i in 1..points.len() {
            for j in i + 1..points.len() {
                let (a, b) = (points[i], points[j]);
                let cross = (a.x - p0.x) * (b.y - p0.y) - (b.x - p0.x) * (a.y - p0.y);
                if cross.abs() > best.abs() {
                    (best, pair) = (cross, (i, j));
                }
            }
        }
        let (a, b) = (points[pair.0], points[pair.1]);
        let dx = ((a.z - p0.z) * (b.y - p0.y) - (b.z - p0.z) * (a.y - p0.y)) / best;
        let dy = ((b.z - p0.z) * (a.x - p0.x) - (a.z - p0.z) * (b.x - p0.x)) / best;
        let z0 = p0.z - dx * p0.x - dy * p0.y;
        // Edges as e(x, y) = ex x + ey y + e0, >= 0 inside.
        let edges: Vec<[f32; 3]> = (0..points.len())
            .map(|i| {
                let (a, b) = (points[i], points[(i + 1) % points.len()]);
                let (ex, ey) = (-(b.y - a.y) * winding, (b.x - a.x) * winding);
                [ex, ey, -(ex * a.x + ey * a.y)]
            })
            .collect();
        let Some((x0, x1, y0, y1)) = self.cells_under(&points) else {
            return;
        };
        let nearest = points.iter().map(|p| p.z).fold(f32::INFINITY, f32::min);
        for y in y0..y1 {
            let Some((x0, x1)) = row_span(&edges, y as f32, x0, x1) else {
                continue;
            };
            for x in x0..x1 {
                let at = x + y * self.width;
                // Already hidden by something nearer than all of it.
                if self.depth[at] <= nearest {
                    continue;
                }
                let (fx, fy) = (x as f32, y as f32);
                let Some(mask) = coverage(&edges, fx, fy) else {
                    continue;
                };
                let farthest = dx * fx + dy * fy + z0 + dx.max(0.0) + dy.max(0.0);
                let whole = if mask == WHOLE {
                    farthest
                } else {
                    // Parts of several polygons make the cell whole at the
                    // farthest of them.
                    self.parts[at] |= mask;
                    self.parts_far[at] = self.parts_far[at].max(farthest);
                    if self.parts[at] != WHOLE {
                        continue;
                    }
                    self.parts[at] = 0;
                    std::mem::replace(&mut self.parts_far[at], f32::MIN)
                };
                self.depth[at] = self.depth[at].min(whole);
            }
        }
    }

    /// The cells (x0..x1, y0..y1) under the points' bounding rectangle, on
    /// the map; `None` when it is off the map.
    fn cells_under(&self, points: &[Projected]) -> Option<(usize, usize, usize, usize)> {
        let (mut lo_x, mut lo_y, mut hi_x, mut hi_y) = (f32::MAX, f32::MAX, f32::MIN, f32::MIN);
        for p in points {
            lo_x = lo_x.min(p.x);
            hi_x = hi_x.max(p.x);
            lo_y = lo_y.min(p.y);
            hi_y = hi_y.max(p.y);
        }
        let clamp = |v: f32, most: usize| v.clamp(0.0, most as f32) as usize;
        let (x0, x1) = (
            clamp(lo_x.floor(), self.width),
            clamp(hi_x.ceil(), self.width),
        );
        let (y0, y1) = (
            clamp(lo_y.floor(), self.height),
            clamp(hi_y.ceil(), self.height),
        );
        (x0 < x1 && y0 < y1).then_some((x0, x1, y0, y1))
    }

    /// Whether the box `min`..`max` is behind what was drawn in every cell
    /// its projection's rectangle touches (never when a corner is behind
    /// the eye or the rectangle is off the map).
    pub fn hides(&self, min: Vec3, max: Vec3) -> bool {
        let mut points = [Projected {
            x: 0.0,
            y: 0.0,
            z: 0.0,
        }; 8];
        for (i, point) in points.iter_mut().enumerate() {
            let corner = Vec3::new(
                if i & 1 == 0 { min.x } else { max.x },
                if i & 2 == 0 { min.y } else { max.y },
                if i & 4 == 0 { min.z } else { max.z },
            );
            let clip = self.view_projection * corner.extend(1.0);
            if clip.w < NEAR {
                return false;
            }
            *point = self.project(clip);
        }
        let nearest = points.iter().map(|p| p.z).fold(f32::INFINITY, f32::min);
        let Some((x0, x1, y0, y1)) = self.cells_under(&points) else {
            return false;
        };
        (y0..y1).all(|y| (x0..x1).all(|x| self.depth[x + y * self.width] < nearest))
    }
}

/// Samples per side of a cell: a polygon that does not cover a cell whole
/// covers some of its 4 × 4 samples.
const SAMPLES: usize = 4;
/// Every sample of a cell.
const WHOLE: u16 = u16::MAX;

/// The cells `x0..x1` of row `y` a convex polygon (its edges) can touch.
fn row_span(edges: &[[f32; 3]], y: f32, mut x0: usize, mut x1: usize) -> Option<(usize, usize)> {
    for [ex, ey, e0] in edges {
        // The edge's greatest value over the row's height, less ex * x.
        let c = e0 + ey * y + ey.max(0.0);
        if *ex > 0.0 {
            // Some of cell x inside: ex * (x + 1) + c >= 0.
            let from = (-c / ex - 1.0).floor();
            if from > x0 as f32 {
                x0 = (from as usize).min(x1);
            }
        } else if *ex < 0.0 {
            // ex * x + c >= 0.
            let to = (c / -ex).floor() + 1.0;
            if to < x1 as f32 {
                x1 = to.max(0.0) as usize;
            }
        } else if c < 0.0 {
            return None;
        }
    }
    (x0 < x1).then_some((x0, x1))
}

/// Which samples of the cell at `x`, `y` a convex polygon covers (its
/// edges as `[ex, ey, e0]`, inside >= 0): `WHOLE` when all of the cell is
/// inside, `None` when none of its samples is.
fn coverage(edges: &[[f32; 3]], x: f32, y: f32) -> Option<u16> {
    let mut whole = true;
    for [ex, ey, e0] in edges {
        let at = ex * x + ey * y + e0;
        if at + ex.max(0.0) + ey.max(0.0) < 0.0 {
            return None;
        }
        whole &= at + ex.min(0.0) + ey.min(0.0) >= 0.0;
    }
    if whole {
        return Some(WHOLE);
    }
    let step = 1.0 / SAMPLES as f32;
    let mut mask = 0u16;
    for sample in 0..SAMPLES * SAMPLES {
        let sx = x + ((sample % SAMPLES) as f32 + 0.5) * step;
        let sy = y + ((sample / SAMPLES) as f32 + 0.5) * step;
        if edges
            .iter()
            .all(|[ex, ey, e0]| ex * sx + ey * sy + e0 >= 0.0)
        {
            mask |= 1 << sample;
        }
    }
    (mask != 0).then_some(mask)
}

/// A polygon (clip space) cut to the part in front of the eye (w >= NEAR).
fn clip_near(polygon: &[Vec4]) -> Vec<Vec4> {
    let mut out = Vec::with_capacity(polygon.len() + 1);
    for i in 0..polygon.len() {
        let (a, b) = (polygon[i], polygon[(i + 1) % polygon.len()]);
        let (da, db) = (a.w - NEAR, b.w - NEAR);
        if da >= 0.0 {
            out.push(a);
        }
        if (da >= 0.0) != (db >= 0.0) {
            out.push(a + (b - a) * (da / (da - db)));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::camera::Camera;

    fn camera_at(eye: Vec3, yaw: f32, pitch: f32) -> DepthMap {
        let camera = Camera {
            eye,
            yaw,
            pitch,
            fov: 70.0,
        };
        DepthMap::new(camera.view_projection(16.0 / 9.0, 400.0), eye, 160, 90)
    }

    #[test]
    fn an_occluder_is_the_longest_run_of_whole_opaque_layers_of_each_column() {
        const STONE: u32 = 1;
        let mut voxels = vec![0u32; SIZE * SIZE * SIZE];
        let at = |x: usize, y: usize, z: usize| x + SIZE * (y + SIZE * z);
        // Stone up to y = 10 everywhere, one hole at (3, 4, 3), and one
        // column block (x 8..16, z 0..8) up to y = 20.
        for z in 0..SIZE {
            for x in 0..SIZE {
                let top = if (8..16).contains(&x) && z < 8 {
                    20
                } else {
                    10
                };
                for y in 0..top {
                    voxels[at(x, y, z)] = STONE;
                }
            }
        }
        voxels[at(3, 4, 3)] = 0;
        let occluder = Occluder::of(&voxels, |v| v == STONE);
        assert_eq!(
            occluder.spans[0],
            (5, 10),
            "the hole splits the first column"
        );
        assert_eq!(occluder.spans[1], (0, 20));
        assert!(occluder.spans[2..].iter().all(|s| *s == (0, 10)));
        // Merged: the first row's three runs, then the other rows' one.
        let boxes = occluder.boxes();
        assert_eq!(
            boxes,
            [
                (Vec3::new(0.0, 5.0, 0.0), Vec3::new(8.0, 10.0, 8.0)),
                (Vec3::new(8.0, 0.0, 0.0), Vec3::new(16.0, 20.0, 8.0)),
                (Vec3::new(16.0, 0.0, 0.0), Vec3::new(32.0, 10.0, 8.0)),
                (Vec3::new(0.0, 0.0, 8.0), Vec3::new(32.0, 10.0, 32.0)),
            ]
        );
        assert_eq!(
            Occluder::of(&voxels[1..], |v| v == STONE),
            Occluder::default()
        );
        assert!(Occluder::of(&voxels, |_| false).boxes().is_empty());
    }

    /// A wall of rock in front of the eye hides a chunk behind it, not one
    /// seen over it or beside it, nor one reaching in front of it.
    #[test]
    fn a_box_hides_what_is_wholly_behind_it() {
        // Looking along +x from the origin at a wall at x = 20..24, up to
        // y = 10, z -10..10: on the screen up to 26.6 degrees above and
        // beside the middle.
        let mut map = camera_at(Vec3::ZERO, 0.0, 0.0);
        map.draw_box(Vec3::new(20.0, -40.0, -10.0), Vec3::new(24.0, 10.0, 10.0));
        let chunk = |x: f32, y: f32, z: f32| {
            let min = Vec3::new(x, y, z);
            map.hides(min, min + Vec3::splat(32.0))
        };
        // Its highest and widest corner is 21.8 degrees off the middle.
        assert!(chunk(40.0, -16.0, -16.0), "behind the wall");
        assert!(!chunk(0.0, -16.0, -16.0), "the eye's own chunk");
        assert!(!chunk(10.0, -16.0, -16.0), "reaching in front of the wall");
        assert!(!chunk(40.0, 30.0, -16.0), "above it, seen over the wall");
        assert!(!chunk(40.0, -16.0, 20.0), "beside it");
        assert!(!chunk(100.0, -16.0, 200.0), "off the screen");
    }

    /// Standing on a plain, the ground hides chunks below it; the eye
    /// inside a box draws nothing of it.
    #[test]
    fn the_ground_hides_what_is_below_it_and_a_box_around_the_eye_hides_nothing() {
        let eye = Vec3::new(0.5, 1.6, 0.5);
        let mut map = camera_at(eye, 0.0, -30.0);
        map.draw_box(Vec3::new(-64.0, -64.0, -64.0), Vec3::new(64.0, 0.0, 64.0));
        assert!(map.hides(Vec3::new(0.0, -96.0, -16.0), Vec3::new(32.0, -64.0, 16.0)));
        assert!(!map.hides(Vec3::new(0.0, 0.0, -16.0), Vec3::new(32.0, 32.0, 16.0)));
        // Beyond the plain's edge, seen past it: not hidden.
        assert!(!map.hides(Vec3::new(70.0, -10.0, -16.0), Vec3::new(102.0, 22.0, 16.0)));
        let mut inside = camera_at(eye, 0.0, 0.0);
        inside.draw_box(Vec3::new(-8.0, -8.0, -8.0), Vec3::new(8.0, 8.0, 8.0));
        assert!(inside.depth.iter().all(|d| d.is_infinite()));
        assert!(!inside.hides(Vec3::new(40.0, -16.0, -16.0), Vec3::new(72.0, 16.0, 16.0)));
    }

    /// A chunk reaching behind the eye is never hidden; nor is one off the
    /// map.
    #[test]
    fn boxes_behind_the_eye_or_off_the_map_are_never_hidden() {
        let mut map = camera_at(Vec3::ZERO, 0.0, 0.0);
        map.draw_box(Vec3::new(1.0, -100.0, -100.0), Vec3::new(2.0, 100.0, 100.0));
        assert!(!map.hides(Vec3::new(-5.0, -5.0, -5.0), Vec3::new(50.0, 5.0, 5.0)));
        assert!(!map.hides(Vec3::new(-50.0, -5.0, -5.0), Vec3::new(-40.0, 5.0, 5.0)));
        assert!(map.hides(Vec3::new(10.0, -5.0, -5.0), Vec3::new(20.0, 5.0, 5.0)));
    }

    #[test]
    fn a_polygon_is_cut_where_it_passes_behind_the_eye() {
        let quad = [
            Vec4::new(0.0, 0.0, 0.0, -1.0),
            Vec4::new(1.0, 0.0, 0.0, 1.0),
            Vec4::new(1.0, 1.0, 0.0, 1.0),
            Vec4::new(0.0, 1.0, 0.0, -1.0),
        ];
        let cut = clip_near(&quad);
        assert_eq!(cut.len(), 4);
        assert!(cut.iter().all(|c| c.w >= NEAR - 1e-6));
        assert!(clip_near(&quad.map(|c| Vec4::new(c.x, c.y, c.z, -2.0))).is_empty());
    }
}
