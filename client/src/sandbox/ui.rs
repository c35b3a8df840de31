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

use mlua::{FromLuaMulti, Function, IntoLuaMulti, Lua, Table, Value};

use super::{Runtime, ScriptError, Shared};
use crate::frontend::{Button, FromFrontend, Target};
use buildat_luau::lua_error;

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

/// A model in the world (`buildat.ui.set_model`: players, creatures that
/// name one), drawn by `render::models`.
#[derive(Debug, Clone, PartialEq)]
pub struct UiModel {
    /// The `client_data` file, e.g. `creatures/client_data/models/cow.glb`.
    pub file: String,
    /// Bottom centre.
    pub position: [f64; 3],
    /// Degrees: 0 faces +x, 90 faces +z.
    pub yaw: f32,
    /// Voxels a second; the horizontal speed chooses `walk` or `idle`.
    pub velocity: [f32; 3],
}

/// `ui_set_model`'s arguments: id, file, position, optional yaw and
/// velocity.
type ModelArgs = (
    String,
    String,
    f64,
    f64,
    f64,
    Option<f64>,
    Option<f64>,
    Option<f64>,
    Option<f64>,
);

/// The longest model file name, in bytes.
pub const MAX_MODEL_FILE_BYTES: usize = 256;

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
    /// Models by id.
    pub models: BTreeMap<String, UiModel>,
    /// The last `set_position` (a serial, so a repeat of the same position
    /// still moves the player back there) and feet position.
    pub teleport: Option<(u64, [f64; 3])>,
    /// The time of day's light; `None`: full sun under the client's own sky.
    pub daylight: Option<Daylight>,
    /// What a slot draws for each item name (`define_items`).
    pub items: BTreeMap<String, ItemDef>,
    /// Open screens in the order they were opened; the last one is drawn.
    pub screens: Vec<Screen>,
    /// The hotbar as item slots (`set_hotbar_slots`); when set it is drawn
    /// instead of `hotbar`'s names, and `select` works on it.
    pub hotbar_slots: Option<Slots>,
    /// Health points and maximum (`set_health`); `None`: no hearts.
    pub health: Option<(u32, u32)>,
    /// The last `open_chat` (a serial, so a repeat opens it again) and the
    /// text the line starts with.
    pub chat_open: Option<(u64, String)>,
    /// The last [`CHAT_LINES`] chat lines, oldest first.
    pub chat_lines: Vec<ChatLine>,
}

/// Chat lines the UI state keeps (and the window shows).
pub const CHAT_LINES: usize = 10;
/// Open screens at most (only the last is drawn).
pub const MAX_SCREENS: usize = 64;
/// Largest cell coordinate or size of a screen and its widgets.
pub const MAX_CELLS: f64 = 64.0;

/// What a slot draws for an item (`define_items`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ItemDef {
    pub description: String,
    /// A `client_data` file (`main/client_data/textures/stick.png`).
    pub texture: Option<String>,
    /// A voxel name: the icon is an isometric cube of its textures.
    pub voxel: Option<String>,
}

/// A stack of items in a slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stack {
    pub name: String,
    pub count: u32,
    pub wear: u32,
}

/// A grid's slots, `None` where empty.
pub type Slots = Vec<Option<Stack>>;

/// A screen's widget, at `x`, `y` cells from the panel's top left.
#[derive(Debug, Clone, PartialEq)]
pub struct Widget {
    pub x: f32,
    pub y: f32,
    pub kind: WidgetKind,
}

/// What a widget is; sizes in cells.
#[derive(Debug, Clone, PartialEq)]
pub enum WidgetKind {
    /// An item grid; `clickable`: it has an `on_click` (a click without a
    /// drag is reported, the craft preview).
    Slots {
        id: String,
        columns: u32,
        slots: Slots,
        clickable: bool,
    },
    Label {
        text: String,
    },
    Button {
        id: String,
        width: f32,
        text: String,
    },
    Field {
        id: String,
        width: f32,
        text: String,
    },
    Image {
        width: f32,
        height: f32,
        file: String,
    },
}

/// A modal panel the game opened (`open_screen`).
#[derive(Debug, Clone, PartialEq)]
pub struct Screen {
    pub id: String,
    /// Counts openings, so a screen opened again with the same id is new to
    /// the frontend (a text typed into its fields is dropped).
    pub serial: u64,
    pub title: String,
    pub columns: f32,
    pub rows: f32,
    pub widgets: Vec<Widget>,
}

