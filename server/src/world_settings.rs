//! `<world>/world.toml` as the modules' settings file: each module's
//! settings in the table of its namespace (`[main]`, `[network]`, ...),
//! beside voxelworld's own `[world]` table.
//!
//! Owns: reading the tables' values as the text a `--set` would give
//! ([`values_of`]: `true`, `64`, `"text"` is `text`), adding every declared
//! setting not in the file yet as a commented line under its one-line help
//! ([`add_defaults`]), setting one value ([`set_value`]: the key's value
//! replaced, else its commented default line, else the key added), and
//! writing the file (mode 0600, through a temporary file and a rename).
//! Every edit keeps the file's comments and values and is checked by
//! parsing the result with `toml_edit` before it is written.
//! Does not own: precedence and checking values (the core), the `[world]`
//! table (voxelworld's `world_toml.rs`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use buildat_interface::settings::SettingInfo;
use toml_edit::{DocumentMut, Item, Table, Value};

/// The file's name in the world directory.
pub const FILE_NAME: &str = "world.toml";

/// The settings file cannot be read, parsed or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsFileError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path} is not valid TOML: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Edit { path: PathBuf, message: String },
}

/// The file's text; empty when there is none yet.
pub fn read_text(path: &Path) -> Result<String, SettingsFileError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(text),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
        Err(source) => Err(SettingsFileError::Read {
            path: path.to_path_buf(),
            source,
        }),
    }
}

/// Every value in the file at `path` by its dotted key (`main.motd`).
pub fn read_values(path: &Path) -> Result<BTreeMap<String, String>, SettingsFileError> {
    values_of(&read_text(path)?).map_err(|message| SettingsFileError::Parse {
        path: path.to_path_buf(),
        message,
    })
}

/// Every value of `text` by its dotted key, as the text a `--set` gives:
/// a string is its contents, any other value its TOML form.
pub fn values_of(text: &str) -> Result<BTreeMap<String, String>, String> {
    let document: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    let mut values = BTreeMap::new();
    flatten("", document.as_table(), &mut values);
    Ok(values)
}

fn flatten(prefix: &str, table: &Table, out: &mut BTreeMap<String, String>) {
    for (key, item) in table.iter() {
        let key = format!("{prefix}{key}");
        match item {
            Item::Value(Value::InlineTable(inline)) => {
                flatten(&format!("{key}."), &inline.clone().into_table(), out)
            }
            Item::Value(value) => {
                out.insert(key, value_text(value));
            }
            Item::Table(table) => flatten(&format!("{key}."), table, out),
            Item::ArrayOfTables(_) | Item::None => {}
        }
    }
}

/// A value as the text a `--set` would give.
fn value_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.value().clone(),
        Value::Integer(i) => i.value().to_string(),
        Value::Float(f) => f.value().to_string(),
        Value::Boolean(b) => b.value().to_string(),
        Value::Datetime(d) => d.value().to_string(),
        other => {
            let mut other = other.clone();
            other.decor_mut().clear();
            other.to_string()
        }
    }
}

/// `text` (a setting of type `type_name`) as a TOML value: a number or a
/// boolean where the type is one and the text reads as one, else a string.
pub fn toml_value(type_name: &str, text: &str) -> Value {
    let name = type_name.strip_prefix("optional ").unwrap_or(type_name);
    let integer = name.starts_with('u') || name.starts_with('i');
    if integer && let Ok(number) = text.parse::<i64>() {
        return Value::from(number);
    }
    if name.starts_with('f')
        && let Ok(number) = text.parse::<f64>()
        && number.is_finite()
    {
        return Value::from(number);
    }
    if name == "bool"
        && let Ok(flag) = text.parse::<bool>()
    {
        return Value::from(flag);
    }
    Value::from(text)
}

/// A table header's name (`[main]` is `main`), `None` for any other line.
fn header_name(line: &str) -> Option<String> {
    let line = line.trim();
    if !line.starts_with('[') || line.starts_with("[[") {
        return None;
    }
    let end = line.find(']')?;
    let name = line[1..end].trim();
    Some(
        name.split('.')
            .map(|part| part.trim().trim_matches('"').trim_matches('\''))
            .collect::<Vec<_>>()
            .join("."),
    )
}

