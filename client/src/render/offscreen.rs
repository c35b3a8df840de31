//! Offscreen mode (`--screenshot FILE.png`): renders into a texture, no
//! window or display needed, reads the frame back and writes it as a PNG.
//! The shot is taken once the view radius has arrived (no new chunk for
//! [`SETTLE`] and every mesh done), or when the time runs out with what is
//! there; by default from the player's eyes at spawn, looking at the
//! horizon. When nothing of the world arrived (the session could not
//! connect or was refused) no picture is written: an error says so.
//!
//! Owns: waiting for the world to settle, the default camera, timing the
//! frame, the PNG. Does not own: drawing (`gpu`), the session (which it
//! ends by dropping its link when done).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use buildat_voxel::geometry::chunk_of_voxel;
use glam::Vec3;

use super::camera::Camera;
use super::gpu::{self, FrameExtras, FrameStats, Renderer};
use super::icons::ScenePictures;
use super::overlay::{Overlay, UiPainter, UiView};
use super::player::EYE_HEIGHT;
use super::{RenderError, Scene};
use crate::frontend::FrontendLink;

/// How long without a new chunk counts as the view radius having arrived.
pub const SETTLE: Duration = Duration::from_millis(1500);
/// Frames drawn to time one (the shot is the last).
const TIMED_FRAMES: u32 = 5;

/// What to shoot.
#[derive(Debug, Clone)]
pub struct ShotOptions {
    pub path: PathBuf,
    pub size: (u32, u32),
    /// Eye position, yaw and pitch (degrees); default: the spawn's eyes.
    pub camera: Option<Camera>,
    /// Shoot with what is there by then.
    pub deadline: Option<Instant>,
    /// Draw the overlay (crosshair, text, hotbar) too.
    pub overlay: bool,
    /// Chunks meshed in full detail around the eye (`Scene::detail_radius`).
    pub detail_radius: u32,
    /// Chunks meshed coarse beyond it (`Scene::coarse_radius`).
    pub coarse_radius: u32,
}

/// What was shot.
#[derive(Debug, Clone)]
pub struct ShotReport {
    pub camera: Camera,
    pub chunks_held: usize,
    pub frame: FrameStats,
    /// Mean CPU time of drawing a frame and waiting for it.
    pub frame_time: Duration,
    /// Whether the world had settled (else the deadline came first).
    pub settled: bool,
}

/// Renders one frame of the session behind `link` into `options.path`.
pub fn run(link: FrontendLink, options: &ShotOptions) -> Result<ShotReport, RenderError> {
    let instance = gpu::instance();
    let (_adapter, device, queue) = gpu::open_device(&instance, None)?;
    let mut renderer = Renderer::new(device, queue, gpu::COLOUR_FORMAT);
    let mut scene = Scene::new()?;
    scene.detail_radius = options.detail_radius;
    scene.coarse_radius = options.coarse_radius;
    let settled = loop {
        let eye = options.camera.map(|c| c.eye).or_else(|| {
            scene
                .ui
                .teleport
                .map(|(_, p)| Vec3::new(p[0] as f32, p[1] as f32, p[2] as f32))
        });
        scene.focus = eye.map(|e| chunk_of_voxel(e.floor().as_ivec3().to_array()));
        scene.receive(&link);
        scene.collect(Duration::from_millis(10));
        let spawned = options.camera.is_some() || scene.ui.teleport.is_some();
        let quiet = scene.last_chunk_at.is_some_and(|t| t.elapsed() >= SETTLE);
        if spawned && quiet && scene.meshing_idle() && scene.atlas().is_some() {
            break true;
        }
        if scene.ended || options.deadline.is_some_and(|d| Instant::now() >= d) {
            break false;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    // A picture of nothing is no screenshot: the session could not
    // connect, was refused, or the world never came.
    if scene.chunks_received == 0 {
        return Err(RenderError::NothingArrived(if scene.ended {
            "the session ended"
        } else {
            "the time ran out"
        }));
    }
    if let Some(atlas) = scene.atlas() {
        renderer.set_atlas(atlas, scene.atlas_version);
    }
    for (chunk, mesh) in scene.take_ready() {
        renderer.set_chunk(chunk, mesh.as_ref());
    }
    let camera = options.camera.unwrap_or_else(|| default_camera(&scene));
    let (width, height) = options.size;
    let texture = gpu::render_target(
        &renderer.device,
        "screenshot",
        (width, height),
        gpu::COLOUR_FORMAT,
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
    );
    let view = texture.create_view(&Default::default());
    let mut extras = FrameExtras {
        daylight: scene.ui.daylight,
        underwater: scene.underwater(camera.eye),
        reachable: scene.reachable_chunks(camera.eye),
        occlusion: scene.occludes_from(camera.eye),
        ..FrameExtras::default()
    };
    scene.box_triangles(&mut extras.world_triangles);
    // Models (E): where Lua set them, posed at the animations' start.
    renderer.models.place(
        &scene.ui.models,
        &|name| scene.file(name),
        0.0,
        &mut extras.world_triangles,
    );
    if options.overlay {
        let mut overlay = Overlay::new(width, height);
        overlay.crosshair();
        let texts: Vec<&str> = scene.ui.texts.values().map(String::as_str).collect();
        overlay.lines(texts);
        extras.screen_triangles = overlay.triangles;
        // The game's UI: hotbar, hearts, chat lines (all shown), the top
        // screen.
        let mut painter = UiPainter::new(width, height);
        let mut pictures = ScenePictures::new(&mut renderer.ui, &renderer.queue, &scene);
        let view = UiView::default();
        painter.ui(&mut pictures, &scene.ui, scene.ui.screens.last(), &view);
        renderer
            .ui
            .set_vertices(&renderer.device, &renderer.queue, &painter.vertices);
    }
    let radius = scene.view_radius(camera.eye.to_array());
    let mut frame = FrameStats::default();
    let started = Instant::now();
    for _ in 0..TIMED_FRAMES {
        frame = renderer.draw(&view, (width, height), &camera, radius, &extras);
        renderer
            .device
            .poll(wgpu::PollType::wait_indefinitely())
            .map_err(|e| RenderError::Readback(e.to_string()))?;
    }
    let frame_time = started.elapsed() / TIMED_FRAMES;
    let rgb = renderer.read_rgb(&texture)?;
    crate::world::write_rgb_png(&options.path, width, height, &rgb)?;
    Ok(ShotReport {
        camera,
        chunks_held: scene.chunk_count(),
        frame,
        frame_time,
        settled,
    })
}

/// The player's eyes at spawn (else above the surface at the origin),
/// looking along +x at the horizon.
fn default_camera(scene: &Scene) -> Camera {
    let feet = match scene.ui.teleport {
        Some((_, [x, y, z])) => Vec3::new(x as f32, y as f32, z as f32),
        None => Vec3::new(0.5, scene.surface(0, 0).unwrap_or(0) as f32, 0.5),
    };
    Camera {
        eye: feet + Vec3::new(0.0, EYE_HEIGHT as f32, 0.0),
        yaw: 0.0,
        pitch: 0.0,
        fov: super::camera::FOV_DEGREES,
    }
}