/// A line of the chat, with a serial the frontend times its fading by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatLine {
    pub serial: u64,
    pub text: String,
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

/// The callbacks of an open screen: its `on_close` and its widgets'
/// `on_move`, `on_click`, `on_submit`, by (widget id, callback name).
pub(super) struct ScreenHandlers {
    owner: Rc<str>,
    on_close: Option<Function>,
    widgets: WidgetHandlers,
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
    chats: Vec<Handler>,
    /// By screen id.
    screens: BTreeMap<String, ScreenHandlers>,
    serial: u64,
}

impl Ui {
    fn next_serial(&mut self) -> u64 {
        self.serial += 1;
        self.serial
    }

    /// The hotbar's length: its item slots, else its names.
    fn hotbar_len(&self) -> usize {
        self.state
            .hotbar_slots
            .as_ref()
            .map_or(self.state.hotbar.len(), Vec::len)
    }

    /// Removes `id` from a map of the state (`map` picks it); a change when
    /// it was there.
    fn remove<V>(&mut self, map: fn(&mut UiState) -> &mut BTreeMap<String, V>, id: &str) {
        self.changed |= map(&mut self.state).remove(id).is_some();
    }

    /// Closes the screen `id` (a change when it was open); its handlers.
    fn close_screen(&mut self, id: &str) -> Option<ScreenHandlers> {
        let before = self.state.screens.len();
        self.state.screens.retain(|s| s.id != id);
        self.changed |= self.state.screens.len() != before;
        self.screens.remove(id)
    }

    /// Keeps the selection within the hotbar after it changed.
    fn clamp_selected(&mut self) {
        self.state.selected = self.state.selected.min(self.hotbar_len().saturating_sub(1));
    }
}

/// Which of the UI's handler lists a registration function fills.
type HandlerList = fn(&mut Ui) -> &mut Vec<Handler>;

/// Where the `ui_*` primitives go: the host table, each a Lua function
/// given the shared state.
struct HostFunctions<'a> {
    lua: &'a Lua,
    shared: &'a Rc<Shared>,
    host: &'a Table,
}

impl HostFunctions<'_> {
    /// `host[name]`: calls `f` with the shared state and the arguments.
    fn set<A: FromLuaMulti, R: IntoLuaMulti>(
        &self,
        name: &str,
        f: impl Fn(&Shared, A) -> mlua::Result<R> + 'static,
    ) -> mlua::Result<()> {
        let shared = self.shared.clone();
        self.host.raw_set(
            name,
            self.lua.create_function(move |_, args| f(&shared, args))?,
        )
    }
}

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

/// Room in `map` for `key`: a key already there is replaced, a new one
/// must stay within [`MAX_UI_ENTRIES`].
fn check_room<V>(map: &BTreeMap<String, V>, key: &str, what: &str) -> mlua::Result<()> {
    if map.contains_key(key) {
        Ok(())
    } else {
        check_len(what, map.len())
    }
}

/// A name (an id, a file, an item name): a string of 1 to
/// [`MAX_TEXT_BYTES`] bytes, else an error saying `what` must be one.
fn check_name(value: Value, what: &str) -> mlua::Result<String> {
    match value {
        Value::String(s) if (1..=MAX_TEXT_BYTES).contains(&s.as_bytes().len()) => {
            Ok(s.to_str()?.to_string())
        }
        Value::String(s) => Err(lua_error(format!(
            "{what} must be 1 to {MAX_TEXT_BYTES} bytes long, got {}",
            s.as_bytes().len()
        ))),
        other => Err(lua_error(format!(
            "{what} must be a string, got {}",
            type_of(&other)
        ))),
    }
}

/// `value` as a table, else an error: `expected` and what `value` is.
fn check_table(value: Value, expected: impl FnOnce() -> String) -> mlua::Result<Table> {
    match value {
        Value::Table(table) => Ok(table),
        other => Err(lua_error(format!(
            "{}, got {}",
            expected(),
            type_of(&other)
        ))),
    }
}

