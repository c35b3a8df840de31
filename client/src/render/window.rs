//! Window mode: the playable client. A winit window (X11), its wgpu
//! surface, and per frame: the session's news into the [`Scene`], the
//! player moved by the keys the game bound to actions (client-side
//! physics; moves reported to the game's Lua, which tells the server), the
//! crosshair's target outlined, clicks and other keys passed to the game's
//! Lua, the boxes it placed, the overlay, then the frame.
//!
//! Owns: the window, mouse capture (Esc, or the game's `free_mouse`
//! binding, frees it; a click captures it again), key names, mouse look,
//! the frame loop. Does not own: what keys do (the game's Lua:
//! `buildat.ui.bind`), drawing (`gpu`), physics (`player`).

mod native;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use glam::{DVec3, Vec3};
use winit::application::ApplicationHandler;
use winit::event::{
    DeviceEvent, DeviceId, ElementState, MouseButton, MouseScrollDelta, WindowEvent,
};
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::keyboard::{KeyCode, PhysicalKey};
use winit::window::{CursorGrabMode, Window, WindowId};

use super::camera::Camera;
use super::gpu::{self, FrameExtras, Renderer};
use super::icons::ScenePictures;
use super::overlay::{
    CHAT_GONE, CHAT_SHOWN, Hit, Overlay, ScreenLayout, UiPainter, UiView, hotbar_hit,
};
use super::player::{self, Intent, Player};
use super::{RenderError, Scene};
use crate::frontend::{Button, FromFrontend, FrontendLink, Target};
use crate::sandbox::{Action, MAX_TEXT_BYTES, Screen, UiState, WidgetKind};
use crate::settings::{self, ClientSettings};

/// The player's position is reported at most this often.
const MOVE_REPORT_EVERY: Duration = Duration::from_millis(100);

/// How the window's run went, for the exit summary.
#[derive(Debug, Clone, Default)]
pub struct WindowReport {
    /// Frames drawn.
    pub frames: u64,
    /// From the window opening to its end.
    pub seconds: f64,
    /// Wall time between successive frames, median and 99th percentile.
    pub frame_ms_median: f64,
    pub frame_ms_p99: f64,
    /// CPU time of the whole process (all threads: session, mesher, the
    /// software renderer's) per frame drawn; `None` without `/proc`.
    pub cpu_ms_per_frame: Option<f64>,
    /// Edits drawn, by frames from the one that received the update to the
    /// one that drew it: 1, 2, more.
    pub edit_latency: [u64; 3],
}

/// What the window shows.
#[derive(Debug, Clone)]
pub struct WindowOptions {
    pub size: (u32, u32),
    /// End the session after this (the same as closing the window).
    pub deadline: Option<Instant>,
    /// Log each opened screen's layout (`-v`): `ui: screen ID grid GRID at
    /// X,Y cell C`, the pixel of each grid's top left and a cell's size;
    /// `ui: screen ID button|field WIDGET at X,Y size W,H`.
    pub verbose: bool,
    /// The user's settings, and the file the settings screen saves them to.
    pub settings: ClientSettings,
    pub settings_path: Option<PathBuf>,
    /// Ask for a name and password before the session connects.
    pub login: Option<LoginRequest>,
}

/// The login prompt's question: the server shown, the name offered, where
/// the answer goes (the session waits for it before connecting).
#[derive(Debug, Clone)]
pub struct LoginRequest {
    pub server: String,
    pub name: String,
    pub reply: crossbeam_channel::Sender<LoginChoice>,
}

/// The login prompt's answer: a name, and a password (`None`: as a guest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginChoice {
    pub name: String,
    pub password: Option<String>,
}

/// A winit key as the game binds it: letters `"A"`..`"Z"`, digits
/// `"0"`..`"9"`, `"Space"`, `"Escape"`, `"Shift"`, `"Control"`, `"Tab"`,
/// `"Enter"`, `"F1"`..; else winit's name.
pub fn key_name(code: KeyCode) -> String {
    let debug = format!("{code:?}");
    if let Some(letter) = debug.strip_prefix("Key") {
        return letter.to_string();
    }
    if let Some(digit) = debug.strip_prefix("Digit") {
        return digit.to_string();
    }
    match code {
        KeyCode::ShiftLeft | KeyCode::ShiftRight => "Shift".into(),
        KeyCode::ControlLeft | KeyCode::ControlRight => "Control".into(),
        KeyCode::AltLeft | KeyCode::AltRight => "Alt".into(),
        _ => debug,
    }
}

/// The native action of `key`: the user's choice (`settings`), else the
/// game's binding (`actions`) unless the user moved that action to another
/// key.
fn action_of(
    settings: &ClientSettings,
    actions: &std::collections::BTreeMap<String, Action>,
    key: &str,
) -> Option<Action> {
    if let Some(action) = Action::ALL
        .into_iter()
        .find(|a| settings.key_of(*a) == Some(key))
    {
        return Some(action);
    }
    let action = actions.get(key).copied()?;
    settings.key_of(action).is_none().then_some(action)
}

struct Gfx {
    window: Arc<Window>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    renderer: Renderer,
}

