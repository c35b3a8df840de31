//! The modules' settings in the host: the value a module is handed for a
//! key (`--set KEY=VALUE` for one run, else the key in its namespace's
//! table of `<world>/world.toml`, else nothing: the module's declared
//! default), what each module declared (`declare_settings`: set keys it
//! does not declare warned about with the nearest declared name, a set
//! value not of its type refused, so the module does not start on it),
//! the listing with each value's source (`list_settings`), the commented
//! defaults written into the file after the start, the console's
//! `set MODULE.KEY VALUE` (a live setting handed to its module at once:
//! `apply_settings`, the file put back when the module refuses it), and
//! the check of what modules read: a key a module reads through
//! `get_config` that is neither the core's ([`config::CORE_KEYS`]) nor
//! declared by a loaded module is warned about, naming both.
//!
//! Owns: precedence and the file's values as the host holds them
//! (`CoreInner::file_settings`: read at start, again before a console
//! `load`/`reload` and after a `set`). Does not own: the file's format and
//! editing (`crate::world_settings`), the warning's text
//! (`crate::settings`), parsing a value (`buildat_interface::settings`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use buildat_interface::core_api::{self, ModuleState, SettingSource};
use buildat_interface::settings::{SettingInfo, check_value};
use buildat_interface::{Call, CallError, ModuleError, config};

use super::slot::lock;
use super::{CONSOLE_CALLER, Core, CoreError, CoreInner};
use crate::world_settings;

impl Core {
    /// `set KEY VALUE` on the console: checks `value` against the setting
    /// a loaded module declares as `key`, writes it into `world.toml`
    /// (comments kept), hands it out from now on, and says when the module
    /// takes it: now (a live setting, applied by the module before this
    /// answers; a module that refuses it keeps its value and the file is
    /// put back, an error) or at its next reload.
    pub fn set_setting(&self, key: &str, value: &str) -> Result<String, CoreError> {
        self.inner.set_setting(key, value)
    }
}

/// What to say about a key a module read that nobody declares; `None`
/// when it is the core's own or declared.
pub(crate) fn undeclared_read(module: &str, key: &str, declared: bool) -> Option<String> {
    if declared || config::CORE_KEYS.contains(&key) {
        return None;
    }
    Some(format!(
        "module {module} read the setting {key}, which no loaded module declares (declare it \
         with settings! so `buildat-server settings` lists it; the core's own keys are {})",
        config::CORE_KEYS.join(", ")
    ))
}

impl CoreInner {
    fn settings_path(&self) -> PathBuf {
        self.config.world_path.join(world_settings::FILE_NAME)
    }

    /// The value handed to modules for `key`, and where it comes from:
    /// `--set` over `world.toml`; `None`: neither sets it.
    pub(super) fn get_setting(&self, key: &str) -> Option<(String, SettingSource)> {
        if let Some(value) = self.config.extra.get(key) {
            return Some((value.clone(), SettingSource::Set));
        }
        let file = self.file_settings.read().unwrap_or_else(|e| e.into_inner());
        file.get(key)
            .map(|value| (value.clone(), SettingSource::File))
    }

    /// Reads `world.toml` again (an operator's edit is seen by the next
    /// load or reload); a file that does not parse keeps the values held,
    /// with a warning.
    pub(super) fn refresh_file_settings(&self) {
        match world_settings::read_values(&self.settings_path()) {
            Ok(values) => self.replace_file_settings(values),
            Err(error) => tracing::warn!("{error}: keeping the values read before"),
        }
    }

    fn replace_file_settings(&self, values: BTreeMap<String, String>) {
        *self
            .file_settings
            .write()
            .unwrap_or_else(|e| e.into_inner()) = values;
    }

    /// Keeps the settings `module` declares under a namespace (replacing
    /// what it declared there before), warns about set keys in the
    /// namespace it does not declare (a typo the module would never read),
    /// naming the nearest declared one, and refuses a set value that is not
    /// of its setting's type (the module does not start on it).
    pub(super) fn declare_settings(
        &self,
        module: &str,
        request: core_api::DeclareSettings,
    ) -> Result<(), ModuleError> {
        let slot = self.get_slot(module).ok_or_else(|| {
            ModuleError::Call(CallError::Invalid(format!(
                "only a loaded module declares settings, not '{module}'"
            )))
        })?;
        let prefix = format!("{}.", request.namespace);
        let declared: Vec<&str> = request.settings.iter().map(|s| s.key.as_str()).collect();
        for (key, source) in &self.configured_keys() {
            let (key, source) = (key.as_str(), *source);
            if key.starts_with(&prefix) && !declared.contains(&key) {
                tracing::warn!(
                    "{}",
                    crate::settings::not_declared(key, module, source, declared.iter().copied())
                );
            }
        }
        for info in &request.settings {
            if let Some((value, _)) = self.get_setting(&info.key) {
                check_value(info, &value)?;
            }
        }
        lock(&slot.settings).insert(request.namespace, request.settings);
        Ok(())
    }

