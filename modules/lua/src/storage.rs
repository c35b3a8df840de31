//! Mod storage (`buildat.get_mod_storage()`, Luanti's): a mod's strings
//! kept in the world's values, space `lua/<mod>` (voxelworld's
//! `PutValues`, so they are in every backup and survive a reload of the
//! mod or the server). Methods: `get_string`/`set_string`, `get_int`/
//! `set_int`, `get_float`/`set_float`, `get`, `contains`, `get_keys`,
//! `to_table` (`{fields = {...}}`).
//!
//! Owns: the storage object (one per VM), its cache of the mod's values
//! (read whole at first use, then kept), the text form of numbers (Luanti's:
//! every value is a string; `set_string(k, "")` removes `k`). Writes go
//! through at once (stored before the setter returns). Does not own: the
//! values' storage and bounds (voxelworld: a key up to 512 bytes, a value
//! up to 1 MiB).
//!
//! A mod's old VM (kept running while a broken save is refused) keeps its
//! own cache: what the broken version's `init.lua` wrote before failing is
//! in the world, but not seen by the old version until it loads again.

use std::cell::RefCell;
use std::collections::BTreeMap;

use buildat_interface::{Host, ModuleError};
use buildat_luau::lua_error;
use buildat_voxelworld_api::{
    ListValues, MAX_VALUES_LISTED, PutValues, ValueWrite, check_value_key, check_value_space,
};
use mlua::{AnyUserData, Lua, UserData, UserDataMethods, Value};

use crate::api::mod_data;

/// The registry key of a VM's storage object.
const STORAGE_KEY: &str = "buildat.storage";

/// The space of the world's values a mod's storage is kept in.
pub(crate) fn space_of(mod_name: &str) -> String {
    format!("lua/{mod_name}")
}

/// One mod's storage.
pub(crate) struct ModStorage {
    host: Host,
    space: String,
    /// The mod's values, once read.
    values: RefCell<Option<BTreeMap<String, Vec<u8>>>>,
}

impl ModStorage {
    pub(crate) fn new(host: Host, mod_name: &str) -> Self {
        Self {
            host,
            space: space_of(mod_name),
            values: RefCell::new(None),
        }
    }

    /// Every value of the space, read page by page.
    fn read_all(&self) -> Result<BTreeMap<String, Vec<u8>>, ModuleError> {
        let mut values = BTreeMap::new();
        let mut after = None;
        loop {
            let page = self.host.call(&ListValues {
                space: self.space.clone(),
                key_prefix: String::new(),
                after: after.take(),
                limit: MAX_VALUES_LISTED,
            })?;
            let full = page.len() >= MAX_VALUES_LISTED as usize;
            for value in page {
                after = Some(value.key.clone());
                values.insert(value.key, value.value);
            }
            if !full {
                return Ok(values);
            }
        }
    }

    /// Runs `f` on the values, reading them first if need be.
    fn with<R>(
        &self,
        method: &str,
        f: impl FnOnce(&mut BTreeMap<String, Vec<u8>>) -> R,
    ) -> mlua::Result<R> {
        let mut values = self.values.borrow_mut();
        if values.is_none() {
            let read = self
                .read_all()
                .map_err(|e| lua_error(format!("storage:{method}: reading {}: {e}", self.space)))?;
            *values = Some(read);
        }
        Ok(f(values.get_or_insert_with(BTreeMap::new)))
    }

    fn get(&self, method: &str, key: &str) -> mlua::Result<Option<Vec<u8>>> {
        self.with(method, |values| values.get(key).cloned())
    }

    /// Writes (or with `None` removes) one value, stored before it returns.
    fn put(&self, method: &str, key: &str, value: Option<Vec<u8>>) -> mlua::Result<()> {
        check_value_key(&self.space, key)
            .map_err(|e| lua_error(format!("storage:{method}: {e}")))?;
        self.with(method, |_| ())?;
        let written = self
            .host
            .call(&PutValues {
                writes: vec![ValueWrite {
                    space: self.space.clone(),
                    key: key.to_string(),
                    value: value.clone(),
                    only_if_absent: false,
                }],
            })
            .map_err(|e| lua_error(format!("storage:{method}: {e}")))?;
        if !written {
            return Err(lua_error(format!(
                "storage:{method}: the world did not store {key}"
            )));
        }
        self.with(method, |values| match value {
            Some(value) => values.insert(key.to_string(), value),
            None => values.remove(key),
        })?;
        Ok(())
    }
}