struct App {
    link: FrontendLink,
    options: WindowOptions,
    scene: Scene,
    gfx: Option<Gfx>,
    error: Option<RenderError>,
    player: Option<Player>,
    teleport_seen: u64,
    yaw: f32,
    pitch: f32,
    held_keys: HashSet<String>,
    captured: bool,
    last_frame: Instant,
    last_report: Instant,
    reported: Option<DVec3>,
    fps: f32,
    target: Option<Target>,
    /// Wall time between frames, ms.
    frame_ms: Vec<f32>,
    /// When the window opened, and the process's CPU seconds then.
    opened: Option<(Instant, Option<f64>)>,
    /// The chat line, the mouse over a screen, a drag, typed fields.
    ui_view: UiView,
    /// The last `open_chat` serial acted on.
    chat_seen: u64,
    /// When each chat line (by serial) arrived.
    chat_times: HashMap<u64, Instant>,
    /// The serial of the top screen last seen.
    screen_seen: Option<u64>,
    /// Screens closed here (Esc) that the session has not yet removed.
    dismissed: HashSet<u64>,
    /// Where a mouse button went down on a screen, and which.
    press: Option<(Hit, Button)>,
    /// The user's settings in force.
    settings: ClientSettings,
    /// The window's own screen (menu, settings, login), over the game's.
    native: Option<Screen>,
    /// The settings being edited on the settings screen, and the action
    /// waiting for its new key.
    settings_edit: Option<ClientSettings>,
    rebinding: Option<Action>,
    /// The login prompt's question.
    login: Option<LoginRequest>,
}

/// Runs the window until it is closed, the session ends, or the deadline.
pub fn run(link: FrontendLink, options: WindowOptions) -> Result<WindowReport, RenderError> {
    let event_loop = EventLoop::new().map_err(|e| {
        RenderError::Window(format!(
            "{e} (window mode needs a display: set DISPLAY, or use --screenshot)"
        ))
    })?;
    event_loop.set_control_flow(ControlFlow::Poll);
    let mut app = App {
        link,
        options,
        scene: Scene::new()?,
        gfx: None,
        error: None,
        player: None,
        teleport_seen: 0,
        yaw: 0.0,
        pitch: 0.0,
        held_keys: HashSet::new(),
        captured: false,
        last_frame: Instant::now(),
        last_report: Instant::now(),
        reported: None,
        fps: 0.0,
        target: None,
        frame_ms: Vec::new(),
        opened: None,
        ui_view: UiView::default(),
        chat_seen: 0,
        chat_times: HashMap::new(),
        screen_seen: None,
        dismissed: HashSet::new(),
        press: None,
        settings: ClientSettings::default(),
        native: None,
        settings_edit: None,
        rebinding: None,
        login: None,
    };
    app.settings = app.options.settings.clone();
    if let Some(request) = app.options.login.take() {
        app.native = Some(native::login(&request.server, &request.name, ""));
        app.ui_view
            .fields
            .insert("name".into(), request.name.clone());
        app.ui_view.focus = Some(if request.name.is_empty() {
            "name".into()
        } else {
            "password".into()
        });
        app.ui_view.masked = vec!["password".into()];
        app.login = Some(request);
    }
    event_loop
        .run_app(&mut app)
        .map_err(|e| RenderError::Window(e.to_string()))?;
    let _ = app.link.to_session.send(FromFrontend::Quit);
    match app.error {
        Some(error) => Err(error),
        None => Ok(app.report()),
    }
}

/// CPU seconds (user + system) of this process so far, from
/// `/proc/self/stat` (in USER_HZ ticks: 100 a second on Linux).
fn process_cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces) in parentheses.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // utime and stime are fields 14 and 15 of the line, 12 and 13 here.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / 100.0)
}

/// The `q`-quantile (0..=1) of `values`, sorted in place.
fn quantile(values: &mut [f32], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f32::total_cmp);
    let at = ((values.len() - 1) as f64 * q).round() as usize;
    f64::from(values[at.min(values.len() - 1)])
}

impl App {
    fn report(&mut self) -> WindowReport {
        let Some((opened, cpu_then)) = self.opened else {
            return WindowReport::default();
        };
        let frames = self.frame_ms.len() as u64;
        let cpu_ms_per_frame = match (cpu_then, process_cpu_seconds()) {
            (Some(then), Some(now)) if frames > 0 => Some((now - then) * 1e3 / frames as f64),
            _ => None,
        };
        WindowReport {
            frames,
            seconds: opened.elapsed().as_secs_f64(),
            frame_ms_median: quantile(&mut self.frame_ms, 0.5),
            frame_ms_p99: quantile(&mut self.frame_ms, 0.99),
            cpu_ms_per_frame,
            edit_latency: self.scene.edit_latency,
        }
    }

