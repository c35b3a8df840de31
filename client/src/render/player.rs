//! The player on the client: walking, gravity, jumping and collision
//! against solid voxels (the server checks moves again), and the voxel the
//! crosshair points at.
//!
//! Owns: the player's box, its motion rules and the voxel ray cast. Does
//! not own: which keys move it (the game's Lua binds them, `sandbox::ui`),
//! the camera's matrices (`camera`), the world (asked through a
//! `solid(voxel)` function).

use glam::{DVec3, Vec3};

use crate::frontend::Target;

/// Width of the player's box (x and z), voxels.
pub const WIDTH: f64 = 0.6;
/// Height of the player's box.
pub const HEIGHT: f64 = 1.8;
/// Eyes above the feet.
pub const EYE_HEIGHT: f64 = 1.62;
/// How far the crosshair reaches, voxels.
pub const REACH: f32 = 6.0;
const WALK_SPEED: f64 = 4.5;
const GRAVITY: f64 = 24.0;
const JUMP_SPEED: f64 = 8.0;
const MAX_FALL_SPEED: f64 = 50.0;
/// Longest physics step: faster steps could pass through a voxel.
const MAX_STEP: f64 = 0.02;

/// Which ways the player is asked to go this frame.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Intent {
    pub forward: bool,
    pub back: bool,
    pub left: bool,
    pub right: bool,
    pub jump: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Player {
    /// Feet, the middle of the box's bottom.
    pub feet: DVec3,
    pub velocity: DVec3,
    pub on_ground: bool,
}

/// Whether a voxel blocks the player: `None` when its chunk is not held
/// (the player then waits in the air rather than falling through).
pub trait Solid {
    fn solid(&self, voxel: [i32; 3]) -> Option<bool>;
}

impl<F: Fn([i32; 3]) -> Option<bool>> Solid for F {
    fn solid(&self, voxel: [i32; 3]) -> Option<bool> {
        self(voxel)
    }
}

impl Player {
    pub fn new(feet: DVec3) -> Self {
        Self {
            feet,
            velocity: DVec3::ZERO,
            on_ground: false,
        }
    }

    pub fn eye(&self) -> DVec3 {
        self.feet + DVec3::new(0.0, EYE_HEIGHT, 0.0)
    }

    /// Voxels the box at `feet` overlaps, and whether any blocks (or is
    /// not held).
    fn blocked(world: &impl Solid, feet: DVec3) -> bool {
        let half = WIDTH / 2.0;
        let min = (feet - DVec3::new(half, 0.0, half)).floor();
        let max = (feet + DVec3::new(half, HEIGHT, half) - DVec3::splat(1e-6)).floor();
        for x in min.x as i32..=max.x as i32 {
            for y in min.y as i32..=max.y as i32 {
                for z in min.z as i32..=max.z as i32 {
                    if world.solid([x, y, z]) != Some(false) {
                        return true;
                    }
                }
            }
        }
        false
    }

    /// Advances `seconds`, walking by `intent` relative to `yaw` (degrees).
    pub fn step(&mut self, world: &impl Solid, intent: Intent, yaw: f32, seconds: f64) {
        let yaw = f64::from(yaw).to_radians();
        let forward = DVec3::new(yaw.cos(), 0.0, yaw.sin());
        let right = DVec3::new(-yaw.sin(), 0.0, yaw.cos());
        let mut walk = DVec3::ZERO;
        walk += forward * (f64::from(u8::from(intent.forward)) - f64::from(u8::from(intent.back)));
        walk += right * (f64::from(u8::from(intent.right)) - f64::from(u8::from(intent.left)));
        let walk = walk.normalize_or_zero() * WALK_SPEED;
        self.velocity.x = walk.x;
        self.velocity.z = walk.z;
        if intent.jump && self.on_ground {
            self.velocity.y = JUMP_SPEED;
        }
        // Not held underfoot: wait for the world instead of falling.
        let below = self.feet - DVec3::new(0.0, 0.5, 0.0);
        if world.solid(below.floor().as_ivec3().to_array()).is_none() {
            self.velocity.y = 0.0;
        }
        let mut left = seconds.clamp(0.0, 0.25);
        while left > 0.0 {
            let dt = left.min(MAX_STEP);
            left -= dt;
            self.velocity.y = (self.velocity.y - GRAVITY * dt).max(-MAX_FALL_SPEED);
            self.on_ground = false;
            for axis in 0..3 {
                let mut next = self.feet;
                next[axis] += self.velocity[axis] * dt;
                if Self::blocked(world, next) {
                    if axis == 1 && self.velocity.y < 0.0 {
                        self.on_ground = true;
                        // Stand exactly on the voxel below.
                        next.y = self.feet.y.floor();
                        if Self::blocked(world, next) {
                            next = self.feet;
                        }
                        self.feet = next;
                    } else if axis != 1 {
                        // Touch the voxel instead of stopping short of it.
                        let half = WIDTH / 2.0;
                        next[axis] = if self.velocity[axis] > 0.0 {
                            (next[axis] + half).floor() - half - 1e-7
                        } else {
                            (next[axis] - half).ceil() + half + 1e-7
                        };
                        if !Self::blocked(world, next) {
                            self.feet = next;
                        }
                    }
                    self.velocity[axis] = 0.0;
                } else {
                    self.feet = next;
                }
            }
        }
    }
}