/// The lines of `namespace`'s table: from after its header to the next
/// header (or the end), as a range of line indices.
fn table_lines(lines: &[&str], namespace: &str) -> Option<std::ops::Range<usize>> {
    let start = lines
        .iter()
        .position(|line| header_name(line).as_deref() == Some(namespace))?
        + 1;
    let end = lines[start..]
        .iter()
        .position(|line| header_name(line).is_some())
        .map_or(lines.len(), |at| start + at);
    Some(start..end)
}

/// Whether `line` is `field`'s commented line (`# field = ...`).
fn is_commented(line: &str, field: &str) -> bool {
    line.trim_start()
        .strip_prefix('#')
        .map(str::trim_start)
        .and_then(|rest| rest.strip_prefix(field))
        .is_some_and(|rest| rest.trim_start().starts_with('='))
}

/// One declared setting's help and commented default line.
fn commented(info: &SettingInfo, field: &str) -> String {
    let mut out = String::new();
    if !info.help.is_empty() {
        out.push_str(&format!("# {}\n", info.help));
    }
    let value = toml_value(&info.type_name, &info.default);
    out.push_str(&format!("# {field} = {}\n", value.to_string().trim()));
    out
}

/// `text` with every setting of `declared` (namespace, its settings) that
/// is neither set nor commented in its table added as a commented default
/// line under its help, in a table made at the end where there is none.
/// Nothing that is there changes; `None` when nothing is missing.
pub fn add_defaults(
    text: &str,
    declared: &[(String, Vec<SettingInfo>)],
) -> Result<Option<String>, String> {
    let values = values_of(text)?;
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut added = false;
    for (namespace, settings) in declared {
        let prefix = format!("{namespace}.");
        let borrowed: Vec<&str> = lines.iter().map(String::as_str).collect();
        let region = table_lines(&borrowed, namespace);
        let missing: Vec<(&SettingInfo, &str)> = settings
            .iter()
            .filter_map(|info| Some((info, info.key.strip_prefix(&prefix)?)))
            .filter(|(info, field)| {
                !values.contains_key(&info.key)
                    && !region
                        .clone()
                        .is_some_and(|r| borrowed[r].iter().any(|l| is_commented(l, field)))
            })
            .collect();
        if missing.is_empty() {
            continue;
        }
        added = true;
        let block: Vec<String> = missing
            .iter()
            .map(|(info, field)| commented(info, field))
            .collect();
        let block = block.join("\n");
        let new_lines = block.lines().map(str::to_string);
        match region {
            Some(region) => {
                // After the table's last line that is not blank.
                let mut at = region.end;
                while at > region.start && lines[at - 1].trim().is_empty() {
                    at -= 1;
                }
                let mut insert: Vec<String> = Vec::new();
                if at > region.start {
                    insert.push(String::new());
                }
                insert.extend(new_lines);
                lines.splice(at..at, insert);
            }
            None => {
                if lines.last().is_some_and(|l| !l.trim().is_empty()) {
                    lines.push(String::new());
                }
                lines.push(format!("[{namespace}]"));
                lines.push(format!(
                    "# The settings of {namespace}: uncomment a line to change one \
                     (`buildat-server settings` shows them)."
                ));
                lines.extend(new_lines);
            }
        }
    }
    if !added {
        return Ok(None);
    }
    let mut out = lines.join("\n");
    out.push('\n');
    let after = values_of(&out).map_err(|e| format!("adding the defaults would break it: {e}"))?;
    if after != values {
        return Err("adding the defaults would change its values".into());
    }
    Ok(Some(out))
}