    fn open(&mut self, event_loop: &ActiveEventLoop) -> Result<Gfx, RenderError> {
        let (width, height) = self.options.size;
        let attributes = Window::default_attributes()
            .with_title("Buildat")
            .with_inner_size(winit::dpi::PhysicalSize::new(width, height));
        let window = Arc::new(
            event_loop
                .create_window(attributes)
                .map_err(|e| RenderError::Window(e.to_string()))?,
        );
        let instance = gpu::instance();
        let surface = instance
            .create_surface(window.clone())
            .map_err(|e| RenderError::Window(e.to_string()))?;
        let (adapter, device, queue) = gpu::open_device(&instance, Some(&surface))?;
        let size = window.inner_size();
        let mut config = surface
            .get_default_config(&adapter, size.width.max(1), size.height.max(1))
            .ok_or_else(|| RenderError::Window("the surface does not fit the adapter".into()))?;
        let formats = surface.get_capabilities(&adapter).formats;
        if let Some(srgb) = formats.iter().find(|f| f.is_srgb()) {
            config.format = *srgb;
        }
        surface.configure(&device, &config);
        let renderer = Renderer::new(device, queue, config.format);
        Ok(Gfx {
            window,
            surface,
            config,
            renderer,
        })
    }

    fn capture(&mut self, on: bool) {
        let Some(gfx) = &self.gfx else { return };
        let grabbed = !on
            || gfx.window.set_cursor_grab(CursorGrabMode::Locked).is_ok()
            || gfx.window.set_cursor_grab(CursorGrabMode::Confined).is_ok();
        if !on {
            let _ = gfx.window.set_cursor_grab(CursorGrabMode::None);
        }
        gfx.window.set_cursor_visible(!on);
        self.captured = on && grabbed;
    }

    /// The screen drawn on top: the window's own, else the last the game
    /// opened that was not closed here.
    fn top_screen(&self) -> Option<&Screen> {
        top_screen(self.native.as_ref(), &self.scene.ui, &self.dismissed)
    }

    /// The native action of `key`: the user's choice (settings), else the
    /// game's binding unless the user moved that action to another key.
    fn action_of(&self, key: &str) -> Option<Action> {
        action_of(&self.settings, &self.scene.ui.actions, key)
    }

    /// The game's key for `action` (the first, by name).
    fn game_key(&self, action: Action) -> Option<String> {
        self.scene
            .ui
            .actions
            .iter()
            .find(|(_, a)| **a == action)
            .map(|(k, _)| k.clone())
    }

    /// Opens the settings screen on a copy of the settings in force.
    fn open_settings(&mut self) {
        if self.login.is_some() {
            return;
        }
        self.settings_edit = Some(self.settings.clone());
        self.rebinding = None;
        self.show_settings();
    }

    fn show_settings(&mut self) {
        if let Some(edit) = &self.settings_edit {
            let screen = native::settings(edit, self.rebinding, |a| self.game_key(a));
            self.native = Some(screen);
        }
    }

    /// Closes the window's own screen (not the login prompt).
    fn close_native(&mut self) {
        if self.login.is_none() {
            self.native = None;
            self.settings_edit = None;
            self.rebinding = None;
        }
    }

    /// A button of the window's own screens.
    fn native_click(&mut self, widget: &str) {
        match widget {
            "resume" => self.close_native(),
            "settings" => self.open_settings(),
            "save" => {
                if let Some(edit) = self.settings_edit.take() {
                    if let Some(path) = &self.options.settings_path
                        && let Err(error) = edit.save(path)
                    {
                        eprintln!(
                            "buildat-client: cannot save the settings to {}: {error}",
                            path.display()
                        );
                    }
                    self.settings = edit;
                }
                self.close_native();
            }
            "close" => self.close_native(),
            "login" | "guest" => self.answer_login(widget == "login"),
            _ => {
                let Some(edit) = &mut self.settings_edit else {
                    return;
                };
                if let Some(action) = widget.strip_prefix("key:").and_then(Action::parse) {
                    self.rebinding = Some(action);
                } else {
                    let sens = |s: f32, f: f32| {
                        let (lo, hi) = settings::MOUSE_SENSITIVITY;
                        ((s * f * 100.0).round() / 100.0).clamp(lo, hi)
                    };
                    // A radius in chunks one step down or up, within its bounds.
                    let step = |radius: &mut u32, up: bool, (lo, hi): (u32, u32)| {
                        *radius = if up {
                            *radius + 1
                        } else {
                            radius.saturating_sub(1)
                        };
                        *radius = (*radius).clamp(lo, hi);
                    };
                    match widget {
                        "radius-" => step(&mut edit.view_radius, false, settings::VIEW_RADIUS),
                        "radius+" => step(&mut edit.view_radius, true, settings::VIEW_RADIUS),
                        "detail-" => step(&mut edit.detail_radius, false, settings::DETAIL_RADIUS),
                        "detail+" => step(&mut edit.detail_radius, true, settings::DETAIL_RADIUS),
                        "coarse-" => step(&mut edit.coarse_radius, false, settings::DETAIL_RADIUS),
                        "coarse+" => step(&mut edit.coarse_radius, true, settings::DETAIL_RADIUS),
                        "fov-" => edit.fov = (edit.fov - 5.0).max(settings::FOV.0),
                        "fov+" => edit.fov = (edit.fov + 5.0).min(settings::FOV.1),
                        "mouse-" => edit.mouse_sensitivity = sens(edit.mouse_sensitivity, 0.8),
                        "mouse+" => edit.mouse_sensitivity = sens(edit.mouse_sensitivity, 1.25),
                        _ => return,
                    }
                }
                self.show_settings();
            }
        }
    }

