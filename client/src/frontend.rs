//! What the session thread (network, Lua, world view) and a graphical
//! frontend (the renderer, in a window or offscreen) tell each other. The
//! session runs on its own thread; the frontend owns the main thread (a
//! window's event loop must), so they talk through two channels.
//!
//! Owns: the messages and the [`SessionLink`] / [`FrontendLink`] pair.
//! Does not own: producing them (`app` on the session side, `render` on
//! the frontend side) or the UI state's meaning (`sandbox::ui`). Headless
//! sessions and bots have no link, so they never touch a GPU.

use std::sync::Arc;

use buildat_voxel::VoxelRegistry;
use buildat_voxel::geometry::Pos;
use crossbeam_channel::{Receiver, Sender};

use crate::sandbox::UiState;

/// Session → frontend.
#[derive(Debug)]
// `Ui` is large, but sent only when the game changes what is shown.
#[allow(clippy::large_enum_variant)]
pub enum ToFrontend {
    /// The voxel registry (sent again, with every held chunk, when it
    /// changes).
    Registry(VoxelRegistry),
    /// A `client_data` file (textures), by its full name
    /// (`main/client_data/textures/stone.png`).
    File { name: String, content: Arc<[u8]> },
    /// A chunk's voxel values (x fastest), new or changed.
    Chunk { chunk: Pos, voxels: Arc<[u32]> },
    /// A held chunk's light (one byte per voxel, sunlight in the high
    /// nibble, block light in the low one), new or changed.
    Light { chunk: Pos, light: Arc<[u8]> },
    /// A chunk is no longer held.
    Unload { chunk: Pos },
    /// What the game's Lua put on the screen (sent when it changes).
    Ui(UiState),
    /// The session ended (its outcome is the session thread's result).
    Ended,
}

/// A mouse button the game can react to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Button {
    Left,
    Right,
    Middle,
}

impl Button {
    pub fn name(self) -> &'static str {
        match self {
            Self::Left => "left",
            Self::Right => "right",
            Self::Middle => "middle",
        }
    }
}

/// The voxel under the crosshair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Target {
    /// The voxel hit.
    pub voxel: Pos,
    /// The empty voxel in front of the face hit (where a block is placed).
    pub before: Pos,
}

/// Frontend → session.
#[derive(Debug, Clone, PartialEq)]
pub enum FromFrontend {
    /// A key (`"W"`, `"Space"`, `"1"`, `"WheelUp"`...) went down or up.
    Key { key: String, pressed: bool },
    /// A mouse button was pressed, with what the crosshair points at.
    Click {
        button: Button,
        target: Option<Target>,
    },
    /// The player moved (client-side physics), feet position.
    Moved([f64; 3]),
    /// The chat line was submitted (Enter) with this text.
    ChatSubmit(String),
    /// A stack was dragged from one slot to another (grid id and 0-based
    /// index; the hotbar's grid is `"hotbar"`) while `screen` was open;
    /// `count` `None`: the whole stack.
    SlotMove {
        from: (String, usize),
        to: (String, usize),
        count: Option<u32>,
        screen: String,
    },
    /// A click without a drag on slot `index` (0-based) of a grid that has
    /// an `on_click`.
    SlotClick {
        grid: String,
        index: usize,
        button: Button,
        screen: String,
    },
    /// A screen's button was clicked.
    ButtonClick { screen: String, widget: String },
    /// A screen's text field was submitted (Enter).
    FieldSubmit {
        screen: String,
        widget: String,
        text: String,
    },
    /// The player closed a screen (Esc).
    ScreenClosed(String),
    /// The window was closed: end the session.
    Quit,
}

/// The session's end of the link.
#[derive(Clone)]
pub struct SessionLink {
    pub to_frontend: Sender<ToFrontend>,
    pub from_frontend: Receiver<FromFrontend>,
}

/// The frontend's end of the link.
pub struct FrontendLink {
    pub to_session: Sender<FromFrontend>,
    pub from_session: Receiver<ToFrontend>,
}

/// A connected pair.
pub fn link() -> (SessionLink, FrontendLink) {
    let (to_frontend, from_session) = crossbeam_channel::unbounded();
    let (to_session, from_frontend) = crossbeam_channel::unbounded();
    (
        SessionLink {
            to_frontend,
            from_frontend,
        },
        FrontendLink {
            to_session,
            from_session,
        },
    )
}