/// The length of a list the game passed, at most [`MAX_UI_ENTRIES`]
/// (`what`: whose, `items`: of what).
fn check_list_len(list: &Table, what: &str, items: &str) -> mlua::Result<usize> {
    let len = list.raw_len();
    if len > MAX_UI_ENTRIES {
        return Err(lua_error(format!(
            "{what}: {len} {items}, over {MAX_UI_ENTRIES}"
        )));
    }
    Ok(len)
}

/// `text` cut to [`MAX_TEXT_BYTES`] on a character boundary.
fn cut(mut text: String) -> String {
    if text.len() > MAX_TEXT_BYTES {
        let mut end = MAX_TEXT_BYTES;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Nil => "nothing",
        other => other.type_name(),
    }
}

/// The fields of a table the game passed, read raw (no metamethods), each
/// error naming the call, the part (`what`) and the field.
struct Fields<'a> {
    table: &'a Table,
    what: String,
}

impl Fields<'_> {
    fn error(&self, key: &str, expected: &str, got: &Value) -> mlua::Error {
        lua_error(format!(
            "{}: field {key:?} must be {expected}, got {}",
            self.what,
            type_of(got)
        ))
    }

    fn value(&self, key: &str) -> mlua::Result<Value> {
        self.table.raw_get(key)
    }

    /// A string (a number is taken as its text), cut to the limit;
    /// `None` when absent.
    fn opt_text(&self, key: &str) -> mlua::Result<Option<String>> {
        match self.value(key)? {
            Value::Nil => Ok(None),
            Value::String(s) => Ok(Some(cut(s.to_string_lossy()))),
            Value::Integer(n) => Ok(Some(n.to_string())),
            Value::Number(n) => Ok(Some(n.to_string())),
            other => Err(self.error(key, "a string", &other)),
        }
    }

    /// A name (an id, a file): a string of 1 to [`MAX_TEXT_BYTES`] bytes.
    fn name(&self, key: &str) -> mlua::Result<String> {
        check_name(self.value(key)?, &format!("{}: field {key:?}", self.what))
    }

    /// A finite number in `min..=max`; `default` when absent (`None`:
    /// required).
    fn number(&self, key: &str, default: Option<f64>, min: f64, max: f64) -> mlua::Result<f64> {
        let expected = format!("a number from {min} to {max}");
        let n = match self.value(key)? {
            Value::Nil if let Some(default) = default => return Ok(default),
            Value::Integer(n) => n as f64,
            Value::Number(n) => n,
            other => return Err(self.error(key, &expected, &other)),
        };
        if (min..=max).contains(&n) {
            Ok(n)
        } else {
            Err(lua_error(format!(
                "{}: field {key:?} must be {expected}, got {n}",
                self.what
            )))
        }
    }

    fn opt_function(&self, key: &str) -> mlua::Result<Option<Function>> {
        match self.value(key)? {
            Value::Nil => Ok(None),
            Value::Function(f) => Ok(Some(f)),
            other => Err(self.error(key, "a function", &other)),
        }
    }
}

/// A grid's slots from Lua: `{ { name = s, count = n, wear = n } or false,
/// ... }` (also `{ name, count, wear }` by position); a count of 0 is an
/// empty slot.
fn parse_slots(value: Value, what: &str) -> mlua::Result<Slots> {
    let table = check_table(value, || format!("{what}: slots must be a table of stacks"))?;
    let len = check_list_len(&table, what, "slots")?;
    let mut slots = Vec::with_capacity(len);
    for i in 1..=len {
        let stack = match table.raw_get::<Value>(i)? {
            Value::Nil | Value::Boolean(false) => None,
            Value::Table(t) => {
                let fields = Fields {
                    table: &t,
                    what: format!("{what}: slot {i}"),
                };
                let positional = |key: &str, index: i64| -> mlua::Result<Value> {
                    match t.raw_get::<Value>(key)? {
                        Value::Nil => t.raw_get(index),
                        v => Ok(v),
                    }
                };
                let name = check_name(
                    positional("name", 1)?,
                    &format!("{}: field \"name\"", fields.what),
                )?;
                let integer = |key: &str, index: i64, default: u32| -> mlua::Result<u32> {
                    match positional(key, index)? {
                        Value::Nil => Ok(default),
                        Value::Integer(n) => u32::try_from(n).map_err(|_| {
                            lua_error(format!("{what}: slot {i}: {key} {n} is out of range"))
                        }),
                        Value::Number(n)
                            if n.fract() == 0.0 && (0.0..=f64::from(u32::MAX)).contains(&n) =>
                        {
                            Ok(n as u32)
                        }
                        other => Err(fields.error(key, "a whole number, 0 or more", &other)),
                    }
                };
                let count = integer("count", 2, 1)?;
                let wear = integer("wear", 3, 0)?;
                (count > 0).then_some(Stack { name, count, wear })
            }
            other => {
                return Err(lua_error(format!(
                    "{what}: slot {i} must be a stack table or false, got {}",
                    type_of(&other)
                )));
            }
        };
        slots.push(stack);
    }
    Ok(slots)
}