    /// The login prompt answered: with the password typed (`login`), or
    /// as a guest. The session connects once it has the answer.
    fn answer_login(&mut self, with_password: bool) {
        let Some(request) = &self.login else {
            return;
        };
        let name = self
            .ui_view
            .fields
            .get("name")
            .map_or("", |n| n.trim())
            .to_string();
        let password = self
            .ui_view
            .fields
            .get("password")
            .cloned()
            .unwrap_or_default();
        let message = if name.is_empty() || name.len() > 32 {
            "A name of 1 to 32 bytes, please"
        } else if with_password && password.is_empty() {
            "Type the password, or play as a guest"
        } else {
            ""
        };
        if !message.is_empty() {
            self.native = Some(native::login(&request.server, &name, message));
            return;
        }
        eprintln!(
            "buildat-client: logging in as {name}{}",
            if with_password { "" } else { " (a guest)" }
        );
        let choice = LoginChoice {
            name,
            password: with_password.then_some(password),
        };
        let _ = request.reply.send(choice);
        self.login = None;
        self.native = None;
        self.ui_view.masked.clear();
        self.ui_view.fields.clear();
        self.ui_view.focus = None;
    }

    /// Releases every held key (the game's handlers hear each go up), so
    /// nothing stays pressed while the chat or a field takes the keys.
    fn release_keys(&mut self) {
        for key in std::mem::take(&mut self.held_keys) {
            if self.action_of(&key).is_none() {
                let _ = self.link.to_session.send(FromFrontend::Key {
                    key,
                    pressed: false,
                });
            }
        }
    }

    /// A key while the chat line or a screen's field takes typed text:
    /// Enter submits, Esc closes, Backspace deletes, the rest is text.
    /// Returns false when no text entry is open.
    fn text_key(&mut self, name: &str, pressed: bool, text: Option<&str>) -> bool {
        let focus = self.ui_view.focus.clone();
        let screen = self.top_screen().map(|s| s.id.clone());
        let entry = if self.ui_view.chat_input.is_some() {
            None
        } else if let (Some(field), Some(screen)) = (focus, screen) {
            Some((screen, field))
        } else {
            return false;
        };
        if !pressed {
            return true;
        }
        let buffer = match &entry {
            None => self.ui_view.chat_input.get_or_insert_default(),
            Some((_, field)) => self.ui_view.fields.entry(field.clone()).or_default(),
        };
        match name {
            "Escape" => match entry {
                None => self.ui_view.chat_input = None,
                Some(_) => self.ui_view.focus = None,
            },
            "Enter" | "NumpadEnter" => {
                let text = std::mem::take(buffer);
                match entry {
                    None => {
                        self.ui_view.chat_input = None;
                        if !text.trim().is_empty() {
                            let _ = self.link.to_session.send(FromFrontend::ChatSubmit(text));
                        }
                    }
                    Some((screen, widget)) if screen.starts_with('@') => {
                        // The login prompt: Enter logs in.
                        self.ui_view.fields.insert(widget, text);
                        self.answer_login(true);
                    }
                    Some((screen, widget)) => {
                        self.ui_view.focus = None;
                        let _ = self.link.to_session.send(FromFrontend::FieldSubmit {
                            screen,
                            widget,
                            text,
                        });
                    }
                }
            }
            "Backspace" => {
                buffer.pop();
            }
            "Tab" if entry.as_ref().is_some_and(|(s, _)| s.starts_with('@')) => {
                // The login prompt: from the name to the password and back.
                let next = match self.ui_view.focus.as_deref() {
                    Some("name") => "password",
                    _ => "name",
                };
                self.ui_view.focus = Some(next.into());
            }
            _ => {
                for c in text.unwrap_or("").chars().filter(|c| !c.is_control()) {
                    if buffer.len() + c.len_utf8() <= MAX_TEXT_BYTES {
                        buffer.push(c);
                    }
                }
            }
        }
        true
    }

    fn key(&mut self, name: String, pressed: bool, text: Option<&str>) {
        if let Some(action) = self.rebinding {
            // The settings screen waits for the action's new key.
            if pressed {
                if name != "Escape"
                    && let Some(edit) = &mut self.settings_edit
                {
                    edit.keys.insert(action.name().to_string(), name);
                }
                self.rebinding = None;
                self.show_settings();
            }
            return;
        }
        if self.text_key(&name, pressed, text) {
            return;
        }
        if name == "F10" && pressed && self.ui_view.chat_input.is_none() {
            match self.native.as_ref().map(|s| s.id.as_str()) {
                Some(native::SETTINGS) => self.close_native(),
                _ => self.open_settings(),
            }
            return;
        }
        if let Some(screen) = self.top_screen() {
            if name == "Escape" {
                if pressed && screen.id.starts_with('@') {
                    self.close_native();
                } else if pressed {
                    let (id, serial) = (screen.id.clone(), screen.serial);
                    self.dismissed.insert(serial);
                    self.press = None;
                    self.ui_view.drag = None;
                    let _ = self.link.to_session.send(FromFrontend::ScreenClosed(id));
                }
                return;
            }
            if screen.id.starts_with('@') || self.action_of(&name).is_some() {
                return; // no walking (or game keys) behind the window's screens
            }
        }
        if name == "Escape" && pressed && self.ui_view.chat_input.is_none() {
            // Esc's menu (which frees the mouse); the game hears Esc too.
            self.native = Some(native::menu());
        }
        let action = self.action_of(&name);
        if pressed {
            if !self.held_keys.insert(name.clone()) {
                return; // auto-repeat
            }
        } else {
            self.held_keys.remove(&name);
        }
        if action == Some(Action::FreeMouse) && pressed {
            let on = !self.captured;
            self.capture(on);
        }
        if action.is_none() {
            let _ = self
                .link
                .to_session
                .send(FromFrontend::Key { key: name, pressed });
        }
    }