/// The first solid voxel along the ray from `eye` in `direction` within
/// `reach`, and the voxel in front of the face hit (voxel traversal,
/// Amanatides & Woo).
pub fn cast_ray(world: &impl Solid, eye: Vec3, direction: Vec3, reach: f32) -> Option<Target> {
    let direction = direction.normalize_or_zero();
    if direction == Vec3::ZERO {
        return None;
    }
    let mut voxel = eye.floor().as_ivec3();
    let step = direction.signum().as_ivec3();
    let delta = direction.recip().abs();
    let boundary = |i: usize| {
        let v = voxel[i] as f32;
        if direction[i] == 0.0 {
            f32::INFINITY
        } else if direction[i] > 0.0 {
            (v + 1.0 - eye[i]) * delta[i]
        } else {
            (eye[i] - v) * delta[i]
        }
    };
    let mut next = Vec3::new(boundary(0), boundary(1), boundary(2));
    // Each step crosses one voxel boundary: at most this many within reach.
    for _ in 0..3 * (reach.ceil() as usize + 1) {
        let axis = if next.x < next.y && next.x < next.z {
            0
        } else if next.y < next.z {
            1
        } else {
            2
        };
        if next[axis] > reach {
            return None;
        }
        let before = voxel;
        voxel[axis] += step[axis];
        next[axis] += delta[axis];
        if world.solid(voxel.to_array()) == Some(true) {
            return Some(Target {
                voxel: voxel.to_array(),
                before: before.to_array(),
            });
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ground at y < 0, held everywhere.
    fn flat(voxel: [i32; 3]) -> Option<bool> {
        Some(voxel[1] < 0 || voxel == [3, 0, 0])
    }

    #[test]
    fn the_player_falls_lands_and_walks_into_walls() {
        let mut player = Player::new(DVec3::new(0.5, 5.0, 0.5));
        for _ in 0..100 {
            player.step(&flat, Intent::default(), 0.0, 1.0 / 30.0);
        }
        assert!(player.on_ground);
        assert!(player.feet.y.abs() < 1e-9, "{}", player.feet.y);
        let forward = Intent {
            forward: true,
            ..Intent::default()
        };
        for _ in 0..60 {
            player.step(&flat, forward, 0.0, 1.0 / 30.0);
        }
        // The wall voxel at x = 3 stops the box (half width 0.3).
        assert!((player.feet.x - 2.7).abs() < 1e-6, "{}", player.feet.x);
        let jump = Intent {
            jump: true,
            ..Intent::default()
        };
        player.step(&flat, jump, 0.0, 1.0 / 30.0);
        assert!(player.feet.y > 0.1);
    }

    #[test]
    fn the_ray_finds_the_ground_and_the_voxel_before_it() {
        let target = cast_ray(
            &flat,
            Vec3::new(0.5, 1.6, 0.5),
            Vec3::new(1.0, -1.0, 0.0),
            REACH,
        );
        assert_eq!(
            target,
            Some(Target {
                voxel: [2, -1, 0],
                before: [2, 0, 0]
            })
        );
        assert_eq!(
            cast_ray(&flat, Vec3::new(0.5, 1.6, 0.5), Vec3::Y, REACH),
            None
        );
        // Along an axis from a voxel boundary (no NaN from 0 × ∞).
        assert_eq!(
            cast_ray(&flat, Vec3::new(0.0, 1.0, 0.0), Vec3::X, REACH),
            None
        );
        assert_eq!(
            cast_ray(&flat, Vec3::new(0.0, 0.0, 0.5), Vec3::X, REACH).map(|t| t.voxel),
            Some([3, 0, 0])
        );
    }
}
