//! `buildat.ui`: what the game's Lua puts on the screen and which controls
//! it defines, so the game, not the client binary, decides them. The
//! primitives behind it (`ui_*` in the host table) and their Rust side:
//! the [`UiState`] a frontend draws, and the handlers the session calls
//! when the frontend reports a key, a click or a move.
//!
//! Owns: the UI state (text lines, hotbar, native action bindings, boxes,
//! the last teleport, the daylight) and the key, click and move handlers with their
//! limits. Does not own: drawing (`render`), input devices, or the session
//! loop passing events in (`app`). In a headless session the same API
//! exists (`graphical()` is false) and nothing ever calls the handlers.

use std::collections::BTreeMap;
use std::rc::Rc;

use mlua::{Function, Lua, Table, Value};

use super::vm::lua_error;
use super::{Runtime, ScriptError, Shared};
use crate::frontend::{Button, Target};

/// `ui_set_box`'s arguments: id, position, size, optional colour.
type BoxArgs = (
    String,
    f64,
    f64,
    f64,
    f64,
    f64,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

/// Text lines, boxes and key bindings Lua may hold (each).
pub const MAX_UI_ENTRIES: usize = 1_000;
/// Longest text line, in bytes.
pub const MAX_TEXT_BYTES: usize = 200;

/// A movement the client does natively (client-side physics), bound to a
/// key by the game.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Forward,
    Back,
    Left,
    Right,
    Jump,
    /// Frees the mouse (or captures it again).
    FreeMouse,
}

impl Action {
    pub const ALL: [Self; 6] = [
        Self::Forward,
        Self::Back,
        Self::Left,
        Self::Right,
        Self::Jump,
        Self::FreeMouse,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Self::Forward => "forward",
            Self::Back => "back",
            Self::Left => "left",
            Self::Right => "right",
            Self::Jump => "jump",
            Self::FreeMouse => "free_mouse",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.name() == name)
    }
}

/// A coloured box in the world (the game draws other players and creatures
/// as boxes).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct UiBox {
    /// Bottom centre.
    pub position: [f64; 3],
    /// Width (x and z) and height.
    pub size: [f32; 2],
    pub colour: [f32; 3],
}

/// The light of the time of day (`buildat.ui.set_daylight`): how much of
/// the voxels' sunlight shines, and the sky's colour.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Daylight {
    /// 0..1: the factor of the sunlight part of the voxel light (block
    /// light is not scaled).
    pub sun: f32,
    /// The sky (clear and fog) colour, channels 0..1, linear.
    pub sky: [f32; 3],
}

/// What the frontend draws and how it moves the player, as Lua set it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UiState {
    /// Text lines by id, drawn in id order under the client's own overlay.
    pub texts: BTreeMap<String, String>,
    /// Block names in the hotbar, and the selected slot (0-based).
    pub hotbar: Vec<String>,
    pub selected: usize,
    /// Key name → native action.
    pub actions: BTreeMap<String, Action>,
    /// Boxes by id.
    pub boxes: BTreeMap<String, UiBox>,
    /// The last `set_position` (a serial, so a repeat of the same position
    /// still moves the player back there) and feet position.
    pub teleport: Option<(u64, [f64; 3])>,
    /// The time of day's light; `None`: full sun under the client's own sky.
    pub daylight: Option<Daylight>,
}

/// A key bound to a Lua function by the file `owner`.
pub(super) struct KeyHandler {
    owner: Rc<str>,
    key: String,
    func: Function,
}

/// A click or move handler of the file `owner`.
pub(super) struct Handler {
    owner: Rc<str>,
    func: Function,
}

/// Lua's UI state and handlers.
#[derive(Default)]
pub(super) struct Ui {
    pub(super) graphical: bool,
    pub(super) state: UiState,
    /// Set when `state` changes; the session takes it to tell the frontend.
    pub(super) changed: bool,
    keys: Vec<KeyHandler>,
    clicks: Vec<Handler>,
    moves: Vec<Handler>,
}

/// Which of the UI's handler lists a registration function fills.
type HandlerList = fn(&mut Ui) -> &mut Vec<Handler>;

fn finite(values: &[f64]) -> mlua::Result<()> {
    if values.iter().all(|v| v.is_finite()) {
        Ok(())
    } else {
        Err(lua_error("expected finite numbers"))
    }
}

fn check_len(what: &str, len: usize) -> mlua::Result<()> {
    if len >= MAX_UI_ENTRIES {
        Err(lua_error(format!("over {MAX_UI_ENTRIES} {what}")))
    } else {
        Ok(())
    }
}