/// `text` with `namespace.field` set to `value` (its type `type_name`):
/// the key's value replaced with `toml_edit` (its comments kept), else its
/// commented line in the table replaced by the key, else the key added
/// after the table's last line (the table added at the end where there is
/// none). Nothing else changes: the result is parsed and compared.
pub fn set_value(
    text: &str,
    namespace: &str,
    field: &str,
    type_name: &str,
    value: &str,
) -> Result<String, String> {
    let before = values_of(text)?;
    let key = format!("{namespace}.{field}");
    let new = toml_value(type_name, value);
    let out = if before.contains_key(&key) {
        let mut document: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
        let item = document
            .get_mut(namespace)
            .and_then(|table| table.get_mut(field))
            .and_then(Item::as_value_mut)
            .ok_or_else(|| format!("{key} is not a plain value in its table"))?;
        let decor = item.decor().clone();
        *item = new;
        *item.decor_mut() = decor;
        document.to_string()
    } else {
        let lines: Vec<&str> = text.lines().collect();
        let mut out: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        let line = format!("{field} = {}", new.to_string().trim());
        match table_lines(&lines, namespace) {
            Some(region) => match region.clone().find(|at| is_commented(lines[*at], field)) {
                Some(at) => out[at] = line,
                None => {
                    // After the table's last line that is not blank.
                    let mut at = region.end;
                    while at > region.start && lines[at - 1].trim().is_empty() {
                        at -= 1;
                    }
                    out.insert(at, line);
                }
            },
            None => {
                if out.last().is_some_and(|l| !l.trim().is_empty()) {
                    out.push(String::new());
                }
                out.push(format!("[{namespace}]"));
                out.push(line);
            }
        }
        out.join("\n") + "\n"
    };
    let mut after = values_of(&out).map_err(|e| format!("setting {key} would break it: {e}"))?;
    if after.remove(&key).as_deref() != Some(value) {
        return Err(format!("{key} does not read back as {value:?}"));
    }
    let mut expected = before;
    expected.remove(&key);
    if after != expected {
        return Err(format!("setting {key} would change other values"));
    }
    Ok(out)
}

