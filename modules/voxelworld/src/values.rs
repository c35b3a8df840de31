//! Modules' values kept with the world (`get_value`, `put_values`,
//! `list_values`): each call checked against the API's limits before
//! storage sees it; and the tables modules kept in `world.sqlite` before
//! values (`old_tables.rs`).
//!
//! Owns: those checks. Does not own: the values' storage (`storage.rs`).

use super::*;

/// Why a value call is refused or fails.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValueError {
    /// A space or key outside the API's limits.
    #[error("{0}")]
    BadKey(String),
    #[error("put_values of {0} writes: at most {MAX_VALUE_WRITES}")]
    TooManyWrites(usize),
    #[error("the value {space}/{key} is {len} bytes: at most {MAX_VALUE_BYTES}")]
    TooLarge {
        space: String,
        key: String,
        len: usize,
    },
    #[error("modules' values: {0}")]
    Storage(#[from] storage::StorageError),
    /// Reading or dropping a table of `world.sqlite` (`old_tables.rs`).
    #[error("{0}")]
    OldTable(String),
}

impl From<ValueError> for ModuleError {
    fn from(error: ValueError) -> Self {
        ModuleError::msg(error.to_string())
    }
}

/// Checks a [`PutValues`] call's writes against the limits of
/// `buildat_voxelworld_api` before storage sees them.
pub(crate) fn check_value_writes(writes: &[ValueWrite]) -> Result<(), ValueError> {
    if writes.len() > MAX_VALUE_WRITES {
        return Err(ValueError::TooManyWrites(writes.len()));
    }
    for write in writes {
        check_value_key(&write.space, &write.key).map_err(ValueError::BadKey)?;
        if let Some(value) = &write.value
            && value.len() > MAX_VALUE_BYTES
        {
            return Err(ValueError::TooLarge {
                space: write.space.clone(),
                key: write.key.clone(),
                len: value.len(),
            });
        }
    }
    Ok(())
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
            check_value_key(&request.space, &request.key).map_err(ValueError::BadKey)?;
            world
                .world
                .storage_mut()
                .get_value(&request.space, &request.key)
                .map_err(|e| ValueError::Storage(e).into())
        })
        .call(|world, request: PutValues| {
            check_value_writes(&request.writes)?;
            world
                .world
                .storage_mut()
                .put_values(&request.writes)
                .map_err(|e| ValueError::Storage(e).into())
        })
        .call(|world, request: ListValues| {
            check_value_space(&request.space).map_err(ValueError::BadKey)?;
            world
                .world
                .storage_mut()
                .list_values(&request)
                .map_err(|e| ValueError::Storage(e).into())
        })
        .call(|world, request: ReadOldTable| {
            old_tables::read_old_table(&world.old_tables_path(), &request.table)
                .map_err(|e| ValueError::OldTable(e).into())
        })
        .call(|world, request: DropOldTables| {
            old_tables::drop_old_tables(&world.old_tables_path(), &request.tables)
                .map_err(|e| ValueError::OldTable(e).into())
        });
}

#[cfg(test)]
mod tests {
    use super::*;
    use buildat_interface::testing::TestHost;

    fn write(space: &str, key: &str, len: usize) -> ValueWrite {
        ValueWrite {
            space: space.into(),
            key: key.into(),
            value: Some(vec![7; len]),
            only_if_absent: false,
        }
    }

    /// Each refusal is its own error, checked before storage sees the
    /// call; what passes is kept in the world's storage.
    #[test]
    fn values_past_the_limits_are_refused_by_kind_and_the_rest_kept() {
        assert!(matches!(
            check_value_writes(&vec![write("a", "b", 1); MAX_VALUE_WRITES + 1]),
            Err(ValueError::TooManyWrites(n)) if n == MAX_VALUE_WRITES + 1
        ));
        assert!(matches!(
            check_value_writes(&[write("a", "b", MAX_VALUE_BYTES + 1)]),
            Err(ValueError::TooLarge { len, .. }) if len == MAX_VALUE_BYTES + 1
        ));
        assert!(matches!(
            check_value_writes(&[write("", "b", 1)]),
            Err(ValueError::BadKey(_))
        ));
        let dir = tempfile::tempdir().expect("temp dir");
        let kit = TestHost::new().world_path(dir.path());
        let mut world = kit.load::<VoxelWorld>().expect("loads");
        let error = world
            .call(&PutValues {
                writes: vec![write("creatures", "count", MAX_VALUE_BYTES + 1)],
            })
            .expect_err("too large");
        assert!(error.to_string().contains("at most"), "{error}");
        assert!(
            world
                .call(&PutValues {
                    writes: vec![write("creatures", "count", 3)],
                })
                .expect("kept")
        );
        assert_eq!(
            world
                .call(&GetValue {
                    space: "creatures".into(),
                    key: "count".into(),
                })
                .expect("read"),
            Some(vec![7; 3])
        );
    }
}
