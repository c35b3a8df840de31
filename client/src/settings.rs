//! The window's own settings, kept in the user's config directory
//! (`$XDG_CONFIG_HOME/buildat/client.toml`, else
//! `~/.config/buildat/client.toml`): the view radius (the client's drawing
//! distance), the detail and coarse radii (beyond the first, leaves are
//! drawn opaque and light flat; beyond the second, voxels at half
//! resolution: fewer triangles), the field of view, the mouse sensitivity
//! and the keys of the native actions (which replace the game's choice for
//! those actions).
//!
//! The file is a small TOML subset, written by the settings screen:
//!
//! ```toml
//! view_radius = 12          # chunks, 1..32
//! detail_radius = 1         # chunks drawn in full detail, 1..32
//! coarse_radius = 2         # chunks beyond drawn at half resolution (a quarter one chunk farther), 1..32
//! fov = 70                  # degrees, 30..120
//! mouse_sensitivity = 0.12  # degrees per pixel, 0.01..1
//!
//! [keys]
//! forward = "W"
//! ```
//!
//! Owns: the values, their bounds, reading (strictly: a malformed file is
//! an error naming its line and cause; the window then warns and uses the
//! defaults) and writing the file (atomically). Does not own: applying
//! them (`render::window`) or the game's own bindings (`buildat.ui.bind`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use crate::sandbox::Action;

/// A line of the settings file that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {cause}")]
#[non_exhaustive]
pub struct SettingsError {
    pub line: usize,
    pub cause: String,
}

/// The window's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// The farthest chunks drawn, in chunks (the server decides what it
    /// sends; this only draws less).
    pub view_radius: u32,
    /// Chunks up to this far are drawn in full detail (leaves with holes,
    /// ambient occlusion, smooth light); farther ones simpler, with far
    /// fewer triangles (`render::mesh::MeshTable::far`).
    pub detail_radius: u32,
    /// Chunks farther than this are drawn at half resolution (each 2×2×2
    /// voxels as one: `render::mesh::halve_voxels`), and one chunk farther
    /// at a quarter (4×4×4).
    pub coarse_radius: u32,
    /// Vertical field of view, degrees.
    pub fov: f32,
    /// Degrees of turn per pixel of mouse motion.
    pub mouse_sensitivity: f32,
    /// Native action name → key name, replacing the game's key for it.
    pub keys: BTreeMap<String, String>,
}

pub const VIEW_RADIUS: (u32, u32) = (1, 32);
/// The detail and coarse radii's bounds, as the view radius's.
pub const DETAIL_RADIUS: (u32, u32) = VIEW_RADIUS;
/// Measured in docs/client.md ("Frames").
pub const DEFAULT_DETAIL_RADIUS: u32 = 1;
/// Chunks farther than this are drawn at half resolution, one chunk
/// farther at a quarter.
pub const DEFAULT_COARSE_RADIUS: u32 = 2;
pub const FOV: (f32, f32) = (30.0, 120.0);
pub const MOUSE_SENSITIVITY: (f32, f32) = (0.01, 1.0);

impl Default for ClientSettings {
    fn default() -> Self {
        Self {
            view_radius: 12,
            detail_radius: DEFAULT_DETAIL_RADIUS,
            coarse_radius: DEFAULT_COARSE_RADIUS,
            fov: 70.0,
            mouse_sensitivity: 0.12,
            keys: BTreeMap::new(),
        }
    }
}