    /// Every key given a value outside the code, with where from: `--set`
    /// first, then `world.toml`.
    fn configured_keys(&self) -> Vec<(String, &'static str)> {
        let set_keys = self.config.extra.keys().map(|key| (key.clone(), "--set"));
        let file = self.file_settings.read().unwrap_or_else(|e| e.into_inner());
        let file_keys = file.keys().map(|key| (key.clone(), "world.toml"));
        set_keys.chain(file_keys).collect()
    }

    /// Every loaded module's declared settings, in load order, each with
    /// the value set for it and where from.
    pub(super) fn list_settings(&self) -> Vec<core_api::ModuleSettings> {
        self.list_modules()
            .into_iter()
            .filter_map(|info| {
                let slot = self.get_slot(&info.name)?;
                let settings: Vec<core_api::CurrentSetting> = lock(&slot.settings)
                    .values()
                    .flatten()
                    .map(|setting| {
                        let (value, source) = match self.get_setting(&setting.key) {
                            Some((value, source)) => (Some(value), source),
                            None => (None, SettingSource::Default),
                        };
                        core_api::CurrentSetting {
                            value,
                            source,
                            info: setting.clone(),
                        }
                    })
                    .collect();
                (!settings.is_empty()).then_some(core_api::ModuleSettings {
                    module: info.name,
                    settings,
                })
            })
            .collect()
    }

    /// Whether a loaded module declares the setting `key`.
    pub(super) fn is_declared(&self, key: &str) -> bool {
        self.declared()
            .iter()
            .any(|(_, _, settings)| settings.iter().any(|s| s.key == key))
    }

    /// Every declared setting: (module, namespace, its settings), in load
    /// order.
    fn declared(&self) -> Vec<(String, String, Vec<SettingInfo>)> {
        self.list_modules()
            .into_iter()
            .filter_map(|info| Some((info.name.clone(), self.get_slot(&info.name)?)))
            .flat_map(|(module, slot)| {
                lock(&slot.settings)
                    .iter()
                    .map(|(namespace, settings)| {
                        (module.clone(), namespace.clone(), settings.clone())
                    })
                    .collect::<Vec<_>>()
            })
            .collect()
    }

    /// After the start: warns about set keys (`--set`, `world.toml`) in a
    /// namespace no loaded module declares (a misspelt module name), with
    /// the nearest declared key; `world.toml`'s `[world]` table is
    /// voxelworld's own, not settings. Keys in a declared namespace were
    /// warned about when it was declared.
    pub(super) fn warn_unclaimed_settings(&self) {
        let declared = self.declared();
        let namespaces: Vec<&str> = declared.iter().map(|(_, n, _)| n.as_str()).collect();
        let keys: Vec<&str> = declared
            .iter()
            .flat_map(|(_, _, settings)| settings.iter().map(|s| s.key.as_str()))
            .collect();
        for (key, source) in &self.configured_keys() {
            let (key, source) = (key.as_str(), *source);
            let Some((namespace, _)) = key.split_once('.') else {
                continue;
            };
            if namespaces.contains(&namespace) || (source == "world.toml" && namespace == "world") {
                continue;
            }
            let hint = match crate::settings::nearest(key, keys.iter().copied()) {
                Some(name) => format!("; did you mean {name}?"),
                None => String::new(),
            };
            tracing::warn!(
                "{key} is not a setting of any loaded module{hint} (set in {source}; \
                 `buildat-server settings` lists them)"
            );
        }
    }

    /// After the start: every declared setting not in `world.toml` yet is
    /// added to its namespace's table as a commented default under its
    /// help (the file made when there is none). What is there is kept.
    pub(super) fn write_setting_defaults(&self) {
        let path = self.settings_path();
        let declared: Vec<(String, Vec<SettingInfo>)> = self
            .declared()
            .into_iter()
            .map(|(_, namespace, settings)| (namespace, settings))
            .collect();
        let result = world_settings::read_text(&path).and_then(|text| {
            world_settings::add_defaults(&text, &declared).map_err(|message| {
                world_settings::SettingsFileError::Edit {
                    path: path.clone(),
                    message,
                }
            })
        });
        match result {
            Ok(None) => {}
            Ok(Some(text)) => match world_settings::write(&path, &text) {
                Ok(()) => tracing::info!(
                    "{}: added the settings not in it yet, commented, with their defaults",
                    path.display()
                ),
                Err(error) => tracing::warn!("{error}"),
            },
            Err(error) => tracing::warn!("cannot add the settings' defaults: {error}"),
        }
    }