    /// Follows the UI state: the chat opened by the game, chat lines'
    /// ages, the top screen (the mouse freed while one is open, captured
    /// again once none is), what is under the mouse.
    fn sync_ui(&mut self, now: Instant) {
        let chat = self.scene.ui.chat_open.clone();
        if let Some((serial, prefix)) = chat
            && serial != self.chat_seen
        {
            self.chat_seen = serial;
            self.ui_view.chat_input = Some(prefix);
            self.release_keys();
        }
        let lines = &self.scene.ui.chat_lines;
        self.chat_times
            .retain(|serial, _| lines.iter().any(|l| l.serial == *serial));
        self.ui_view.chat_alpha.clear();
        for line in lines {
            let came = *self.chat_times.entry(line.serial).or_insert(now);
            let age = now.duration_since(came).as_secs_f32();
            let alpha = ((CHAT_GONE - age) / (CHAT_GONE - CHAT_SHOWN)).clamp(0.0, 1.0);
            self.ui_view.chat_alpha.insert(line.serial, alpha);
        }
        let screens = &self.scene.ui.screens;
        self.dismissed
            .retain(|serial| screens.iter().any(|s| s.serial == *serial));
        let top = self.top_screen().map(|s| s.serial);
        if top != self.screen_seen {
            self.screen_seen = top;
            if self.login.is_none() {
                self.ui_view.focus = None;
                self.ui_view.fields.clear();
            }
            self.ui_view.drag = None;
            self.press = None;
            match top {
                Some(_) => {
                    self.release_keys();
                    self.capture(false);
                    self.log_layout();
                }
                None => self.capture(true),
            }
        }
        self.ui_view.hover = self.ui_view.cursor.and_then(|[x, y]| self.hit(x, y));
    }

    /// What is at (x, y) pixels: the top screen's widgets, else the
    /// hotbar's item slots (while a screen is open).
    fn hit(&self, x: f32, y: f32) -> Option<Hit> {
        let screen = self.top_screen()?;
        let (width, height) = self.size();
        ScreenLayout::new(screen, width, height)
            .hit(screen, x, y)
            .or_else(|| {
                hotbar_hit(&self.scene.ui, width, height, x, y).map(|index| Hit::Slot {
                    grid: "hotbar".into(),
                    index,
                })
            })
    }

    fn size(&self) -> (u32, u32) {
        self.gfx
            .as_ref()
            .map_or(self.options.size, |g| (g.config.width, g.config.height))
    }

    /// With `-v`, where the top screen's grids, buttons and fields are
    /// (tests aim the mouse with it).
    fn log_layout(&self) {
        if !self.options.verbose {
            return;
        }
        let Some(screen) = self.top_screen() else {
            return;
        };
        let (width, height) = self.size();
        let layout = ScreenLayout::new(screen, width, height);
        for widget in &screen.widgets {
            let (what, id) = match &widget.kind {
                WidgetKind::Slots { id, columns, .. } => {
                    let r = layout.slot(widget, *columns, 0);
                    eprintln!(
                        "buildat-client: ui: screen {} grid {id} at {},{} cell {}",
                        screen.id,
                        r.x.round(),
                        r.y.round(),
                        layout.cell.round()
                    );
                    continue;
                }
                WidgetKind::Button { id, .. } => ("button", id),
                WidgetKind::Field { id, .. } => ("field", id),
                _ => continue,
            };
            let r = layout.widget(widget);
            eprintln!(
                "buildat-client: ui: screen {} {what} {id} at {},{} size {},{}",
                screen.id,
                r.x.round(),
                r.y.round(),
                r.w.round(),
                r.h.round()
            );
        }
    }

    /// The stack shown in slot `index` of grid `grid` (on the top screen,
    /// else the hotbar).
    fn stack_count(&self, grid: &str, index: usize) -> Option<u32> {
        let on_screen = self.top_screen().and_then(|screen| {
            screen.widgets.iter().find_map(|w| match &w.kind {
                WidgetKind::Slots { id, slots, .. } if id == grid => {
                    Some(slots.get(index).cloned().flatten())
                }
                _ => None,
            })
        });
        let stack = match on_screen {
            Some(stack) => stack,
            None if grid == "hotbar" => self
                .scene
                .ui
                .hotbar_slots
                .as_ref()
                .and_then(|s| s.get(index).cloned().flatten()),
            None => None,
        };
        stack.map(|s| s.count)
    }