/// `$XDG_CONFIG_HOME/buildat/client.toml`, else
/// `~/.config/buildat/client.toml`; `None` without either variable.
pub fn default_path() -> Option<PathBuf> {
    let set = |name| std::env::var_os(name).filter(|v| !v.is_empty());
    let config = set("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| set("HOME").map(|home| PathBuf::from(home).join(".config")))?;
    Some(config.join("buildat").join("client.toml"))
}

/// A number's text without a trailing `.0`.
fn number(value: f32) -> String {
    let text = format!("{value}");
    text.strip_suffix(".0").unwrap_or(&text).to_string()
}

impl ClientSettings {
    /// Reads the file's text.
    pub fn parse(text: &str) -> Result<Self, SettingsError> {
        let mut settings = Self::default();
        let mut in_keys = false;
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let error = |cause: String| SettingsError { line, cause };
            let content = strip_comment(raw).trim();
            if content.is_empty() {
                continue;
            }
            if let Some(table) = content.strip_prefix('[') {
                let name = table
                    .strip_suffix(']')
                    .ok_or_else(|| error(format!("expected [keys], got {content:?}")))?
                    .trim();
                if name != "keys" {
                    return Err(error(format!("unknown table [{name}] (only [keys])")));
                }
                in_keys = true;
                continue;
            }
            let (key, value) = content
                .split_once('=')
                .ok_or_else(|| error(format!("expected `name = value`, got {content:?}")))?;
            let (key, value) = (key.trim(), value.trim());
            if in_keys {
                let action = Action::parse(key).ok_or_else(|| {
                    error(format!(
                        "unknown action {key:?} (one of forward, back, left, right, jump, \
                         free_mouse)"
                    ))
                })?;
                let name = unquote(value).ok_or_else(|| {
                    error(format!("the key of {key} must be a quoted name like \"W\""))
                })?;
                if name.is_empty() || name.len() > 32 {
                    return Err(error(format!("the key of {key} must be 1 to 32 bytes")));
                }
                settings
                    .keys
                    .insert(action.name().to_string(), name.to_string());
                continue;
            }
            let value: f32 = value
                .parse()
                .ok()
                .filter(|v: &f32| v.is_finite())
                .ok_or_else(|| error(format!("{key} must be a number, got {value:?}")))?;
            let within = |(min, max): (f32, f32)| {
                if (min..=max).contains(&value) {
                    Ok(value)
                } else {
                    Err(error(format!(
                        "{key} must be from {} to {}, got {}",
                        number(min),
                        number(max),
                        number(value)
                    )))
                }
            };
            let chunks = |(min, max): (u32, u32)| {
                let radius = within((min as f32, max as f32))?;
                if radius.fract() != 0.0 {
                    return Err(error(format!(
                        "{key} must be a whole number of chunks, got {value}"
                    )));
                }
                Ok(radius as u32)
            };
            match key {
                "view_radius" => settings.view_radius = chunks(VIEW_RADIUS)?,
                "detail_radius" => settings.detail_radius = chunks(DETAIL_RADIUS)?,
                "coarse_radius" => settings.coarse_radius = chunks(DETAIL_RADIUS)?,
                "fov" => settings.fov = within(FOV)?,
                "mouse_sensitivity" => settings.mouse_sensitivity = within(MOUSE_SENSITIVITY)?,
                other => {
                    return Err(error(format!(
                        "unknown setting {other:?} (view_radius, detail_radius, \
                         coarse_radius, fov, mouse_sensitivity, [keys])"
                    )));
                }
            }
        }
        Ok(settings)
    }

    /// The file's text.
    pub fn to_text(&self) -> String {
        let mut text = String::from(
            "# buildat-client's window settings (its settings screen, F10, writes them)\n",
        );
        let _ = writeln!(
            text,
            "view_radius = {}  # chunks drawn at most, {}..{}",
            self.view_radius, VIEW_RADIUS.0, VIEW_RADIUS.1
        );
        let _ = writeln!(
            text,
            "detail_radius = {}  # chunks drawn in full detail (farther: leaves opaque, light \
             flat), {}..{}",
            self.detail_radius, DETAIL_RADIUS.0, DETAIL_RADIUS.1
        );
        let _ = writeln!(
            text,
            "coarse_radius = {}  # chunks beyond drawn at half resolution (a quarter one chunk \
             farther), {}..{}",
            self.coarse_radius, DETAIL_RADIUS.0, DETAIL_RADIUS.1
        );
        let _ = writeln!(text, "fov = {}  # degrees, 30..120", number(self.fov));
        let _ = writeln!(
            text,
            "mouse_sensitivity = {}  # degrees per pixel, 0.01..1",
            number(self.mouse_sensitivity)
        );
        text.push_str(
            "\n# The keys of the native actions (they replace the game's choice)\n[keys]\n",
        );
        for (action, key) in &self.keys {
            let _ = writeln!(text, "{action} = \"{key}\"");
        }
        text
    }

    /// Reads `path`: the defaults when it does not exist, and when it
    /// cannot be read or is malformed, with a warning naming the file, the
    /// line and the cause.
    pub fn load(path: &Path) -> (Self, Option<String>) {
        match std::fs::read_to_string(path) {
            Ok(text) => match Self::parse(&text) {
                Ok(settings) => (settings, None),
                Err(error) => (
                    Self::default(),
                    Some(format!(
                        "settings file {}, {error}; using the default settings",
                        path.display()
                    )),
                ),
            },
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => (Self::default(), None),
            Err(error) => (
                Self::default(),
                Some(format!(
                    "settings file {}: {error}; using the default settings",
                    path.display()
                )),
            ),
        }
    }

    /// Writes `path` (and its folder), atomically.
    pub fn save(&self, path: &Path) -> std::io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let temp = path.with_extension("toml.tmp");
        std::fs::write(&temp, self.to_text())?;
        std::fs::rename(&temp, path)
    }

    /// The key the user chose for `action`, if any.
    pub fn key_of(&self, action: Action) -> Option<&str> {
        self.keys.get(action.name()).map(String::as_str)
    }
}

