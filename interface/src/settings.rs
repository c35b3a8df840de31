//! Typed module settings: a module declares its settings as one struct with
//! [`settings!`](crate::settings!) (each setting's name, type, default and
//! one line of help), reads them with [`Settings::read`] and tells the core
//! what it declared with `table.settings::<S>()` in its receive table
//! ([`crate::Receive::settings`]: [`Settings::declare`], the core's
//! `declare_settings`, on every start), so `buildat-server settings` lists
//! them with their current values.
//!
//! ```ignore
//! buildat_interface::settings! {
//!     /// The network module's settings.
//!     pub struct NetworkSettings in "network" {
//!         /// Connections one address may hold at once.
//!         pub max_connections_per_ip: u32 = 16,
//!     }
//! }
//! // in `create`:
//! let settings = NetworkSettings::read(&host)?; // `network.max_connections_per_ip`
//! // in `receive`:
//! table.settings::<NetworkSettings>();
//! ```
//!
//! Owns: the [`Settings`] trait, the macro, parsing and showing a value
//! ([`SettingValue`], [`check_value`]), [`SettingInfo`] and
//! [`SettingsError`]. Does not own: where values come from (the host's
//! `get_config`: `--set KEY=VALUE`, else the `[NAMESPACE]` table of
//! `<world>/world.toml`), nor the core's table of declared settings (the
//! server).

use serde::{Deserialize, Serialize};

use crate::{Host, ModuleError};

/// One declared setting, as [`Settings::describe`] gives it and the core
/// keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SettingInfo {
    /// `namespace.field`, the key of `--set KEY=VALUE`.
    pub key: String,
    /// The value's type for people, e.g. `u32`, `string`, `optional path`.
    pub type_name: String,
    /// The default value as it would be written after `--set KEY=`.
    pub default: String,
    /// The setting's doc comment, on one line.
    pub help: String,
    /// Applied live: the console's `set` hands the new value to the
    /// running module at once ([`crate::core_api::ApplySettings`]);
    /// otherwise it is read at the module's next reload. Marked `#[live]`
    /// in [`settings!`](crate::settings!) and declared with
    /// [`crate::Receive::live_settings`].
    #[serde(default)]
    pub live: bool,
}

/// A setting's value was set but is not of its type.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SettingsError {
    #[error("setting {key}: '{value}' is not a valid {type_name}: {reason}")]
    Invalid {
        key: String,
        value: String,
        type_name: String,
        reason: String,
    },
}

impl From<SettingsError> for ModuleError {
    fn from(error: SettingsError) -> Self {
        ModuleError::Message(error.to_string())
    }
}

/// A type a setting can have: parsed from the text of `--set KEY=VALUE`,
/// shown as a default. Implemented for the integers, floats, `bool`,
/// `String`, `PathBuf` and `Option` of those (an empty value is `None`);
/// a module's own type implements it to be a setting.
pub trait SettingValue: Sized {
    /// The type's name for people (`u32`, `string`, `optional path`).
    fn type_name() -> String;
    /// Parses a set value; the error says why it is not one.
    fn parse_setting(text: &str) -> Result<Self, String>;
    /// The value as it would be set.
    fn show_setting(&self) -> String;
}

macro_rules! from_str_values {
    ($($ty:ty => $name:literal),+ $(,)?) => {
        $(
            impl SettingValue for $ty {
                fn type_name() -> String {
                    $name.to_string()
                }
                fn parse_setting(text: &str) -> Result<Self, String> {
                    text.parse().map_err(|e| format!("{e}"))
                }
                fn show_setting(&self) -> String {
                    self.to_string()
                }
            }
        )+
    };
}

from_str_values! {
    u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64", usize => "usize",
    i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", isize => "isize",
    f32 => "f32", f64 => "f64", bool => "bool", char => "char",
}

impl SettingValue for String {
    fn type_name() -> String {
        "string".to_string()
    }
    fn parse_setting(text: &str) -> Result<Self, String> {
        Ok(text.to_string())
    }
    fn show_setting(&self) -> String {
        self.clone()
    }
}

impl SettingValue for std::path::PathBuf {
    fn type_name() -> String {
        "path".to_string()
    }
    fn parse_setting(text: &str) -> Result<Self, String> {
        Ok(Self::from(text))
    }
    fn show_setting(&self) -> String {
        self.display().to_string()
    }
}