/// One widget of `open_screen`; its callbacks go to `handlers`.
fn parse_widget(
    table: &Table,
    what: String,
    handlers: &mut WidgetHandlers,
) -> mlua::Result<Widget> {
    let f = Fields { table, what };
    let x = f.number("x", Some(0.0), 0.0, MAX_CELLS)? as f32;
    let y = f.number("y", Some(0.0), 0.0, MAX_CELLS)? as f32;
    let kind = match f.value("kind")? {
        Value::String(s) => s.to_str()?.to_string(),
        other => {
            return Err(f.error(
                "kind",
                "\"slots\", \"label\", \"button\", \"field\" or \"image\"",
                &other,
            ));
        }
    };
    let mut handler = |id: &str, name: &'static str| -> mlua::Result<()> {
        if let Some(func) = f.opt_function(name)? {
            handlers.push((id.to_string(), name, func));
        }
        Ok(())
    };
    let kind = match kind.as_str() {
        "slots" => {
            let id = f.name("id")?;
            let columns = f.number("columns", None, 1.0, MAX_CELLS)? as u32;
            let slots = parse_slots(f.value("slots")?, &f.what)?;
            handler(&id, "on_move")?;
            let clickable = f.opt_function("on_click")?.is_some();
            handler(&id, "on_click")?;
            WidgetKind::Slots {
                id,
                columns,
                slots,
                clickable,
            }
        }
        "label" => WidgetKind::Label {
            text: f.opt_text("text")?.unwrap_or_default(),
        },
        "button" | "field" => {
            let button = kind == "button";
            let (callback, width) = if button {
                ("on_click", 3.0)
            } else {
                ("on_submit", 6.0)
            };
            let id = f.name("id")?;
            handler(&id, callback)?;
            let width = f.number("width", Some(width), 0.5, MAX_CELLS)? as f32;
            let text = f.opt_text("text")?.unwrap_or_default();
            if button {
                WidgetKind::Button { id, width, text }
            } else {
                WidgetKind::Field { id, width, text }
            }
        }
        "image" => WidgetKind::Image {
            width: f.number("width", Some(1.0), 0.1, MAX_CELLS)? as f32,
            height: f.number("height", Some(1.0), 0.1, MAX_CELLS)? as f32,
            file: f.name("file")?,
        },
        other => {
            return Err(lua_error(format!(
                "{}: unknown kind {other:?} (one of slots, label, button, field, image)",
                f.what
            )));
        }
    };
    Ok(Widget { x, y, kind })
}