    /// A mouse button on the top screen: a slot starts a drag (or a click),
    /// a button is clicked, a field takes the keys.
    fn screen_button(&mut self, button: Button, pressed: bool) {
        let Some(screen) = self.top_screen().cloned() else {
            return;
        };
        let screen_id = screen.id.clone();
        let hit = self.ui_view.cursor.and_then(|[x, y]| self.hit(x, y));
        if pressed {
            if let Some((Hit::Slot { grid, index }, Button::Left)) = &self.press {
                // A right click while dragging drops one into the slot under
                // the mouse; the drag goes on.
                if button == Button::Right
                    && let Some(Hit::Slot {
                        grid: to_grid,
                        index: to_index,
                    }) = &hit
                    && (to_grid, to_index) != (grid, index)
                {
                    let _ = self.link.to_session.send(FromFrontend::SlotMove {
                        from: (grid.clone(), *index),
                        to: (to_grid.clone(), *to_index),
                        count: Some(1),
                        screen: screen_id,
                    });
                }
                return;
            }
            if self.press.is_some() {
                return;
            }
            match &hit {
                Some(Hit::Slot { grid, index }) => {
                    if self.stack_count(grid, *index).is_some() {
                        self.ui_view.drag = Some((grid.clone(), *index));
                    }
                    self.press = hit.clone().map(|h| (h, button));
                }
                Some(Hit::Button(widget))
                    if button == Button::Left && screen_id.starts_with('@') =>
                {
                    self.native_click(widget);
                }
                Some(Hit::Button(widget)) if button == Button::Left => {
                    let _ = self.link.to_session.send(FromFrontend::ButtonClick {
                        screen: screen_id,
                        widget: widget.clone(),
                    });
                }
                Some(Hit::Field(widget)) if button == Button::Left => {
                    let text = screen.widgets.iter().find_map(|w| match &w.kind {
                        WidgetKind::Field { id, text, .. } if id == widget => Some(text.clone()),
                        _ => None,
                    });
                    self.ui_view
                        .fields
                        .entry(widget.clone())
                        .or_insert_with(|| text.unwrap_or_default());
                    self.ui_view.focus = Some(widget.clone());
                }
                None if screen_id == native::MENU => {
                    // A click beside the menu goes back to the game.
                    let (width, height) = self.size();
                    let panel = ScreenLayout::new(&screen, width, height).panel;
                    let [x, y] = self.ui_view.cursor.unwrap_or([0.0, 0.0]);
                    if !panel.contains(x, y) {
                        self.close_native();
                    }
                }
                _ => self.ui_view.focus = None,
            }
            return;
        }
        if self.press.as_ref().is_some_and(|(_, down)| *down != button) {
            return; // another button than the drag's (a right click dropping one)
        }
        let Some((Hit::Slot { grid, index }, _)) = self.press.take() else {
            return;
        };
        self.ui_view.drag = None;
        let clickable = screen.widgets.iter().any(
            |w| matches!(&w.kind, WidgetKind::Slots { id, clickable: true, .. } if *id == grid),
        );
        let message = match hit {
            Some(Hit::Slot {
                grid: to_grid,
                index: to_index,
            }) if (to_grid.as_str(), to_index) != (grid.as_str(), index) => {
                let Some(count) = self.stack_count(&grid, index) else {
                    return;
                };
                FromFrontend::SlotMove {
                    from: (grid, index),
                    to: (to_grid, to_index),
                    count: match button {
                        Button::Right => Some(count.div_ceil(2)),
                        _ => None,
                    },
                    screen: screen_id,
                }
            }
            Some(Hit::Slot { .. }) if clickable => FromFrontend::SlotClick {
                grid,
                index,
                button,
                screen: screen_id,
            },
            _ => return,
        };
        let _ = self.link.to_session.send(message);
    }

    fn intent(&self) -> Intent {
        if self.ui_view.chat_input.is_some() || self.top_screen().is_some() {
            return Intent::default();
        }
        let held = |action: Action| {
            self.held_keys
                .iter()
                .any(|key| self.action_of(key) == Some(action))
        };
        Intent {
            forward: held(Action::Forward),
            back: held(Action::Back),
            left: held(Action::Left),
            right: held(Action::Right),
            jump: held(Action::Jump),
        }
    }

