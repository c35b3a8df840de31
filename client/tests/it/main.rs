//! The client's integration tests, one binary (one link) for all: the Luau
//! sandbox (`sandbox`), the world view (`world`), the client binary against
//! `buildat-harness`'s fake server (`cli`, `world_cli`), and against the
//! real `buildat-server` (`e2e`, `world_e2e`, the renderer's
//! `render_e2e`, models `model_e2e`, the game's chat and inventory screens `ui_e2e`, the window's login
//! prompt `login_e2e`); the
//! rule that keeps a password off a readable path (`security`); that the
//! client links no module ABI (`deps`). `common` is what they share.

mod cli;
mod common;
mod deps;
mod e2e;
mod login_e2e;
mod model_e2e;
mod render_e2e;
mod sandbox;
mod security;
mod ui_e2e;
mod world;
mod world_cli;
mod world_e2e;
