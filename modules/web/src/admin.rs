//! The web page's admin actions and their token.
//!
//! Owns: `<world>/web-token.txt` (made on first start: 32 random bytes as
//! hex, in a new file of mode 0600; the operator may write their own; read
//! never through a symlink, and made 0600 if others could read it),
//! reading a request's token (`Authorization: Bearer TOKEN` only: never
//! from the address, where logs and histories keep it, nor a form),
//! comparing it in constant time, and the actions:
//! `POST /admin/reload/NAME` (the core's `reload_module`; not `web`
//! itself, whose page would wait for its own server to stop: reload it from
//! the console), `POST /admin/kick/NAME` (a player by name or peer id:
//! network's `disconnect`), `POST /admin/save` (voxelworld's `save`).
//! Does not own: what the actions do (the core and the modules answering
//! them).

use std::io::Read;
use std::path::Path;

use buildat_interface::core_api::ReloadModule;
use buildat_main_api::{VAR_PEER, VAR_PLAYER};
use hyper::StatusCode;
use hyper::header::{AUTHORIZATION, HeaderMap};

use crate::Shared;

/// The token file's name in the world folder.
pub const TOKEN_FILE: &str = "web-token.txt";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AdminError {
    #[error("cannot read or write {path}: {source}")]
    TokenFile {
        path: String,
        source: std::io::Error,
    },
    #[error("{path} holds no token: write one (letters and digits, 16 or more) or delete the file")]
    EmptyToken { path: String },
    #[error("no admin action '{0}': reload/NAME, kick/NAME or save")]
    Unknown(String),
    #[error("reload web from the console: this page would wait for its own server to stop")]
    SelfReload,
    #[error("no player '{0}' is connected")]
    NoPlayer(String),
    #[error("{0}")]
    Failed(String),
}

impl AdminError {
    pub fn status(&self) -> StatusCode {
        match self {
            Self::Unknown(_) => StatusCode::NOT_FOUND,
            Self::SelfReload | Self::NoPlayer(_) => StatusCode::BAD_REQUEST,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}

/// The token in `<world>/web-token.txt`, made first if missing.
pub fn load_or_create_token(world: &Path) -> Result<String, AdminError> {
    let path = world.join(TOKEN_FILE);
    let file_error = |source| AdminError::TokenFile {
        path: path.display().to_string(),
        source,
    };
    let text = match read_private(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            if !world.is_dir() {
                use std::os::unix::fs::DirBuilderExt;
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(world)
                    .map_err(file_error)?;
            }
            let token = new_token().map_err(file_error)?;
            write_private(&path, &format!("{token}\n")).map_err(file_error)?;
            buildat_interface::log::info!("wrote a new admin token to {}", path.display());
            token
        }
        Err(error) => return Err(file_error(error)),
    };
    let token = text.trim().to_string();
    if token.len() < 16 || !token.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return Err(AdminError::EmptyToken {
            path: path.display().to_string(),
        });
    }
    Ok(token)
}

/// Reads the token file, never through a symlink; a file others could
/// read is made the owner's only.
fn read_private(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let mut file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|error| {
            if error.raw_os_error() == Some(libc::ELOOP) {
                std::io::Error::other("it is a symlink: the token is read from a file only")
            } else {
                error
            }
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("it is not a file"));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        buildat_interface::log::warn!(
            "{} could be read by other users: made it readable by its owner only",
            path.display()
        );
    }
    let mut text = String::new();
    file.read_to_string(&mut text)?;
    Ok(text)
}

fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// A new file (never one there already, never through a symlink) of mode
/// 0600.
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// The token a request carries: `Authorization: Bearer TOKEN`, the only
/// place it is taken from.
pub fn request_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then_some(token.trim())
}

/// Whether `given` is the token, in time that does not depend on where
/// they differ.
pub fn token_matches(token: &str, given: &str) -> bool {
    let (a, b) = (token.as_bytes(), given.as_bytes());
    let mut difference = a.len() ^ b.len();
    for (i, x) in a.iter().enumerate() {
        let y = b.get(i).copied().unwrap_or(0);
        difference |= usize::from(x ^ y);
    }
    difference == 0
}