/// The line without a `#` comment (outside quotes).
fn strip_comment(line: &str) -> &str {
    let mut quoted = false;
    for (i, c) in line.char_indices() {
        match c {
            '"' => quoted = !quoted,
            '#' if !quoted => return &line[..i],
            _ => {}
        }
    }
    line
}

/// The text of a `"quoted"` value (no escapes).
fn unquote(value: &str) -> Option<&str> {
    let inner = value.strip_prefix('"')?.strip_suffix('"')?;
    (!inner.contains('"') && !inner.contains('\\')).then_some(inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `to_text` writes reads back the same, comments and all.
    #[test]
    fn settings_written_read_back_the_same() {
        let mut settings = ClientSettings {
            view_radius: 5,
            detail_radius: 2,
            coarse_radius: 5,
            fov: 85.5,
            mouse_sensitivity: 0.3,
            ..ClientSettings::default()
        };
        settings.keys.insert("forward".into(), "Z".into());
        settings.keys.insert("jump".into(), "Control".into());
        let text = settings.to_text();
        assert_eq!(ClientSettings::parse(&text), Ok(settings.clone()), "{text}");
        assert_eq!(settings.key_of(Action::Forward), Some("Z"));
        assert_eq!(settings.key_of(Action::Back), None);
        assert_eq!(
            ClientSettings::parse("# nothing\n\n"),
            Ok(ClientSettings::default())
        );
    }

    /// Each malformed line is an error naming its line and cause.
    #[test]
    fn a_malformed_settings_line_is_named_with_its_cause() {
        let cases = [
            (
                "fov = 70\nview_radius = 0\n",
                2,
                "view_radius must be from 1 to 32, got 0",
            ),
            ("fov = wide\n", 1, "fov must be a number"),
            ("fov = 70\n\nzoom = 2\n", 3, "unknown setting \"zoom\""),
            ("[keys]\nfly = \"F\"\n", 2, "unknown action \"fly\""),
            ("[keys]\nforward = W\n", 2, "must be a quoted name"),
            ("[mouse]\n", 1, "unknown table [mouse]"),
            ("fov 70\n", 1, "expected `name = value`"),
            ("view_radius = 2.5\n", 1, "whole number"),
            (
                "detail_radius = 40\n",
                1,
                "detail_radius must be from 1 to 32",
            ),
            ("mouse_sensitivity = inf\n", 1, "must be a number"),
        ];
        for (text, line, cause) in cases {
            let error = ClientSettings::parse(text).expect_err(text);
            assert_eq!(error.line, line, "{text}: {error}");
            assert!(error.cause.contains(cause), "{text}: {error}");
        }
    }

    /// Loading: no file is the defaults without a word; a malformed one is
    /// the defaults with a warning naming the file, the line and the
    /// cause; a saved one comes back.
    #[test]
    fn loading_warns_of_a_malformed_file_and_saving_keeps_the_settings() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("buildat").join("client.toml");
        assert_eq!(
            ClientSettings::load(&path),
            (ClientSettings::default(), None)
        );
        let settings = ClientSettings {
            fov: 90.0,
            ..ClientSettings::default()
        };
        settings.save(&path).expect("saved, with its folder");
        assert_eq!(ClientSettings::load(&path), (settings, None));
        std::fs::write(&path, "fov = 90\nfov = 500\n").expect("write");
        let (loaded, warning) = ClientSettings::load(&path);
        assert_eq!(loaded, ClientSettings::default());
        let warning = warning.expect("a warning");
        assert!(
            warning.contains(&path.display().to_string())
                && warning.contains("line 2")
                && warning.contains("fov must be from 30 to 120, got 500"),
            "{warning}"
        );
    }
}