/// A widget's callbacks: (widget id, callback name, function).
type WidgetHandlers = Vec<(String, &'static str, Function)>;

/// `open_screen(id, screen)`'s screen table: the screen, its `on_close`
/// and its widgets' callbacks.
fn parse_screen(
    id: String,
    table: &Table,
) -> mlua::Result<(Screen, Option<Function>, WidgetHandlers)> {
    let what = format!("open_screen {id:?}");
    let f = Fields {
        table,
        what: what.clone(),
    };
    let title = f.opt_text("title")?.unwrap_or_default();
    let columns = f.number("columns", None, 1.0, MAX_CELLS)? as f32;
    let rows = f.number("rows", None, 1.0, MAX_CELLS)? as f32;
    let on_close = f.opt_function("on_close")?;
    let mut handlers = Vec::new();
    let mut widgets = Vec::new();
    let mut slots = 0;
    match f.value("widgets")? {
        Value::Nil => {}
        Value::Table(list) => {
            for i in 1..=check_list_len(&list, &what, "widgets")? {
                let table = check_table(list.raw_get(i)?, || {
                    format!("{what}: widget {i} must be a table")
                })?;
                let widget = parse_widget(&table, format!("{what}: widget {i}"), &mut handlers)?;
                if let WidgetKind::Slots { slots: s, .. } = &widget.kind {
                    slots += s.len();
                    if slots > MAX_UI_ENTRIES {
                        return Err(lua_error(format!(
                            "{what}: over {MAX_UI_ENTRIES} slots in all"
                        )));
                    }
                }
                widgets.push(widget);
            }
        }
        other => return Err(f.error("widgets", "a list of widget tables", &other)),
    }
    let screen = Screen {
        id,
        serial: 0,
        title,
        columns,
        rows,
        widgets,
    };
    Ok((screen, on_close, handlers))
}

impl Runtime {
    /// The `ui_*` primitives boot.lua wraps as `buildat.ui`.
    pub(super) fn ui_functions(lua: &Lua, shared: &Rc<Shared>, host: &Table) -> mlua::Result<()> {
        let host = HostFunctions { lua, shared, host };
        host.set("ui_graphical", |s, ()| Ok(s.ui.borrow().graphical))?;

        host.set(
            "ui_set_text",
            move |s, (id, text): (String, Option<String>)| {
                let mut ui = s.ui.borrow_mut();
                match text {
                    Some(text) => {
                        check_room(&ui.state.texts, &id, "text lines")?;
                        ui.state.texts.insert(id, cut(text));
                    }
                    None => {
                        ui.state.texts.remove(&id);
                    }
                }
                ui.changed = true;
                Ok(())
            },
        )?;

        host.set(
            "ui_bind",
            move |s, (owner, key, what): (String, String, Value)| {
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
            },
        )?;

        for (name, what, list) in [
            (
                "on_click",
                "click handlers",
                (|ui| &mut ui.clicks) as HandlerList,
            ),
            ("on_move", "move handlers", |ui| &mut ui.moves),
            ("on_chat", "chat handlers", |ui| &mut ui.chats),
        ] {
            host.set(
                &format!("ui_{name}"),
                move |s, (owner, func): (String, Value)| {
                    let Value::Function(func) = func else {
                        return Err(lua_error(format!(
                            "{name}: expected a function, got {}",
                            type_of(&func)
                        )));
                    };
                    let mut ui = s.ui.borrow_mut();
                    let handlers = list(&mut ui);
                    check_len(what, handlers.len())?;
                    handlers.push(Handler {
                        owner: owner.into(),
                        func,
                    });
                    Ok(())
                },
            )?;
        }

        host.set("ui_set_hotbar", move |s, names: Vec<String>| {
            let mut ui = s.ui.borrow_mut();
            check_len("hotbar slots", names.len())?;
            ui.state.hotbar = names;
            ui.clamp_selected();
            ui.changed = true;
            Ok(())
        })?;

        host.set("ui_select", move |s, slot: i64| {
            let mut ui = s.ui.borrow_mut();
            let len = i64::try_from(ui.hotbar_len()).unwrap_or(i64::MAX);
            if len > 0 {
                // 1-based in Lua; wraps both ways, so the wheel cycles.
                ui.state.selected = usize::try_from((slot - 1).rem_euclid(len)).unwrap_or(0);
                ui.changed = true;
            }
            Ok(())
        })?;

        host.set("ui_selected", move |s, ()| {
            let ui = s.ui.borrow();
            let selected = ui.state.selected;
            if let Some(slots) = &ui.state.hotbar_slots {
                let name = slots.get(selected).cloned().flatten().map(|s| s.name);
                return Ok(((selected < slots.len()).then_some(selected + 1), name));
            }
            let name = ui.state.hotbar.get(selected).cloned();
            Ok((name.as_ref().map(|_| selected + 1), name))
        })?;

        host.set(
            "ui_set_box",
            move |s, (id, x, y, z, width, height, r, g, b): BoxArgs| {
                finite(&[x, y, z, width, height])?;
                let mut ui = s.ui.borrow_mut();
                check_room(&ui.state.boxes, &id, "boxes")?;
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
            },
        )?;

        host.set("ui_remove_box", move |s, id: String| {
            s.ui.borrow_mut().remove(|state| &mut state.boxes, &id);
            Ok(())
        })?;

        host.set(
            "ui_set_model",
            move |s, (id, file, x, y, z, yaw, vx, vy, vz): ModelArgs| {
                let (vx, vy, vz) = (vx.unwrap_or(0.0), vy.unwrap_or(0.0), vz.unwrap_or(0.0));
                let yaw = yaw.unwrap_or(0.0);
                finite(&[x, y, z, yaw, vx, vy, vz])?;
                if file.is_empty() || file.len() > MAX_MODEL_FILE_BYTES {
                    return Err(lua_error(format!(
                        "set_model: file: expected a client_data file name of 1 to \
                         {MAX_MODEL_FILE_BYTES} bytes"
                    )));
                }
                let mut ui = s.ui.borrow_mut();
                check_room(&ui.state.models, &id, "models")?;
                let speed = |v: f64| v.clamp(-1000.0, 1000.0) as f32;
                ui.state.models.insert(
                    id,
                    UiModel {
                        file,
                        position: [x, y, z],
                        yaw: yaw.rem_euclid(360.0) as f32,
                        velocity: [speed(vx), speed(vy), speed(vz)],
                    },
                );
                ui.changed = true;
                Ok(())
            },
        )?;

        host.set("ui_remove_model", move |s, id: String| {
            s.ui.borrow_mut().remove(|state| &mut state.models, &id);
            Ok(())
        })?;

        host.set(
            "ui_set_daylight",
            move |s, (sun, r, g, b): (f64, f64, f64, f64)| {
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
            },
        )?;

        host.set("ui_set_position", move |s, (x, y, z): (f64, f64, f64)| {
            finite(&[x, y, z])?;
            let mut ui = s.ui.borrow_mut();
            let serial = ui.state.teleport.map_or(1, |(n, _)| n + 1);
            ui.state.teleport = Some((serial, [x, y, z]));
            ui.changed = true;
            Ok(())
        })?;
        Self::widget_functions(&host)
    }

    /// The game screens' primitives: items, screens, slots, the hotbar's
    /// slots, health and the chat.
    fn widget_functions(host: &HostFunctions<'_>) -> mlua::Result<()> {
        host.set("ui_define_items", move |s, items: Value| {
            let items = check_table(items, || {
                "define_items: expected a table { [name] = { description, texture, voxel } }".into()
            })?;
            let mut parsed = Vec::new();
            for pair in items.pairs::<Value, Value>() {
                let (name, def) = pair?;
                let name = check_name(name, "define_items: a key (an item name)")?;
                let def = check_table(def, || {
                    format!(
                        "define_items: item {name:?} must be a table \
                             {{ description, texture, voxel }}"
                    )
                })?;
                let f = Fields {
                    table: &def,
                    what: format!("define_items: item {name:?}"),
                };
                parsed.push((
                    name,
                    ItemDef {
                        description: f.opt_text("description")?.unwrap_or_default(),
                        // "" (the protocol's empty texture) is none.
                        texture: f.opt_text("texture")?.filter(|t| !t.is_empty()),
                        voxel: f.opt_text("voxel")?.filter(|v| !v.is_empty()),
                    },
                ));
                if parsed.len() > MAX_UI_ENTRIES {
                    return Err(lua_error(format!(
                        "define_items: over {MAX_UI_ENTRIES} items"
                    )));
                }
            }
            let mut ui = s.ui.borrow_mut();
            for (name, def) in parsed {
                check_room(&ui.state.items, &name, "items")?;
                ui.state.items.insert(name, def);
            }
            ui.changed = true;
            Ok(())
        })?;

        host.set(
            "ui_open_screen",
            move |s, (owner, id, screen): (String, Value, Value)| {
                let id = check_name(id, "open_screen: the id")?;
                let table = check_table(screen, || {
                    format!(
                        "open_screen {id:?}: expected a screen table \
                         {{ title, columns, rows, widgets }}"
                    )
                })?;
                let (mut screen, on_close, widgets) = parse_screen(id, &table)?;
                let mut ui = s.ui.borrow_mut();
                let before = ui.state.screens.len();
                ui.state.screens.retain(|s| s.id != screen.id);
                if ui.state.screens.len() == before && before >= MAX_SCREENS {
                    return Err(lua_error(format!(
                        "open_screen: over {MAX_SCREENS} open screens"
                    )));
                }
                screen.serial = ui.next_serial();
                ui.screens.insert(
                    screen.id.clone(),
                    ScreenHandlers {
                        owner: owner.into(),
                        on_close,
                        widgets,
                    },
                );
                ui.state.screens.push(screen);
                ui.changed = true;
                Ok(())
            },
        )?;

        host.set("ui_close_screen", move |s, id: String| {
            s.ui.borrow_mut().close_screen(&id);
            Ok(())
        })?;

        host.set("ui_update_slots", move |s, (id, slots): (String, Value)| {
            let slots = parse_slots(slots, &format!("update_slots {id:?}"))?;
            let mut ui = s.ui.borrow_mut();
            for screen in &mut ui.state.screens {
                for widget in &mut screen.widgets {
                    if let WidgetKind::Slots {
                        id: grid,
                        slots: old,
                        ..
                    } = &mut widget.kind
                        && *grid == id
                    {
                        old.clone_from(&slots);
                    }
                }
            }
            if id == "hotbar" {
                ui.state.hotbar_slots = Some(slots);
                ui.clamp_selected();
            }
            ui.changed = true;
            Ok(())
        })?;

        host.set("ui_set_hotbar_slots", move |s, slots: Value| {
            let slots = match slots {
                Value::Nil => None,
                slots => Some(parse_slots(slots, "set_hotbar_slots")?),
            };
            let mut ui = s.ui.borrow_mut();
            ui.state.hotbar_slots = slots;
            ui.clamp_selected();
            ui.changed = true;
            Ok(())
        })?;

        host.set(
            "ui_set_health",
            move |s, (points, max): (Option<f64>, Option<f64>)| {
                let health = match points {
                    None => None,
                    Some(points) => {
                        let max = max.unwrap_or(20.0);
                        finite(&[points, max])?;
                        if !(1.0..=1000.0).contains(&max) {
                            return Err(lua_error(format!(
                                "set_health: the maximum must be 1 to 1000, got {max}"
                            )));
                        }
                        let max = max.round() as u32;
                        Some(((points.round().max(0.0) as u32).min(max), max))
                    }
                };
                let mut ui = s.ui.borrow_mut();
                if ui.state.health != health {
                    ui.state.health = health;
                    ui.changed = true;
                }
                Ok(())
            },
        )?;

        host.set("ui_open_chat", move |s, prefix: Option<String>| {
            let mut ui = s.ui.borrow_mut();
            let serial = ui.next_serial();
            ui.state.chat_open = Some((serial, cut(prefix.unwrap_or_default())));
            ui.changed = true;
            Ok(())
        })?;

        host.set("ui_add_chat_line", move |s, text: Value| {
            let text = match text {
                Value::String(t) => cut(t.to_string_lossy()),
                other => {
                    return Err(lua_error(format!(
                        "add_chat_line: expected a string, got {}",
                        type_of(&other)
                    )));
                }
            };
            let mut ui = s.ui.borrow_mut();
            let serial = ui.next_serial();
            let lines = &mut ui.state.chat_lines;
            lines.push(ChatLine { serial, text });
            if lines.len() > CHAT_LINES {
                let extra = lines.len() - CHAT_LINES;
                lines.drain(..extra);
            }
            ui.changed = true;
            Ok(())
        })?;

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
        self.call_handlers(
            |ui| &ui.clicks,
            "click handler",
            || {
                let target = match target {
                    Some(t) => {
                        let table = self.vm.lua().create_table()?;
                        table.raw_set("x", t.voxel[0])?;
                        table.raw_set("y", t.voxel[1])?;
                        table.raw_set("z", t.voxel[2])?;
                        let before = self.vm.lua().create_table()?;
                        before.raw_set("x", t.before[0])?;
                        before.raw_set("y", t.before[1])?;
                        before.raw_set("z", t.before[2])?;
                        table.raw_set("before", before)?;
                        Value::Table(table)
                    }
                    None => Value::Nil,
                };
                Ok((button.name(), target))
            },
        )
    }

    /// Calls each handler of a list (`list` picks it) with `args()`, each
    /// as its own entry from Rust under its owner's name; their errors.
    fn call_handlers<A: mlua::IntoLuaMulti>(
        &self,
        list: fn(&Ui) -> &Vec<Handler>,
        context: &str,
        args: impl Fn() -> mlua::Result<A>,
    ) -> Vec<ScriptError> {
        let handlers: Vec<(Rc<str>, Function)> = list(&self.shared.ui.borrow())
            .iter()
            .map(|h| (h.owner.clone(), h.func.clone()))
            .collect();
        handlers
            .into_iter()
            .filter_map(|(owner, func)| {
                self.enter(&owner, Some(context), || func.call::<()>(args()?))
                    .err()
            })
            .collect()
    }

    /// Calls the Lua callbacks of a widget message from the frontend (chat,
    /// slots, buttons, fields, a screen closed); other messages call nothing.
    pub fn dispatch_ui(&self, message: &FromFrontend) -> Vec<ScriptError> {
        match message {
            FromFrontend::ChatSubmit(text) => {
                let text = cut(text.clone());
                self.call_handlers(|ui| &ui.chats, "chat handler", || Ok(text.as_str()))
            }
            FromFrontend::SlotMove {
                from,
                to,
                count,
                screen,
            } => {
                let count = count.or_else(|| self.slot_count(screen, &from.0, from.1));
                let args = (from.0.clone(), from.1 + 1, to.0.clone(), to.1 + 1, count);
                let handler = self
                    .screen_handler(screen, &to.0, "on_move")
                    .or_else(|| self.screen_handler(screen, &from.0, "on_move"));
                self.call_screen_handler(handler, "slot move handler", || args)
            }
            FromFrontend::SlotClick {
                grid,
                index,
                button,
                screen,
            } => {
                let handler = self.screen_handler(screen, grid, "on_click");
                self.call_screen_handler(handler, "slot click handler", || {
                    (index + 1, button.name())
                })
            }
            FromFrontend::ButtonClick { screen, widget } => {
                let handler = self.screen_handler(screen, widget, "on_click");
                self.call_screen_handler(handler, "button handler", || ())
            }
            FromFrontend::FieldSubmit {
                screen,
                widget,
                text,
            } => {
                let handler = self.screen_handler(screen, widget, "on_submit");
                let text = cut(text.clone());
                self.call_screen_handler(handler, "field handler", || text)
            }
            FromFrontend::ScreenClosed(id) => {
                let handlers = self.shared.ui.borrow_mut().close_screen(id);
                let handler = handlers.and_then(|h| Some((h.owner, h.on_close?)));
                self.call_screen_handler(handler, "screen close handler", || ())
            }
            FromFrontend::Key { .. }
            | FromFrontend::Click { .. }
            | FromFrontend::Moved(_)
            | FromFrontend::Quit => Vec::new(),
        }
    }

    /// The count of a stack shown in slot `index` of grid `grid` (on the
    /// screen `screen`, or the hotbar).
    fn slot_count(&self, screen: &str, grid: &str, index: usize) -> Option<u32> {
        let ui = self.shared.ui.borrow();
        let stack = |slots: &Slots| slots.get(index).cloned().flatten().map(|s| s.count);
        let on_screen = ui
            .state
            .screens
            .iter()
            .filter(|s| s.id == screen)
            .flat_map(|s| &s.widgets)
            .find_map(|w| match &w.kind {
                WidgetKind::Slots { id, slots, .. } if id == grid => Some(stack(slots)),
                _ => None,
            });
        match on_screen {
            Some(count) => count,
            None if grid == "hotbar" => ui.state.hotbar_slots.as_ref().and_then(stack),
            None => None,
        }
    }

    /// The callback `name` of widget `widget` on the open screen `screen`.
    fn screen_handler(
        &self,
        screen: &str,
        widget: &str,
        name: &str,
    ) -> Option<(Rc<str>, Function)> {
        let ui = self.shared.ui.borrow();
        let handlers = ui.screens.get(screen)?;
        handlers
            .widgets
            .iter()
            .find(|(id, n, _)| id == widget && *n == name)
            .map(|(_, _, f)| (handlers.owner.clone(), f.clone()))
    }

    fn call_screen_handler<A: mlua::IntoLuaMulti>(
        &self,
        handler: Option<(Rc<str>, Function)>,
        context: &str,
        args: impl FnOnce() -> A,
    ) -> Vec<ScriptError> {
        let Some((owner, func)) = handler else {
            return Vec::new();
        };
        self.enter(&owner, Some(context), || func.call::<()>(args()))
            .err()
            .into_iter()
            .collect()
    }

    /// Calls the move handlers with the player's new feet position.
    pub fn dispatch_move(&self, position: [f64; 3]) -> Vec<ScriptError> {
        let [x, y, z] = position;
        self.call_handlers(|ui| &ui.moves, "move handler", || Ok((x, y, z)))
    }
}
