//! The listing `buildat-server settings` prints: every loaded module's
//! declared settings (`buildat_interface::settings`) as a table of key,
//! type, default, current value, where it came from, when a change is
//! applied (`live`: at once by the console's `set`; `reload`: at the
//! module's next reload) and help; and the
//! warning about a set key no module declares, with the nearest declared
//! name ([`not_declared`]).
//!
//! Owns: the table's layout, the warning's text and the nearest name (edit
//! distance). Does not own: the declarations (the modules) or collecting
//! them (the core's `list_settings`).

use buildat_interface::core_api::ModuleSettings;

/// A cell for an empty value (an unset optional setting).
const EMPTY: &str = "-";

/// The table of `modules`' settings: one block per module, its name on a
/// line, then a row per setting. The current value is the one set
/// (`--set KEY=VALUE`, else `world.toml`) or else the default; SOURCE says
/// which (`--set`, `world.toml`, `default`); APPLIED when a `set` of it
/// takes effect ([`applied`]).
pub fn format_table(modules: &[ModuleSettings]) -> String {
    if modules.is_empty() {
        return "no loaded module declares settings\n".to_string();
    }
    let shown = |text: &str| {
        if text.is_empty() {
            EMPTY.to_string()
        } else {
            text.to_string()
        }
    };
    let header = [
        "KEY", "TYPE", "DEFAULT", "VALUE", "SOURCE", "APPLIED", "HELP",
    ]
    .map(String::from);
    let rows: Vec<(&str, [String; 7])> = modules
        .iter()
        .flat_map(|module| {
            module.settings.iter().map(|setting| {
                let info = &setting.info;
                let value = match &setting.value {
                    Some(value) => shown(value),
                    None => shown(&info.default),
                };
                let row = [
                    info.key.clone(),
                    info.type_name.clone(),
                    shown(&info.default),
                    value,
                    setting.source.label().to_string(),
                    applied(info.live).to_string(),
                    info.help.clone(),
                ];
                (module.module.as_str(), row)
            })
        })
        .collect();
    let mut widths = header.clone().map(|cell| cell.chars().count());
    for (_, row) in &rows {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 7]| {
        let mut text = String::from("  ");
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                text.push_str(cell);
            } else {
                text.push_str(&format!("{cell:<width$}  "));
            }
        }
        text.trim_end().to_string() + "\n"
    };
    let mut out = String::new();
    let mut current = None;
    for (module, row) in &rows {
        if current != Some(*module) {
            if current.is_some() {
                out.push('\n');
            }
            out.push_str(&format!("{module}\n"));
            out.push_str(&line(&header));
            current = Some(*module);
        }
        out.push_str(&line(row));
    }
    out
}

/// When a setting's change takes effect, as the APPLIED column shows it:
/// `live` (the console's `set` hands it to the running module) or `reload`
/// (the module reads it at its next reload).
pub fn applied(live: bool) -> &'static str {
    if live { "live" } else { "reload" }
}

/// The warning for `key`, set in `source` (`--set`, `world.toml`), in a
/// namespace of `module` that declares `declared` but not `key`: with the
/// nearest declared name when one is near.
pub fn not_declared<'a>(
    key: &str,
    module: &str,
    source: &str,
    declared: impl IntoIterator<Item = &'a str>,
) -> String {
    let hint = match nearest(key, declared) {
        Some(name) => format!("; did you mean {name}?"),
        None => String::new(),
    };
    format!(
        "{key} is not a setting of {module}{hint} (set in {source}; `buildat-server settings` \
         lists them)"
    )
}

/// The name in `names` nearest to `key` by edit distance, when it is near
/// enough to be a typo of it (at most a third of its letters, or 2, apart).
pub fn nearest<'a>(key: &str, names: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = (key.chars().count() / 3).max(2);
    names
        .into_iter()
        .map(|name| (edit_distance(key, name), name))
        .filter(|(distance, _)| *distance <= limit)
        .min_by_key(|(distance, _)| *distance)
        .map(|(_, name)| name)
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut current = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = previous[j] + usize::from(ca != *cb);
            current[j + 1] = substitute.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        previous = current;
    }
    previous[b.len()]
}

#[cfg(test)]
mod tests {
    use buildat_interface::core_api::{CurrentSetting, SettingSource};
    use buildat_interface::settings::SettingInfo;

    use super::*;

    fn setting(key: &str, default: &str, value: Option<&str>) -> CurrentSetting {
        CurrentSetting {
            info: SettingInfo {
                key: key.into(),
                type_name: "u32".into(),
                default: default.into(),
                help: format!("The {key}."),
                live: false,
            },
            source: if value.is_some() {
                SettingSource::File
            } else {
                SettingSource::Default
            },
            value: value.map(String::from),
        }
    }

    #[test]
    fn the_nearest_declared_name_is_suggested() {
        let declared = ["main.creative", "main.motd", "main.whitelist"];
        assert_eq!(nearest("main.creativ", declared), Some("main.creative"));
        assert_eq!(nearest("main.mtod", declared), Some("main.motd"));
        assert_eq!(nearest("main.everything_else", declared), None);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(
            not_declared("main.creativ", "main", "world.toml", declared),
            "main.creativ is not a setting of main; did you mean main.creative? (set in \
             world.toml; `buildat-server settings` lists them)"
        );
        assert!(!not_declared("main.zzzzzzzzzz", "main", "--set", declared).contains("mean"));
    }

    #[test]
    fn rows_are_aligned_under_their_module() {
        let table = format_table(&[
            ModuleSettings {
                module: "network".into(),
                settings: vec![
                    CurrentSetting {
                        info: SettingInfo {
                            live: true,
                            ..setting("network.max_connections_per_ip", "16", None).info
                        },
                        ..setting("network.max_connections_per_ip", "16", Some("3"))
                    },
                    setting("network.tls_cert", "", None),
                ],
            },
            ModuleSettings {
                module: "web".into(),
                settings: vec![setting("web.max_connections", "64", None)],
            },
        ]);
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(lines[0], "network");
        assert!(lines[1].starts_with("  KEY "), "{table}");
        let row = lines[2].split_whitespace().collect::<Vec<_>>();
        assert_eq!(
            row,
            [
                "network.max_connections_per_ip",
                "u32",
                "16",
                "3",
                "world.toml",
                "live",
                "The",
                "network.max_connections_per_ip."
            ]
        );
        let unset = lines[3].split_whitespace().collect::<Vec<_>>();
        assert_eq!(
            &unset[..6],
            ["network.tls_cert", "u32", "-", "-", "default", "reload"]
        );
        // Columns line up: every row's help starts where the header's does.
        let help_at = lines[1].find("HELP").unwrap();
        assert_eq!(lines[2].find("The ").unwrap(), help_at);
        assert_eq!(lines[4], "");
        assert_eq!(lines[5], "web");
        assert!(lines[7].contains("web.max_connections"));
        assert_eq!(format_table(&[]), "no loaded module declares settings\n");
    }
}
