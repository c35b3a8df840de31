//! `meta.json`, a module folder's description: dependencies and build knobs.
//!
//! Owns: parsing and validating one file's text into [`ModuleMeta`] with
//! errors that name the file, line and column, and warnings for unknown
//! fields. Does not own: finding module folders or ordering them (`__loader`).

use std::path::Path;

use serde::{Deserialize, Serialize};

pub const META_FILE: &str = "meta.json";

const KNOWN_FIELDS: &[&str] = &[
    "dependencies",
    "reverse_dependencies",
    "disable_rust",
    "cargo_features",
];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dependency {
    pub module: String,
    #[serde(default)]
    pub optional: bool,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModuleMeta {
    /// Modules that must load before this one.
    #[serde(default)]
    pub dependencies: Vec<Dependency>,
    /// Modules that must load after this one (as if they depended on it).
    #[serde(default)]
    pub reverse_dependencies: Vec<Dependency>,
    /// A Lua/data-only module with no server code to build.
    #[serde(default)]
    pub disable_rust: bool,
    /// Cargo features to enable when building the module (a build knob).
    #[serde(default)]
    pub cargo_features: Vec<String>,
}

/// A `meta.json` that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: String,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
}

/// A parsed `meta.json` with the warnings found on the way.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedMeta {
    pub meta: ModuleMeta,
    pub warnings: Vec<String>,
}

impl ModuleMeta {
    /// Parses the text of `file` (used only in messages).
    pub fn parse(file: &str, text: &str) -> Result<ParsedMeta, MetaError> {
        let invalid = |e: serde_json::Error| MetaError::Invalid {
            file: file.to_string(),
            line: e.line(),
            column: e.column(),
            message: e
                .to_string()
                .split(" at line ")
                .next()
                .unwrap_or_default()
                .to_string(),
        };
        let object: serde_json::Map<String, serde_json::Value> =
            serde_json::from_str(text).map_err(invalid)?;
        let meta: ModuleMeta = serde_json::from_str(text).map_err(invalid)?;
        let warnings = object
            .keys()
            .filter(|key| !KNOWN_FIELDS.contains(&key.as_str()))
            .map(|key| format!("{file}: unknown field \"{key}\" (ignored)"))
            .collect();
        Ok(ParsedMeta { meta, warnings })
    }

    /// Reads and parses `<dir>/meta.json`.
    pub fn read(dir: &Path) -> Result<ParsedMeta, MetaError> {
        let path = dir.join(META_FILE);
        let file = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|source| MetaError::Read {
            file: file.clone(),
            source,
        })?;
        Self::parse(&file, &text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_object_is_valid() {
        let parsed = ModuleMeta::parse("m/meta.json", "{}").expect("valid");
        assert_eq!(parsed.meta, ModuleMeta::default());
        assert!(parsed.warnings.is_empty());
    }

    #[test]
    fn fields_parse_and_unknown_fields_warn() {
        let text = r#"{"dependencies": [{"module": "network"}, {"module": "plants", "optional": true}],
            "disable_rust": true, "colour": "blue"}"#;
        let parsed = ModuleMeta::parse("m/meta.json", text).expect("valid");
        assert_eq!(parsed.meta.dependencies.len(), 2);
        assert!(parsed.meta.dependencies[1].optional);
        assert!(parsed.meta.disable_rust);
        assert_eq!(
            parsed.warnings,
            vec!["m/meta.json: unknown field \"colour\" (ignored)"]
        );
    }

    #[test]
    fn invalid_json_names_file_line_and_column() {
        let error = ModuleMeta::parse("m/meta.json", "{\n  \"dependencies\": [,]\n}").unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("m/meta.json:2:"), "{message}");
    }

    #[test]
    fn wrong_type_names_the_field_position() {
        let error = ModuleMeta::parse("m/meta.json", "{\"disable_rust\": \"yes\"}").unwrap_err();
        let message = error.to_string();
        assert!(message.starts_with("m/meta.json:1:"), "{message}");
        assert!(message.contains("expected a boolean"), "{message}");
    }
}
