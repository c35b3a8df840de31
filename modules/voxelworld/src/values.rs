//! Modules' values kept with the world (`get_value`, `put_values`,
//! `list_values`): each call checked against the API's limits before
//! storage sees it; and the tables modules kept in `world.sqlite` before
//! values (`old_tables.rs`).
//!
//! Owns: those checks. Does not own: the values' storage (`storage.rs`).

use super::*;

/// Checks a [`PutValues`] call's writes against the limits of
/// `buildat_voxelworld_api` before storage sees them.
pub(crate) fn check_value_writes(writes: &[ValueWrite]) -> Result<(), ModuleError> {
    if writes.len() > MAX_VALUE_WRITES {
        return Err(ModuleError::msg(format!(
            "put_values of {} writes: at most {MAX_VALUE_WRITES}",
            writes.len()
        )));
    }
    for write in writes {
        check_value_key(&write.space, &write.key).map_err(ModuleError::msg)?;
        if let Some(value) = &write.value
            && value.len() > MAX_VALUE_BYTES
        {
            return Err(ModuleError::msg(format!(
                "the value {}/{} is {} bytes: at most {MAX_VALUE_BYTES}",
                write.space,
                write.key,
                value.len()
            )));
        }
    }
    Ok(())
}

pub(crate) fn value_error(error: storage::StorageError) -> ModuleError {
    ModuleError::msg(format!("modules' values: {error}"))
}

impl VoxelWorld {
    /// `<world>/world.sqlite`, where modules kept tables of their own
    /// before modules' values (`old_tables.rs`).
    pub(crate) fn old_tables_path(&self) -> PathBuf {
        self.host.world_path().join("world.sqlite")
    }
}

/// The calls of this feature, in the module's receive table.
pub(crate) fn receive(table: &mut Receive<VoxelWorld>) {
    table
        .call(|world, request: GetValue| {
            check_value_key(&request.space, &request.key).map_err(ModuleError::msg)?;
            world
                .world
                .storage_mut()
                .get_value(&request.space, &request.key)
                .map_err(value_error)
        })
        .call(|world, request: PutValues| {
            check_value_writes(&request.writes)?;
            world
                .world
                .storage_mut()
                .put_values(&request.writes)
                .map_err(value_error)
        })
        .call(|world, request: ListValues| {
            check_value_space(&request.space).map_err(ModuleError::msg)?;
            world
                .world
                .storage_mut()
                .list_values(&request)
                .map_err(value_error)
        })
        .call(|world, request: ReadOldTable| {
            old_tables::read_old_table(&world.old_tables_path(), &request.table)
                .map_err(ModuleError::msg)
        })
        .call(|world, request: DropOldTables| {
            old_tables::drop_old_tables(&world.old_tables_path(), &request.tables)
                .map_err(ModuleError::msg)
        });
}
