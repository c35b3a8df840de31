//! The listing `buildat-server settings` prints: every loaded module's
//! declared settings (`buildat_interface::settings`) as a table of key,
//! type, default, current value and help.
//!
//! Owns: the table's layout. Does not own: the declarations (the modules)
//! or collecting them (the core's `list_settings`).

use buildat_interface::core_api::ModuleSettings;

/// A cell for an empty value (an unset optional setting).
const EMPTY: &str = "-";

/// The table of `modules`' settings: one block per module, its name on a
/// line, then a row per setting. The current value is the one set
/// (`--set KEY=VALUE`, marked `(set)`) or else the default.
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
    let header = ["KEY", "TYPE", "DEFAULT", "VALUE", "HELP"].map(String::from);
    let rows: Vec<(&str, [String; 5])> = modules
        .iter()
        .flat_map(|module| {
            module.settings.iter().map(|setting| {
                let info = &setting.info;
                let value = match &setting.value {
                    Some(value) => format!("{} (set)", shown(value)),
                    None => shown(&info.default),
                };
                let row = [
                    info.key.clone(),
                    info.type_name.clone(),
                    shown(&info.default),
                    value,
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
    let line = |row: &[String; 5]| {
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

#[cfg(test)]
mod tests {
    use buildat_interface::core_api::CurrentSetting;
    use buildat_interface::settings::SettingInfo;

    use super::*;

    fn setting(key: &str, default: &str, value: Option<&str>) -> CurrentSetting {
        CurrentSetting {
            info: SettingInfo {
                key: key.into(),
                type_name: "u32".into(),
                default: default.into(),
                help: format!("The {key}."),
            },
            value: value.map(String::from),
        }
    }

    #[test]
    fn rows_are_aligned_under_their_module() {
        let table = format_table(&[
            ModuleSettings {
                module: "network".into(),
                settings: vec![
                    setting("network.max_connections_per_ip", "16", Some("3")),
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
                "(set)",
                "The",
                "network.max_connections_per_ip."
            ]
        );
        let unset = lines[3].split_whitespace().collect::<Vec<_>>();
        assert_eq!(&unset[..4], ["network.tls_cert", "u32", "-", "-"]);
        // Columns line up: every row's help starts where the header's does.
        let help_at = lines[1].find("HELP").unwrap();
        assert_eq!(lines[2].find("The ").unwrap(), help_at);
        assert_eq!(lines[4], "");
        assert_eq!(lines[5], "web");
        assert!(lines[7].contains("web.max_connections"));
        assert_eq!(format_table(&[]), "no loaded module declares settings\n");
    }
}