/// A stored text as a number: an integer, else a decimal, else `None`.
fn number_of(bytes: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(bytes).ok()?.trim();
    match text.parse::<i64>() {
        Ok(n) => Some(n as f64),
        Err(_) => text.parse::<f64>().ok().filter(|n| n.is_finite()),
    }
}

/// A number's text as stored: integers without a point.
fn text_of(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 9.0e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

impl UserData for ModStorage {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get_string", |lua, this, key: String| {
            let value = this.get("get_string", &key)?.unwrap_or_default();
            lua.create_string(value)
        });
        methods.add_method("get", |lua, this, key: String| {
            match this.get("get", &key)? {
                Some(value) => Ok(Value::String(lua.create_string(value)?)),
                None => Ok(Value::Nil),
            }
        });
        methods.add_method(
            "set_string",
            |_, this, (key, value): (String, Option<mlua::LuaString>)| {
                let value = value
                    .map(|v| v.as_bytes().to_vec())
                    .filter(|v| !v.is_empty());
                this.put("set_string", &key, value)
            },
        );
        methods.add_method("get_int", |_, this, key: String| {
            let value = this.get("get_int", &key)?;
            Ok(value
                .as_deref()
                .and_then(number_of)
                .map_or(0, |n| n.trunc() as i64))
        });
        methods.add_method("set_int", |_, this, (key, value): (String, f64)| {
            if !value.is_finite() {
                return Err(lua_error(format!(
                    "storage:set_int: {value} is not a number"
                )));
            }
            this.put("set_int", &key, Some(text_of(value.trunc()).into_bytes()))
        });
        methods.add_method("get_float", |_, this, key: String| {
            let value = this.get("get_float", &key)?;
            Ok(value.as_deref().and_then(number_of).unwrap_or(0.0))
        });
        methods.add_method("set_float", |_, this, (key, value): (String, f64)| {
            if !value.is_finite() {
                return Err(lua_error(format!(
                    "storage:set_float: {value} is not a number"
                )));
            }
            this.put("set_float", &key, Some(text_of(value).into_bytes()))
        });
        methods.add_method("contains", |_, this, key: String| {
            Ok(this.get("contains", &key)?.is_some())
        });
        methods.add_method("get_keys", |lua, this, ()| {
            let keys = this.with("get_keys", |values| {
                values.keys().cloned().collect::<Vec<_>>()
            })?;
            lua.create_sequence_from(keys)
        });
        methods.add_method("to_table", |lua, this, ()| {
            let pairs = this.with("to_table", |values| {
                values
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect::<Vec<_>>()
            })?;
            let fields = lua.create_table_with_capacity(0, pairs.len())?;
            for (key, value) in pairs {
                fields.raw_set(key, lua.create_string(value)?)?;
            }
            let table = lua.create_table_with_capacity(0, 1)?;
            table.raw_set("fields", fields)?;
            Ok(table)
        });
    }
}

/// `buildat.get_mod_storage()`: the mod's storage (the same object every
/// time in one VM).
pub(crate) fn get_mod_storage(lua: &Lua) -> mlua::Result<AnyUserData> {
    if let Some(storage) = lua.named_registry_value::<Option<AnyUserData>>(STORAGE_KEY)? {
        return Ok(storage);
    }
    let data = mod_data(lua)?;
    let storage = ModStorage::new(data.shared.host, &data.name);
    check_value_space(&storage.space).map_err(|e| lua_error(format!("get_mod_storage: {e}")))?;
    let storage = lua.create_userdata(storage)?;
    lua.set_named_registry_value(STORAGE_KEY, &storage)?;
    Ok(storage)
}

#[cfg(test)]
#[path = "tests_storage.rs"]
mod tests;