/// Runs the admin action `action` (the path after `/admin/`).
pub fn run(shared: &Shared, action: &str) -> Result<String, AdminError> {
    let host = &shared.host;
    let failed = |e: buildat_interface::ModuleError| AdminError::Failed(e.to_string());
    match action.split_once('/') {
        Some(("reload", name)) if !name.is_empty() => {
            if name == host.module_name() {
                return Err(AdminError::SelfReload);
            }
            buildat_interface::log::info!("admin: reload {name}");
            host.call(&ReloadModule {
                name: name.to_string(),
            })
            .map_err(failed)?;
            Ok(format!("reloaded {name}"))
        }
        Some(("kick", who)) if !who.is_empty() => {
            let players = host
                .call(&buildat_voxelworld_api::ListNodes {
                    with_var: Some(VAR_PLAYER.into()),
                })
                .map_err(failed)?;
            let peer = players.iter().find_map(|node| {
                let name = node.vars.get(VAR_PLAYER)?;
                let peer = node.vars.get(VAR_PEER)?;
                let peer = u64::from_le_bytes(peer.as_slice().try_into().ok()?);
                (name.as_slice() == who.as_bytes() || peer.to_string() == who).then_some(peer)
            });
            let Some(peer) = peer else {
                return Err(AdminError::NoPlayer(who.to_string()));
            };
            buildat_interface::log::info!("admin: kick {who} (peer {peer})");
            host.call(&buildat_network_api::Disconnect {
                peer,
                reason: "kicked by the operator".into(),
            })
            .map_err(failed)?;
            Ok(format!("kicked {who} (peer {peer})"))
        }
        None if action == "save" => {
            let saved = host
                .call(&buildat_voxelworld_api::Save {})
                .map_err(failed)?;
            buildat_interface::log::info!("admin: save ({saved} sections written)");
            Ok(format!("saved {saved} sections"))
        }
        _ => Err(AdminError::Unknown(action.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_match_only_whole() {
        assert!(token_matches("abcdef0123456789", "abcdef0123456789"));
        assert!(!token_matches("abcdef0123456789", "abcdef012345678"));
        assert!(!token_matches("abcdef0123456789", "abcdef01234567890"));
        assert!(!token_matches("abcdef0123456789", ""));
        assert!(!token_matches("abcdef0123456789", "bbcdef0123456789"));
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("buildat-web-token-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch");
        dir
    }

    fn mode(path: &Path) -> u32 {
        use std::os::unix::fs::PermissionsExt;
        std::fs::symlink_metadata(path)
            .expect("meta")
            .permissions()
            .mode()
            & 0o777
    }

    #[test]
    fn a_token_is_made_once_private_and_kept() {
        let dir = scratch("made");
        let first = load_or_create_token(&dir).expect("made");
        assert_eq!(first.len(), 64);
        assert_eq!(mode(&dir.join(TOKEN_FILE)), 0o600);
        assert_eq!(load_or_create_token(&dir).expect("read"), first);
        std::fs::write(dir.join(TOKEN_FILE), "short\n").expect("write");
        assert!(load_or_create_token(&dir).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_token_file_others_can_read_is_made_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("loose");
        let path = dir.join(TOKEN_FILE);
        std::fs::write(&path, "0123456789abcdef0123\n").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        assert_eq!(
            load_or_create_token(&dir).expect("read"),
            "0123456789abcdef0123"
        );
        assert_eq!(mode(&path), 0o600);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_symlink_in_place_of_the_token_is_refused() {
        let dir = scratch("symlink");
        let path = dir.join(TOKEN_FILE);
        // To a file holding a valid token: not read.
        let elsewhere = dir.join("elsewhere.txt");
        std::fs::write(&elsewhere, "0123456789abcdef0123\n").expect("write");
        std::os::unix::fs::symlink(&elsewhere, &path).expect("symlink");
        let refused = load_or_create_token(&dir).expect_err("a symlink");
        assert!(refused.to_string().contains("symlink"), "{refused}");
        // To nothing: no token is written through it.
        std::fs::remove_file(&path).expect("remove");
        let target = dir.join("made-through-the-link.txt");
        std::os::unix::fs::symlink(&target, &path).expect("symlink");
        assert!(load_or_create_token(&dir).is_err());
        assert!(!target.exists(), "nothing written through the symlink");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_token_comes_from_the_header_only() {
        let mut headers = HeaderMap::new();
        assert_eq!(request_token(&headers), None);
        headers.insert(AUTHORIZATION, "Bearer abc".parse().expect("header"));
        assert_eq!(request_token(&headers), Some("abc"));
        headers.insert(AUTHORIZATION, "Basic abc".parse().expect("header"));
        assert_eq!(request_token(&headers), None);
    }
}
