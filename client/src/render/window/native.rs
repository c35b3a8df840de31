//! The window's own screens, drawn and hit like the game's (ids start with
//! `@`, so they never reach the game's Lua): the menu Esc opens, the
//! settings screen (F10, or the menu) and the login prompt.
//!
//! Owns: their layout and texts. Does not own: what their buttons do
//! (`window`), the settings file (`settings`).

use crate::sandbox::{Action, Screen, Widget, WidgetKind};
use crate::settings::ClientSettings;

pub const MENU: &str = "@menu";
pub const SETTINGS: &str = "@settings";
pub const LOGIN: &str = "@login";

/// Serials of the window's screens: far from the game's.
const SERIAL: u64 = u64::MAX - 16;

fn widget(x: f32, y: f32, kind: WidgetKind) -> Widget {
    Widget { x, y, kind }
}

fn label(x: f32, y: f32, text: impl Into<String>) -> Widget {
    widget(x, y, WidgetKind::Label { text: text.into() })
}

fn button(x: f32, y: f32, width: f32, id: &str, text: impl Into<String>) -> Widget {
    widget(
        x,
        y,
        WidgetKind::Button {
            id: id.into(),
            width,
            text: text.into(),
        },
    )
}

fn field(x: f32, y: f32, width: f32, id: &str, text: &str) -> Widget {
    widget(
        x,
        y,
        WidgetKind::Field {
            id: id.into(),
            width,
            text: text.into(),
        },
    )
}

/// Esc's menu: back to the game, or the settings.
pub fn menu() -> Screen {
    Screen {
        id: MENU.into(),
        serial: SERIAL,
        title: "Menu".into(),
        columns: 7.0,
        rows: 2.0,
        widgets: vec![
            button(0.0, 0.0, 7.0, "resume", "Back to the game"),
            button(0.0, 1.0, 7.0, "settings", "Settings (F10)"),
        ],
    }
}

/// The settings being edited: each value with - and +, each native
/// action's key with a button to change it (`rebinding`: waiting for a
/// key), Save and Close. `game_key(action)` is the game's key for it.
pub fn settings(
    edit: &ClientSettings,
    rebinding: Option<Action>,
    game_key: impl Fn(Action) -> Option<String>,
) -> Screen {
    let mut widgets = Vec::new();
    let chunks = |n: u32| format!("{n} chunk{}", if n == 1 { "" } else { "s" });
    let rows = [
        (
            "radius",
            format!("View radius: {}", chunks(edit.view_radius)),
        ),
        (
            "detail",
            format!("Full detail: {}", chunks(edit.detail_radius)),
        ),
        (
            "coarse",
            format!("Coarse past: {}", chunks(edit.coarse_radius)),
        ),
        ("fov", format!("Field of view: {:.0}", edit.fov)),
        ("mouse", format!("Mouse: {:.2}", edit.mouse_sensitivity)),
    ];
    for (row, (id, text)) in rows.into_iter().enumerate() {
        let y = row as f32;
        widgets.push(label(0.0, y, text));
        widgets.push(button(9.0, y, 1.0, &format!("{id}-"), "-"));
        widgets.push(button(10.0, y, 1.0, &format!("{id}+"), "+"));
    }
    for (i, action) in Action::ALL.into_iter().enumerate() {
        let y = 5.0 + i as f32;
        let key = edit
            .key_of(action)
            .map(str::to_string)
            .or_else(|| game_key(action))
            .unwrap_or_else(|| "-".into());
        widgets.push(label(0.0, y, format!("{}: {key}", action.name())));
        let text = if rebinding == Some(action) {
            "Press a key"
        } else {
            "Change"
        };
        widgets.push(button(7.0, y, 4.0, &format!("key:{}", action.name()), text));
    }
    widgets.push(button(0.0, 11.0, 5.0, "save", "Save"));
    widgets.push(button(6.0, 11.0, 5.0, "close", "Close"));
    Screen {
        id: SETTINGS.into(),
        serial: SERIAL + 1,
        title: "Settings".into(),
        columns: 11.0,
        rows: 12.0,
        widgets,
    }
}

/// The login prompt: name and password, Log in or Play as guest, and a
/// line for what went wrong.
pub fn login(server: &str, name: &str, message: &str) -> Screen {
    Screen {
        id: LOGIN.into(),
        serial: SERIAL + 2,
        title: format!("Log in to {server}"),
        columns: 12.0,
        rows: 4.0,
        widgets: vec![
            label(0.0, 0.0, "Name"),
            field(4.0, 0.0, 8.0, "name", name),
            label(0.0, 1.0, "Password"),
            field(4.0, 1.0, 8.0, "password", ""),
            label(0.0, 2.0, message),
            button(0.0, 3.0, 5.0, "login", "Log in"),
            button(6.0, 3.0, 6.0, "guest", "Play as guest"),
        ],
    }
}