    fn frame(&mut self, event_loop: &ActiveEventLoop) {
        let now = Instant::now();
        let seconds = now.duration_since(self.last_frame).as_secs_f64();
        self.last_frame = now;
        if seconds > 0.0 {
            self.fps = self.fps * 0.9 + (1.0 / seconds as f32) * 0.1;
        }
        if let Some(player) = &self.player {
            let eye = player.eye().floor().as_ivec3().to_array();
            self.scene.focus = Some(buildat_voxel::geometry::chunk_of_voxel(eye));
            self.scene.detail_radius = self.settings.detail_radius;
            self.scene.coarse_radius = self.settings.coarse_radius;
        }
        self.scene.frame += 1;
        self.scene.receive(&self.link);
        self.scene.collect(Duration::from_millis(8));
        if self.scene.ended || self.options.deadline.is_some_and(|d| now >= d) {
            event_loop.exit();
            return;
        }
        if let Some((serial, [x, y, z])) = self.scene.ui.teleport
            && serial != self.teleport_seen
        {
            self.teleport_seen = serial;
            self.player = Some(Player::new(DVec3::new(x, y, z)));
        }
        self.sync_ui(now);
        let intent = self.intent();
        let scene = &self.scene;
        let solid = |v: [i32; 3]| scene.solid(v);
        if let Some(player) = &mut self.player {
            player.step(&solid, intent, self.yaw, seconds);
            let feet = player.feet;
            let moved = self.reported.is_none_or(|r| r.distance(feet) > 0.01);
            if moved && now.duration_since(self.last_report) >= MOVE_REPORT_EVERY {
                self.last_report = now;
                self.reported = Some(feet);
                let _ = self
                    .link
                    .to_session
                    .send(FromFrontend::Moved(feet.to_array()));
            }
        }
        let eye = self
            .player
            .map_or(Vec3::new(0.0, 40.0, 0.0), |p| p.eye().as_vec3());
        let camera = Camera {
            eye,
            yaw: self.yaw,
            pitch: self.pitch,
            fov: self.settings.fov,
        };
        self.target = player::cast_ray(&solid, eye, camera.forward(), player::REACH);
        let Some(gfx) = &mut self.gfx else { return };
        if self.opened.is_none() {
            self.opened = Some((now, process_cpu_seconds()));
        } else {
            self.frame_ms.push((seconds * 1e3) as f32);
        }
        if let Some(atlas) = self.scene.atlas() {
            gfx.renderer.set_atlas(atlas, self.scene.atlas_version);
        }
        for (chunk, mesh) in self.scene.take_ready() {
            gfx.renderer.set_chunk(chunk, mesh.as_ref());
        }
        let mut extras = FrameExtras {
            daylight: self.scene.ui.daylight,
            underwater: self.scene.underwater(eye),
            reachable: self.scene.reachable_chunks(eye),
            occlusion: self.scene.occludes_from(eye),
            ..FrameExtras::default()
        };
        self.scene.ease_boxes(seconds);
        self.scene.box_triangles(&mut extras.world_triangles);
        // Models (E): eased like boxes, animated by the window's clock.
        let clock = self
            .opened
            .map_or(0.0, |(t, _)| now.duration_since(t).as_secs_f64());
        gfx.renderer.models.ease(&self.scene.ui.models, seconds);
        let scene = &self.scene;
        gfx.renderer.models.place(
            &scene.ui.models,
            &|name| scene.file(name),
            clock,
            &mut extras.world_triangles,
        );
        if let Some(target) = self.target {
            let min = Vec3::from(target.voxel.map(|c| c as f32)) - Vec3::splat(0.002);
            gpu::box_lines(
                min,
                min + Vec3::splat(1.004),
                [0.05, 0.05, 0.05, 1.0],
                &mut extras.world_lines,
            );
        }
        let (width, height) = (gfx.config.width, gfx.config.height);
        let mut overlay = Overlay::new(width, height);
        overlay.crosshair();
        let position = self.player.map_or_else(
            || "waiting for spawn".to_string(),
            |p| format!("{:.1} {:.1} {:.1}", p.feet.x, p.feet.y, p.feet.z),
        );
        let own = [
            format!("pos {position}"),
            format!("{:.0} fps  {} chunks", self.fps, self.scene.chunk_count()),
        ];
        let lines = own
            .iter()
            .map(String::as_str)
            .chain(self.scene.ui.texts.values().map(String::as_str));
        overlay.lines(lines);
        extras.screen_triangles = overlay.triangles;
        // The screen input goes to is the one drawn: the window's own
        // (menu, settings, login) over the game's.
        let top = top_screen(self.native.as_ref(), &self.scene.ui, &self.dismissed);
        let mut painter = UiPainter::new(width, height);
        let renderer = &mut gfx.renderer;
        let mut pictures = ScenePictures::new(&mut renderer.ui, &renderer.queue, &self.scene);
        painter.ui(&mut pictures, &self.scene.ui, top, &self.ui_view);
        renderer
            .ui
            .set_vertices(&renderer.device, &renderer.queue, &painter.vertices);
        let frame = match gfx.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(frame)
            | wgpu::CurrentSurfaceTexture::Suboptimal(frame) => frame,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                gfx.surface.configure(&gfx.renderer.device, &gfx.config);
                return;
            }
            _ => return,
        };
        let view = frame.texture.create_view(&Default::default());
        // The user's drawing distance (settings) caps what is held.
        let most = (self.settings.view_radius * buildat_voxel::geometry::CHUNK_SIZE as u32) as f32;
        let radius = self.scene.view_radius(eye.to_array()).min(most);
        gfx.renderer
            .draw(&view, (width, height), &camera, radius, &extras);
        gfx.window.pre_present_notify();
        gfx.renderer.queue.present(frame);
    }
}