/// Writes `text` to `path` whole (a temporary file beside it, mode 0600,
/// renamed over it: a reader sees the old file or the new one).
pub fn write(path: &Path, text: &str) -> Result<(), SettingsFileError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let error = |source| SettingsFileError::Write {
        path: path.to_path_buf(),
        source,
    };
    let temporary = path.with_extension("toml.writing");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&temporary)
        .map_err(error)?;
    file.write_all(text.as_bytes()).map_err(error)?;
    file.sync_all().map_err(error)?;
    drop(file);
    std::fs::rename(&temporary, path).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn info(key: &str, type_name: &str, default: &str, help: &str) -> SettingInfo {
        SettingInfo {
            key: key.into(),
            type_name: type_name.into(),
            default: default.into(),
            help: help.into(),
            live: false,
        }
    }

    fn network() -> (String, Vec<SettingInfo>) {
        (
            "network".into(),
            vec![
                info(
                    "network.max_frame_size",
                    "u32",
                    "16777216",
                    "Largest frame a peer may send, in bytes.",
                ),
                info("network.tls_cert", "optional path", "", "TLS certificate."),
            ],
        )
    }

    fn main() -> (String, Vec<SettingInfo>) {
        (
            "main".into(),
            vec![
                info("main.motd", "string", "", "Told to every player at spawn."),
                info("main.creative", "bool", "false", "Everyone builds freely."),
                info("main.rate", "f64", "2.5", ""),
            ],
        )
    }

    const WORLD: &str = "\
# Buildat world configuration.
[world]
name = \"A world\"
# Seed of the terrain generator.
seed = 7
# section_size = [2, 2, 2]
";

    #[test]
    fn values_read_as_a_set_would_give_them() {
        let values = values_of(
            "[main]\nmotd = \"Hello, \\\"you\\\"\"\ncreative = true\nrate = 0.5\n\
             [network]\nmax_frame_size = 64\n[world]\nsection_size = [2, 2, 2]\n",
        )
        .unwrap();
        assert_eq!(values["main.motd"], "Hello, \"you\"");
        assert_eq!(values["main.creative"], "true");
        assert_eq!(values["main.rate"], "0.5");
        assert_eq!(values["network.max_frame_size"], "64");
        assert_eq!(values["world.section_size"], "[2, 2, 2]");
        assert!(values_of("[main\nmotd = 1").is_err());
        assert!(values_of("").unwrap().is_empty());
    }

    #[test]
    fn defaults_are_added_commented_under_their_help_keeping_the_file() {
        let text = add_defaults(WORLD, &[network(), main()]).unwrap().unwrap();
        assert!(
            text.starts_with(WORLD),
            "the file is kept as it was:\n{text}"
        );
        assert!(
            text.contains(
                "[network]\n# The settings of network: uncomment a line to change one \
                 (`buildat-server settings` shows them).\n\
                 # Largest frame a peer may send, in bytes.\n\
                 # max_frame_size = 16777216\n\n# TLS certificate.\n# tls_cert = \"\"\n"
            ),
            "{text}"
        );
        assert!(text.contains("# Told to every player at spawn.\n# motd = \"\"\n"));
        assert!(text.contains("# creative = false\n"), "{text}");
        assert!(text.contains("\n# rate = 2.5\n"), "{text}");
        assert_eq!(values_of(&text).unwrap(), values_of(WORLD).unwrap());
        // Written once: nothing more to add.
        assert_eq!(add_defaults(&text, &[network(), main()]).unwrap(), None);
    }

    #[test]
    fn only_missing_settings_are_added_to_an_existing_table() {
        let file = "[main]\n# My own note.\ncreative = true\n\n[world]\nseed = 1\n";
        let text = add_defaults(file, &[main()]).unwrap().unwrap();
        assert_eq!(
            text,
            "[main]\n# My own note.\ncreative = true\n\n\
             # Told to every player at spawn.\n# motd = \"\"\n\n# rate = 2.5\n\n\
             [world]\nseed = 1\n"
        );
        assert_eq!(values_of(&text).unwrap()["main.creative"], "true");
        assert_eq!(add_defaults(&text, &[main()]).unwrap(), None);
    }

    #[test]
    fn set_replaces_the_commented_default_then_the_value() {
        let text = add_defaults(WORLD, &[network(), main()]).unwrap().unwrap();
        let set = set_value(&text, "network", "max_frame_size", "u32", "1000").unwrap();
        assert!(
            set.contains("# Largest frame a peer may send, in bytes.\nmax_frame_size = 1000\n"),
            "{set}"
        );
        assert!(!set.contains("# max_frame_size"), "{set}");
        assert!(set.starts_with(WORLD), "{set}");
        let again = set_value(&set, "network", "max_frame_size", "u32", "2000").unwrap();
        assert!(again.contains("bytes.\nmax_frame_size = 2000\n"), "{again}");
        let motd = set_value(&again, "main", "motd", "string", "Be \"kind\"").unwrap();
        assert_eq!(values_of(&motd).unwrap()["main.motd"], "Be \"kind\"");
        assert_eq!(values_of(&motd).unwrap()["world.seed"], "7");
        assert!(motd.contains("# Seed of the terrain generator.\n"));
    }

    #[test]
    fn set_adds_a_key_or_a_table_that_is_not_there() {
        let set = set_value(WORLD, "main", "creative", "bool", "true").unwrap();
        assert!(set.starts_with(WORLD), "{set}");
        assert!(set.contains("[main]\ncreative = true\n"), "{set}");
        let more = set_value(&set, "main", "rate", "f64", "0.25").unwrap();
        let values = values_of(&more).unwrap();
        assert_eq!(values["main.creative"], "true");
        assert_eq!(values["main.rate"], "0.25");
        // A number too big for TOML's integers is kept as a string.
        let big = set_value("", "voxelworld", "cap", "u64", "18446744073709551615").unwrap();
        assert_eq!(
            values_of(&big).unwrap()["voxelworld.cap"],
            "18446744073709551615"
        );
    }

    #[test]
    fn the_file_is_written_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(FILE_NAME);
        assert!(read_values(&path).unwrap().is_empty(), "none yet");
        write(&path, "[main]\nmotd = \"hi\"\n").unwrap();
        assert_eq!(read_values(&path).unwrap()["main.motd"], "hi");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(&path, "[main").unwrap();
        let error = read_values(&path).unwrap_err().to_string();
        assert!(error.contains("world.toml is not valid TOML"), "{error}");
    }
}
