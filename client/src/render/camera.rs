//! The camera: where the eye is and where it looks (yaw and pitch in
//! degrees; yaw 0 looks along +x, 90 along +z; pitch up is positive), its
//! view-projection matrix, and the view frustum chunks are culled against.
//!
//! Owns: the matrices and the frustum test. Does not own: moving the
//! player (`player`), drawing (`gpu`).

use glam::{Mat4, Vec3, Vec4};

/// Vertical field of view, degrees.
pub const FOV_DEGREES: f32 = 70.0;
const NEAR: f32 = 0.05;

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Camera {
    pub eye: Vec3,
    pub yaw: f32,
    pub pitch: f32,
    /// Vertical field of view, degrees ([`FOV_DEGREES`] by default; the
    /// settings may change it).
    pub fov: f32,
}

impl Camera {
    pub fn forward(&self) -> Vec3 {
        let (yaw, pitch) = (self.yaw.to_radians(), self.pitch.to_radians());
        Vec3::new(
            pitch.cos() * yaw.cos(),
            pitch.sin(),
            pitch.cos() * yaw.sin(),
        )
    }

    /// World to clip space, for a `width`/`height` target seeing `far`
    /// voxels.
    pub fn view_projection(&self, aspect: f32, far: f32) -> Mat4 {
        // wgpu's clip space is DirectX's: depth 0..1, y up.
        let projection = glam::camera::rh::proj::directx::perspective(
            self.fov.clamp(10.0, 150.0).to_radians(),
            aspect.max(0.01),
            NEAR,
            far.max(1.0),
        );
        let view = glam::camera::rh::view::look_to_mat4(self.eye, self.forward(), Vec3::Y);
        projection * view
    }
}

/// The six planes of a view-projection matrix's frustum, pointing inwards.
#[derive(Debug, Clone, Copy)]
pub struct Frustum {
    planes: [Vec4; 6],
}

impl Frustum {
    pub fn new(view_projection: Mat4) -> Self {
        let m = view_projection.transpose();
        let (x, y, z, w) = (m.x_axis, m.y_axis, m.z_axis, m.w_axis);
        let planes = [w + x, w - x, w + y, w - y, z, w - z].map(|p| p / p.truncate().length());
        Self { planes }
    }

    /// Whether any part of the box `min`..`max` may be visible.
    pub fn intersects_box(&self, min: Vec3, max: Vec3) -> bool {
        self.planes.iter().all(|plane| {
            // The box corner farthest along the plane's normal.
            let corner = Vec3::select(plane.truncate().cmpge(Vec3::ZERO), max, min);
            plane.truncate().dot(corner) + plane.w >= 0.0
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_frustum_keeps_what_is_ahead_and_drops_what_is_behind() {
        let camera = Camera {
            eye: Vec3::ZERO,
            yaw: 0.0,
            pitch: 0.0,
            fov: FOV_DEGREES,
        };
        let frustum = Frustum::new(camera.view_projection(1.5, 200.0));
        let one = Vec3::ONE;
        assert!(frustum.intersects_box(
            Vec3::new(50.0, 0.0, 0.0) - one,
            Vec3::new(50.0, 0.0, 0.0) + one
        ));
        assert!(!frustum.intersects_box(
            Vec3::new(-50.0, 0.0, 0.0) - one,
            Vec3::new(-50.0, 0.0, 0.0) + one
        ));
        assert!(!frustum.intersects_box(
            Vec3::new(300.0, 0.0, 0.0) - one,
            Vec3::new(300.0, 0.0, 0.0) + one
        ));
        assert!(!frustum.intersects_box(
            Vec3::new(5.0, 0.0, 50.0) - one,
            Vec3::new(5.0, 0.0, 50.0) + one
        ));
        // A box around the eye is always in view.
        assert!(frustum.intersects_box(-one, one));
    }
}