/// The screen on top, which input goes to and which is drawn: the
/// window's own (`native`: menu, settings, login prompt), else the last
/// one the game opened that was not closed in the window (`dismissed`:
/// their serials).
fn top_screen<'a>(
    native: Option<&'a Screen>,
    ui: &'a UiState,
    dismissed: &HashSet<u64>,
) -> Option<&'a Screen> {
    native.or_else(|| {
        ui.screens
            .iter()
            .rev()
            .find(|s| !dismissed.contains(&s.serial))
    })
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.gfx.is_some() {
            return;
        }
        match self.open(event_loop) {
            Ok(gfx) => {
                self.gfx = Some(gfx);
                self.capture(true);
            }
            Err(error) => {
                self.error = Some(error);
                event_loop.exit();
            }
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _id: WindowId, event: WindowEvent) {
        match event {
            WindowEvent::CloseRequested => event_loop.exit(),
            WindowEvent::Resized(size) => {
                if let Some(gfx) = &mut self.gfx
                    && size.width > 0
                    && size.height > 0
                {
                    gfx.config.width = size.width;
                    gfx.config.height = size.height;
                    gfx.surface.configure(&gfx.renderer.device, &gfx.config);
                }
            }
            WindowEvent::KeyboardInput { event, .. } => {
                if let PhysicalKey::Code(code) = event.physical_key {
                    let pressed = event.state == ElementState::Pressed;
                    self.key(key_name(code), pressed, event.text.as_deref());
                }
            }
            WindowEvent::CursorMoved { position, .. } => {
                self.ui_view.cursor = Some([position.x as f32, position.y as f32]);
            }
            WindowEvent::CursorLeft { .. } => self.ui_view.cursor = None,
            WindowEvent::MouseInput { state, button, .. } => {
                let button = match button {
                    MouseButton::Left => Button::Left,
                    MouseButton::Right => Button::Right,
                    MouseButton::Middle => Button::Middle,
                    _ => return,
                };
                let pressed = state == ElementState::Pressed;
                if self.top_screen().is_some() {
                    self.ui_view.hover = self.ui_view.cursor.and_then(|[x, y]| self.hit(x, y));
                    self.screen_button(button, pressed);
                    return;
                }
                if !pressed || self.ui_view.chat_input.is_some() {
                    return;
                }
                if !self.captured {
                    self.capture(true);
                    return;
                }
                let _ = self.link.to_session.send(FromFrontend::Click {
                    button,
                    target: self.target,
                });
            }
            WindowEvent::MouseWheel { delta, .. } => {
                let lines = match delta {
                    MouseScrollDelta::LineDelta(_, y) => y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                if lines != 0.0 {
                    let key = if lines > 0.0 { "WheelUp" } else { "WheelDown" };
                    for pressed in [true, false] {
                        let _ = self.link.to_session.send(FromFrontend::Key {
                            key: key.to_string(),
                            pressed,
                        });
                    }
                }
            }
            WindowEvent::Focused(false) => {
                self.held_keys.clear();
                self.capture(false);
            }
            WindowEvent::RedrawRequested => self.frame(event_loop),
            _ => {}
        }
    }

    fn device_event(&mut self, _event_loop: &ActiveEventLoop, _id: DeviceId, event: DeviceEvent) {
        if let DeviceEvent::MouseMotion { delta: (dx, dy) } = event
            && self.captured
        {
            let sensitivity = self.settings.mouse_sensitivity;
            self.yaw = (self.yaw + dx as f32 * sensitivity).rem_euclid(360.0);
            self.pitch = (self.pitch - dy as f32 * sensitivity).clamp(-89.0, 89.0);
        }
    }

    fn about_to_wait(&mut self, _event_loop: &ActiveEventLoop) {
        if let Some(gfx) = &self.gfx {
            gfx.window.request_redraw();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The window's own screen is the one on top (drawn, and given the
    /// input) over any the game opened; else the game's last one not
    /// closed in the window.
    #[test]
    fn the_windows_own_screen_is_drawn_over_the_games() {
        let game = |id: &str, serial| Screen {
            id: id.into(),
            serial,
            title: id.into(),
            columns: 4.0,
            rows: 2.0,
            widgets: Vec::new(),
        };
        let ui = UiState {
            screens: vec![game("chest", 1), game("craft", 2)],
            ..UiState::default()
        };
        let none = HashSet::new();
        assert_eq!(top_screen(None, &ui, &none).map(|s| s.serial), Some(2));
        let dismissed = HashSet::from([2]);
        assert_eq!(top_screen(None, &ui, &dismissed).map(|s| s.serial), Some(1));
        let menu = native::menu();
        assert_eq!(
            top_screen(Some(&menu), &ui, &none).map(|s| s.id.as_str()),
            Some(native::MENU)
        );
        assert!(top_screen(None, &UiState::default(), &none).is_none());
    }

    /// A key the user chose in the settings does its action, the game's
    /// key for that action no longer does, the game's other keys stay.
    #[test]
    fn the_settings_keys_replace_the_games_keys_for_their_actions() {
        let actions = std::collections::BTreeMap::from([
            ("W".to_string(), Action::Forward),
            ("Space".to_string(), Action::Jump),
        ]);
        let mut settings = ClientSettings::default();
        assert_eq!(action_of(&settings, &actions, "W"), Some(Action::Forward));
        settings.keys.insert("forward".into(), "Z".into());
        assert_eq!(action_of(&settings, &actions, "Z"), Some(Action::Forward));
        assert_eq!(action_of(&settings, &actions, "W"), None, "moved away");
        assert_eq!(action_of(&settings, &actions, "Space"), Some(Action::Jump));
        assert_eq!(action_of(&settings, &actions, "Q"), None);
    }
}