/// Unset or empty: `None`.
impl<T: SettingValue> SettingValue for Option<T> {
    fn type_name() -> String {
        format!("optional {}", T::type_name())
    }
    fn parse_setting(text: &str) -> Result<Self, String> {
        if text.is_empty() {
            return Ok(None);
        }
        T::parse_setting(text).map(Some)
    }
    fn show_setting(&self) -> String {
        self.as_ref().map(T::show_setting).unwrap_or_default()
    }
}

/// A module's settings, declared with [`settings!`](crate::settings!).
pub trait Settings: Sized {
    /// The keys' prefix: `NAMESPACE.field` (the module's name, usually).
    const NAMESPACE: &'static str;

    /// Reads every setting through `get` (a key's set value, `None` when
    /// unset): parsed, the default when unset; an error names the key and
    /// the type of the first value that is not one.
    fn read_with(get: impl FnMut(&str) -> Option<String>) -> Result<Self, SettingsError>;

    /// Every setting's key, type, default and help, in declaration order.
    fn describe() -> Vec<SettingInfo>;

    /// Reads the settings from the host's configuration (`--set KEY=VALUE`).
    fn read(host: &Host) -> Result<Self, SettingsError> {
        Self::read_with(|key| host.get_config(key))
    }

    /// Tells the core what this module declares, for `buildat-server
    /// settings` (on `core:start` and `core:continue`; they go when the
    /// module unloads), each setting marked live as [`Self::describe`]
    /// says: for a module that applies them
    /// ([`crate::Receive::live_settings`]).
    fn declare(host: &Host) -> Result<(), ModuleError> {
        host.call(&crate::core_api::DeclareSettings {
            namespace: Self::NAMESPACE.to_string(),
            settings: Self::describe(),
        })
    }

    /// [`Self::declare`] with no setting live: a module that reads its
    /// settings only when it starts ([`crate::Receive::settings`]).
    fn declare_read_at_start(host: &Host) -> Result<(), ModuleError> {
        let settings = Self::describe()
            .into_iter()
            .map(|info| SettingInfo {
                live: false,
                ..info
            })
            .collect();
        host.call(&crate::core_api::DeclareSettings {
            namespace: Self::NAMESPACE.to_string(),
            settings,
        })
    }
}

/// Checks `text` as a value of the declared setting `info` by its type
/// name, as the module's [`Settings::read`] would parse it, so a value set
/// anywhere (`--set`, `world.toml`, the console's `set`) is refused with
/// the same [`SettingsError`] before the module reads it. A type this
/// crate does not know (a module's own) passes: its module checks it.
pub fn check_value(info: &SettingInfo, text: &str) -> Result<(), SettingsError> {
    fn check<T: SettingValue>(text: &str) -> Option<Result<(), String>> {
        Some(T::parse_setting(text).map(drop))
    }
    let (optional, name) = match info.type_name.strip_prefix("optional ") {
        Some(inner) => (true, inner),
        None => (false, info.type_name.as_str()),
    };
    if optional && text.is_empty() {
        return Ok(());
    }
    let checked = match name {
        "u8" => check::<u8>(text),
        "u16" => check::<u16>(text),
        "u32" => check::<u32>(text),
        "u64" => check::<u64>(text),
        "usize" => check::<usize>(text),
        "i8" => check::<i8>(text),
        "i16" => check::<i16>(text),
        "i32" => check::<i32>(text),
        "i64" => check::<i64>(text),
        "isize" => check::<isize>(text),
        "f32" => check::<f32>(text),
        "f64" => check::<f64>(text),
        "bool" => check::<bool>(text),
        "char" => check::<char>(text),
        _ => None,
    };
    match checked {
        Some(Err(reason)) => Err(SettingsError::Invalid {
            key: info.key.clone(),
            value: text.to_string(),
            type_name: info.type_name.clone(),
            reason,
        }),
        _ => Ok(()),
    }
}

/// Reads one setting for [`settings!`](crate::settings!): `get(key)`
/// parsed as `T`, `default()` when unset.
#[doc(hidden)]
pub fn read_one<T: SettingValue>(
    get: &mut impl FnMut(&str) -> Option<String>,
    key: &str,
    default: impl FnOnce() -> T,
) -> Result<T, SettingsError> {
    match get(key) {
        None => Ok(default()),
        Some(text) => T::parse_setting(&text).map_err(|reason| SettingsError::Invalid {
            key: key.to_string(),
            value: text,
            type_name: T::type_name(),
            reason,
        }),
    }
}