impl Runtime {
    /// The `ui_*` primitives boot.lua wraps as `buildat.ui`.
    pub(super) fn ui_functions(lua: &Lua, shared: &Rc<Shared>, host: &Table) -> mlua::Result<()> {
        let s = shared.clone();
        host.raw_set(
            "ui_graphical",
            lua.create_function(move |_, ()| Ok(s.ui.borrow().graphical))?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_set_text",
            lua.create_function(move |_, (id, text): (String, Option<String>)| {
                let mut ui = s.ui.borrow_mut();
                match text {
                    Some(mut text) => {
                        if !ui.state.texts.contains_key(&id) {
                            check_len("text lines", ui.state.texts.len())?;
                        }
                        if text.len() > MAX_TEXT_BYTES {
                            let mut end = MAX_TEXT_BYTES;
                            while !text.is_char_boundary(end) {
                                end -= 1;
                            }
                            text.truncate(end);
                        }
                        ui.state.texts.insert(id, text);
                    }
                    None => {
                        ui.state.texts.remove(&id);
                    }
                }
                ui.changed = true;
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_bind",
            lua.create_function(move |_, (owner, key, what): (String, String, Value)| {
                let mut ui = s.ui.borrow_mut();
                ui.keys.retain(|k| k.key != key);
                ui.state.actions.remove(&key);
                match what {
                    Value::String(name) => {
                        let name = name.to_str()?.to_string();
                        let action = Action::parse(&name).ok_or_else(|| {
                            lua_error(format!(
                                "bind: unknown action {name:?} (one of forward, back, left, \
                                 right, jump, free_mouse, or a function)"
                            ))
                        })?;
                        check_len("key bindings", ui.state.actions.len())?;
                        ui.state.actions.insert(key, action);
                    }
                    Value::Function(func) => {
                        check_len("key bindings", ui.keys.len())?;
                        ui.keys.push(KeyHandler {
                            owner: owner.into(),
                            key,
                            func,
                        });
                    }
                    Value::Nil => {}
                    other => {
                        return Err(lua_error(format!(
                            "bind: expected an action name, a function or nil, not a {}",
                            other.type_name()
                        )));
                    }
                }
                ui.changed = true;
                Ok(())
            })?,
        )?;

        for (name, what, list) in [
            (
                "ui_on_click",
                "click handlers",
                (|ui| &mut ui.clicks) as HandlerList,
            ),
            ("ui_on_move", "move handlers", |ui| &mut ui.moves),
        ] {
            let s = shared.clone();
            host.raw_set(
                name,
                lua.create_function(move |_, (owner, func): (String, Function)| {
                    let mut ui = s.ui.borrow_mut();
                    let handlers = list(&mut ui);
                    check_len(what, handlers.len())?;
                    handlers.push(Handler {
                        owner: owner.into(),
                        func,
                    });
                    Ok(())
                })?,
            )?;
        }

        let s = shared.clone();
        host.raw_set(
            "ui_set_hotbar",
            lua.create_function(move |_, names: Vec<String>| {
                let mut ui = s.ui.borrow_mut();
                check_len("hotbar slots", names.len())?;
                ui.state.selected = ui.state.selected.min(names.len().saturating_sub(1));
                ui.state.hotbar = names;
                ui.changed = true;
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_select",
            lua.create_function(move |_, slot: i64| {
                let mut ui = s.ui.borrow_mut();
                let len = i64::try_from(ui.state.hotbar.len()).unwrap_or(i64::MAX);
                if len > 0 {
                    // 1-based in Lua; wraps both ways, so the wheel cycles.
                    ui.state.selected = usize::try_from((slot - 1).rem_euclid(len)).unwrap_or(0);
                    ui.changed = true;
                }
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_selected",
            lua.create_function(move |_, ()| {
                let ui = s.ui.borrow();
                let name = ui.state.hotbar.get(ui.state.selected).cloned();
                Ok((name.as_ref().map(|_| ui.state.selected + 1), name))
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_set_box",
            lua.create_function(move |_, (id, x, y, z, width, height, r, g, b): BoxArgs| {
                finite(&[x, y, z, width, height])?;
                let mut ui = s.ui.borrow_mut();
                if !ui.state.boxes.contains_key(&id) {
                    check_len("boxes", ui.state.boxes.len())?;
                }
                let channel = |c: Option<f64>| c.unwrap_or(1.0).clamp(0.0, 1.0) as f32;
                ui.state.boxes.insert(
                    id,
                    UiBox {
                        position: [x, y, z],
                        size: [
                            width.clamp(0.0, 64.0) as f32,
                            height.clamp(0.0, 64.0) as f32,
                        ],
                        colour: [channel(r), channel(g), channel(b)],
                    },
                );
                ui.changed = true;
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_remove_box",
            lua.create_function(move |_, id: String| {
                let mut ui = s.ui.borrow_mut();
                ui.changed |= ui.state.boxes.remove(&id).is_some();
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_set_daylight",
            lua.create_function(move |_, (sun, r, g, b): (f64, f64, f64, f64)| {
                finite(&[sun, r, g, b])?;
                let channel = |c: f64| c.clamp(0.0, 1.0) as f32;
                let daylight = Some(Daylight {
                    sun: channel(sun),
                    sky: [channel(r), channel(g), channel(b)],
                });
                let mut ui = s.ui.borrow_mut();
                if ui.state.daylight != daylight {
                    ui.state.daylight = daylight;
                    ui.changed = true;
                }
                Ok(())
            })?,
        )?;

        let s = shared.clone();
        host.raw_set(
            "ui_set_position",
            lua.create_function(move |_, (x, y, z): (f64, f64, f64)| {
                finite(&[x, y, z])?;
                let mut ui = s.ui.borrow_mut();
                let serial = ui.state.teleport.map_or(1, |(n, _)| n + 1);
                ui.state.teleport = Some((serial, [x, y, z]));
                ui.changed = true;
                Ok(())
            })?,
        )?;
        Ok(())
    }

    /// Marks this session as drawn by a frontend (`buildat.ui.graphical()`).
    pub fn set_graphical(&self, on: bool) {
        self.shared.ui.borrow_mut().graphical = on;
    }

    /// The UI state, if it changed since the last call.
    pub fn take_ui_change(&self) -> Option<UiState> {
        let mut ui = self.shared.ui.borrow_mut();
        if !std::mem::take(&mut ui.changed) {
            return None;
        }
        Some(ui.state.clone())
    }

    /// The UI state now.
    pub fn ui_state(&self) -> UiState {
        self.shared.ui.borrow().state.clone()
    }

    /// Calls the functions bound to `key` with `pressed`.
    pub fn dispatch_key(&self, key: &str, pressed: bool) -> Vec<ScriptError> {
        let handlers: Vec<(Rc<str>, Function)> = self
            .shared
            .ui
            .borrow()
            .keys
            .iter()
            .filter(|k| k.key == key)
            .map(|k| (k.owner.clone(), k.func.clone()))
            .collect();
        let context = format!("key handler of {key}");
        handlers
            .into_iter()
            .filter_map(|(owner, func)| {
                self.enter(&owner, Some(&context), || func.call::<()>(pressed))
                    .err()
            })
            .collect()
    }

    /// Calls the click handlers with the button's name and the target
    /// (`{ x, y, z, before = { x, y, z } }`, or nil).
    pub fn dispatch_click(&self, button: Button, target: Option<Target>) -> Vec<ScriptError> {
        let handlers: Vec<(Rc<str>, Function)> = {
            let ui = self.shared.ui.borrow();
            ui.clicks
                .iter()
                .map(|h| (h.owner.clone(), h.func.clone()))
                .collect()
        };
        let context = "click handler";
        handlers
            .into_iter()
            .filter_map(|(owner, func)| {
                self.enter(&owner, Some(context), || {
                    let target = match target {
                        Some(t) => {
                            let table = self.lua.create_table()?;
                            table.raw_set("x", t.voxel[0])?;
                            table.raw_set("y", t.voxel[1])?;
                            table.raw_set("z", t.voxel[2])?;
                            let before = self.lua.create_table()?;
                            before.raw_set("x", t.before[0])?;
                            before.raw_set("y", t.before[1])?;
                            before.raw_set("z", t.before[2])?;
                            table.raw_set("before", before)?;
                            Value::Table(table)
                        }
                        None => Value::Nil,
                    };
                    func.call::<()>((button.name(), target))
                })
                .err()
            })
            .collect()
    }

    /// Calls the move handlers with the player's new feet position.
    pub fn dispatch_move(&self, position: [f64; 3]) -> Vec<ScriptError> {
        let handlers: Vec<(Rc<str>, Function)> = {
            let ui = self.shared.ui.borrow();
            ui.moves
                .iter()
                .map(|h| (h.owner.clone(), h.func.clone()))
                .collect()
        };
        let [x, y, z] = position;
        handlers
            .into_iter()
            .filter_map(|(owner, func)| {
                self.enter(&owner, Some("move handler"), || func.call::<()>((x, y, z)))
                    .err()
            })
            .collect()
    }
}