    fn set_setting(self: &Arc<Self>, key: &str, value: &str) -> Result<String, CoreError> {
        let declared = self.declared();
        let Some((module, namespace, info)) =
            declared.iter().find_map(|(module, namespace, settings)| {
                let info = settings.iter().find(|info| info.key == key)?;
                Some((module, namespace, info))
            })
        else {
            let keys = declared
                .iter()
                .flat_map(|(_, _, settings)| settings.iter().map(|s| s.key.as_str()));
            let hint = match crate::settings::nearest(key, keys) {
                Some(name) => format!("; did you mean {name}?"),
                None => String::new(),
            };
            return Err(CoreError::Refused(format!(
                "no loaded module declares the setting {key}{hint} (`settings` lists them)"
            )));
        };
        check_value(info, value).map_err(|e| CoreError::Refused(e.to_string()))?;
        let field = key
            .strip_prefix(namespace.as_str())
            .and_then(|rest| rest.strip_prefix('.'))
            .ok_or_else(|| CoreError::Refused(format!("{key} is not in {namespace}")))?;
        let path = self.settings_path();
        let refused =
            |message: String| CoreError::Refused(format!("{}: {message}", path.display()));
        let text = world_settings::read_text(&path).map_err(|e| refused(e.to_string()))?;
        let before = text.clone();
        let text = world_settings::set_value(&text, namespace, field, &info.type_name, value)
            .map_err(refused)?;
        let values = world_settings::values_of(&text).map_err(refused)?;
        world_settings::write(&path, &text).map_err(|e| refused(e.to_string()))?;
        let held = self
            .file_settings
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        self.replace_file_settings(values);
        if let Some(set) = self.config.extra.get(key) {
            return Ok(format!(
                "{key} = {value:?} is in {} now; --set {key}={set} still wins until the server \
                 restarts without it",
                path.display()
            ));
        }
        if !info.live {
            return Ok(format!(
                "{key} = {value:?} is in {} now; {module} reads it at the next reload of \
                 {module} (`reload {module}`)",
                path.display()
            ));
        }
        let state = self.get_slot(module).map(|slot| slot.state());
        if !matches!(state, Some(ModuleState::Loaded)) {
            return Ok(format!(
                "{key} = {value:?} is in {} now; {module} is not running ({}), it reads it when \
                 it loads again",
                path.display(),
                state.map_or("unloaded".to_string(), |s| format!("{s:?}").to_lowercase())
            ));
        }
        match self.apply_settings(module, namespace, key) {
            Ok(done) => {
                let done = if done.is_empty() {
                    String::new()
                } else {
                    format!(": {done}")
                };
                Ok(format!(
                    "{key} = {value:?} is in {} now and applied now by {module}{done}",
                    path.display()
                ))
            }
            Err(error) => {
                // The module keeps what it had: so does the file.
                self.replace_file_settings(held);
                let put_back = match world_settings::write(&path, &before) {
                    Ok(()) => format!("{} is as it was", path.display()),
                    Err(e) => format!("{e}; {} holds the refused value", path.display()),
                };
                Err(CoreError::Refused(format!(
                    "{key} = {value:?}: {module} did not apply it and keeps the value it had \
                     ({}); {put_back}",
                    error.message()
                )))
            }
        }
    }

    /// Asks `module` to read its live settings of `namespace` again now
    /// that `key` changed; its answer says what it did.
    fn apply_settings(
        self: &Arc<Self>,
        module: &str,
        namespace: &str,
        key: &str,
    ) -> Result<String, CallError> {
        let request = core_api::ApplySettings {
            namespace: namespace.to_string(),
            keys: vec![key.to_string()],
        };
        let payload =
            buildat_interface::encode(&request).map_err(|e| CallError::Invalid(e.to_string()))?;
        let reply = self.call(
            CONSOLE_CALLER,
            module,
            core_api::ApplySettings::FUNCTION,
            &payload,
        )?;
        buildat_interface::decode(&reply).map_err(|e| CallError::Invalid(e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_key_is_warned_about_unless_declared_or_the_cores_own() {
        assert_eq!(undeclared_read("web", "network.tls_cert", true), None);
        for key in config::CORE_KEYS {
            assert_eq!(undeclared_read("web", key, false), None, "{key}");
        }
        let warning = undeclared_read("probe", "probe_panic", false).expect("warned");
        assert!(
            warning.starts_with(
                "module probe read the setting probe_panic, which no loaded module declares"
            ),
            "{warning}"
        );
        assert!(
            warning.contains("headless"),
            "names the core's keys: {warning}"
        );
    }
}