/// Describes one setting for [`settings!`](crate::settings!): its doc
/// comment's lines joined on one line; live when marked (`live` holds the
/// marker `#[live]` left, or nothing).
#[doc(hidden)]
pub fn info<T: SettingValue>(key: &str, default: T, help: &[&str], live: &[&str]) -> SettingInfo {
    SettingInfo {
        live: !live.is_empty(),
        key: key.to_string(),
        type_name: T::type_name(),
        default: default.show_setting(),
        help: help
            .iter()
            .map(|line| line.trim())
            .filter(|line| !line.is_empty())
            .collect::<Vec<_>>()
            .join(" "),
    }
}

/// Declares a module's settings as one struct: each field's doc comment is
/// its help, its type a [`SettingValue`], its key `NAMESPACE.field`. A
/// field marked `#[live]` (after its doc comment) is applied live: the
/// console's `set` hands it to the running module at once, through the
/// handler the module gives [`crate::Receive::live_settings`]; unmarked
/// ones are read at the module's next reload:
///
/// ```
/// buildat_interface::settings! {
///     /// The network module's settings.
///     pub struct NetworkSettings in "network" {
///         /// Connections one address may hold at once.
///         #[live]
///         pub max_connections_per_ip: u32 = 16,
///         /// TLS certificate (PEM), relative to the world.
///         pub tls_cert: Option<String> = None,
///     }
/// }
/// use buildat_interface::settings::Settings;
/// let set = |key: &str| (key == "network.max_connections_per_ip").then(|| "3".to_string());
/// assert_eq!(NetworkSettings::read_with(set).unwrap().max_connections_per_ip, 3);
/// assert_eq!(NetworkSettings::default().tls_cert, None);
/// let live: Vec<bool> = NetworkSettings::describe().iter().map(|s| s.live).collect();
/// assert_eq!(live, [true, false]);
/// ```
/// Implements [`Settings`], `Default` (every default), `Debug` and `Clone`.
#[macro_export]
macro_rules! settings {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident in $namespace:literal {
            $(
                $(#[doc = $help:literal])*
                $(#[live $($live:tt)*])?
                $field_vis:vis $field:ident : $ty:ty = $default:expr
            ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone)]
        $vis struct $name {
            $(
                $(#[doc = $help])*
                $field_vis $field: $ty,
            )*
        }

        impl ::core::default::Default for $name {
            fn default() -> Self {
                Self { $($field: $default,)* }
            }
        }

        impl $crate::settings::Settings for $name {
            const NAMESPACE: &'static str = $namespace;

            fn read_with(
                mut get: impl FnMut(&str) -> ::core::option::Option<::std::string::String>,
            ) -> ::core::result::Result<Self, $crate::settings::SettingsError> {
                ::core::result::Result::Ok(Self {
                    $(
                        $field: $crate::settings::read_one::<$ty>(
                            &mut get,
                            concat!($namespace, ".", stringify!($field)),
                            || $default,
                        )?,
                    )*
                })
            }

            fn describe() -> ::std::vec::Vec<$crate::settings::SettingInfo> {
                ::std::vec![
                    $(
                        $crate::settings::info::<$ty>(
                            concat!($namespace, ".", stringify!($field)),
                            $default,
                            &[$($help),*],
                            &[$(stringify!(live $($live)*))?],
                        ),
                    )*
                ]
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    crate::settings! {
        /// Settings of a module under test.
        struct Probe in "probe" {
            /// Connections one address may hold at once.
            max_per_ip: u32 = 16,
            /// Where to listen,
            /// on two lines.
            listen: String = "0.0.0.0:20000".to_string(),
            /// Off by default.
            public: bool = false,
            /// A rate.
            rate: f64 = 2.5,
            /// Empty or unset: none.
            #[live]
            cert: Option<String> = None,
            bottom: i32 = -64,
        }
    }

    fn read(values: &[(&str, &str)]) -> Result<Probe, SettingsError> {
        let values: HashMap<String, String> = values
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Probe::read_with(|key| values.get(key).cloned())
    }

    #[test]
    fn unset_settings_are_their_defaults() {
        let probe = read(&[]).unwrap();
        assert_eq!(probe.max_per_ip, 16);
        assert_eq!(probe.listen, "0.0.0.0:20000");
        assert!(!probe.public);
        assert_eq!(probe.rate, 2.5);
        assert_eq!(probe.cert, None);
        assert_eq!(probe.bottom, -64);
        assert_eq!(Probe::default().max_per_ip, 16);
    }

    #[test]
    fn set_values_are_parsed_by_their_keys() {
        let probe = read(&[
            ("probe.max_per_ip", "3"),
            ("probe.listen", "127.0.0.1:1"),
            ("probe.public", "true"),
            ("probe.rate", "0.5"),
            ("probe.cert", "tls/cert.pem"),
            ("probe.bottom", "-1"),
            ("other.max_per_ip", "9"),
        ])
        .unwrap();
        assert_eq!(probe.max_per_ip, 3);
        assert_eq!(probe.listen, "127.0.0.1:1");
        assert!(probe.public);
        assert_eq!(probe.rate, 0.5);
        assert_eq!(probe.cert.as_deref(), Some("tls/cert.pem"));
        assert_eq!(probe.bottom, -1);
        assert_eq!(read(&[("probe.cert", "")]).unwrap().cert, None);
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_key_and_the_type() {
        let error = read(&[("probe.max_per_ip", "many")]).unwrap_err();
        assert!(matches!(
            &error,
            SettingsError::Invalid { key, value, type_name, .. }
                if key == "probe.max_per_ip" && value == "many" && type_name == "u32"
        ));
        let text = error.to_string();
        assert!(
            text.starts_with("setting probe.max_per_ip: 'many' is not a valid u32"),
            "{text}"
        );
        let error = read(&[("probe.public", "yes")]).unwrap_err().to_string();
        assert!(
            error.contains("probe.public") && error.contains("bool"),
            "{error}"
        );
        let module_error = ModuleError::from(read(&[("probe.rate", "x")]).unwrap_err());
        assert!(module_error.to_string().contains("probe.rate"));
    }

    #[test]
    fn check_value_refuses_as_reading_would() {
        let described = Probe::describe();
        let by_key = |key: &str| described.iter().find(|s| s.key == key).unwrap().clone();
        let per_ip = by_key("probe.max_per_ip");
        assert_eq!(check_value(&per_ip, "3"), Ok(()));
        let refused = check_value(&per_ip, "many").unwrap_err();
        assert_eq!(refused, read(&[("probe.max_per_ip", "many")]).unwrap_err());
        assert!(check_value(&by_key("probe.public"), "yes").is_err());
        assert_eq!(check_value(&by_key("probe.public"), "true"), Ok(()));
        assert_eq!(check_value(&by_key("probe.rate"), "64"), Ok(()));
        assert_eq!(check_value(&by_key("probe.listen"), "anything"), Ok(()));
        assert_eq!(check_value(&by_key("probe.cert"), ""), Ok(()));
        assert!(check_value(&by_key("probe.bottom"), "-1.5").is_err());
        let own = SettingInfo {
            type_name: "duration".into(),
            ..per_ip
        };
        assert_eq!(check_value(&own, "6h"), Ok(()), "a module's own type");
    }

    #[test]
    fn describe_gives_key_type_default_and_help() {
        let described = Probe::describe();
        let keys: Vec<&str> = described.iter().map(|s| s.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "probe.max_per_ip",
                "probe.listen",
                "probe.public",
                "probe.rate",
                "probe.cert",
                "probe.bottom"
            ]
        );
        assert_eq!(
            described[0],
            SettingInfo {
                key: "probe.max_per_ip".into(),
                type_name: "u32".into(),
                default: "16".into(),
                help: "Connections one address may hold at once.".into(),
                live: false,
            }
        );
        let live: Vec<&str> = described
            .iter()
            .filter(|s| s.live)
            .map(|s| s.key.as_str())
            .collect();
        assert_eq!(live, ["probe.cert"], "only the field marked #[live]");
        assert_eq!(described[1].help, "Where to listen, on two lines.");
        assert_eq!(described[1].type_name, "string");
        assert_eq!(described[1].default, "0.0.0.0:20000");
        assert_eq!(described[3].default, "2.5");
        assert_eq!(described[4].type_name, "optional string");
        assert_eq!(described[4].default, "");
        assert_eq!(described[5].help, "");
        assert_eq!(Probe::NAMESPACE, "probe");
    }
}
