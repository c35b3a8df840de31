//! Tables other modules kept in `<world>/world.sqlite` before modules'
//! values existed (a game's accounts): read whole and dropped on their
//! behalf (`read_old_table`, `drop_old_tables`), so they can move their
//! rows into values.
//!
//! Owns: opening that file for these two calls with this module's SQLite
//! (each cdylib links its own copy; a second copy closing the file in the
//! same process drops this one's POSIX locks, and may checkpoint and
//! delete the WAL under the world's connection), refusing the world's own
//! tables and names that are not plain identifiers. Does not own: what the
//! rows mean (the module that asks), the world's schema (`storage.rs`).

use std::path::Path;
use std::time::Duration;

use buildat_voxelworld_api::{OldCell, OldTable};
use rusqlite::types::ValueRef;
use rusqlite::{Connection, OpenFlags, OptionalExtension};

/// The world's own tables (`storage.rs`): never read or dropped here.
const WORLD_TABLES: &[&str] = &[
    "meta",
    "section_size",
    "section",
    "node",
    "quarantine",
    "module_value",
    "rollback_block",
];

/// Checks a table name: a plain identifier, not one of the world's.
fn check_table(table: &str) -> Result<(), String> {
    if table.is_empty()
        || table.len() > 64
        || !table.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
    {
        return Err(format!(
            "'{table}' is not a table name (letters, digits and _)"
        ));
    }
    if WORLD_TABLES.contains(&table) || table.starts_with("sqlite_") {
        return Err(format!("'{table}' is the world's own table"));
    }
    Ok(())
}

fn open(path: &Path) -> Result<Option<Connection>, String> {
    if !path.exists() {
        return Ok(None);
    }
    let connection = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    connection
        .busy_timeout(Duration::from_secs(5))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(Some(connection))
}

fn has_table(connection: &Connection, table: &str) -> Result<bool, rusqlite::Error> {
    Ok(connection
        .query_row(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1",
            [table],
            |_| Ok(()),
        )
        .optional()?
        .is_some())
}

/// The rows of `table` in the SQLite file at `path`; `None` when the file
/// or the table is not there.
pub fn read_old_table(path: &Path, table: &str) -> Result<Option<OldTable>, String> {
    check_table(table)?;
    let Some(connection) = open(path)? else {
        return Ok(None);
    };
    let read = || -> Result<Option<OldTable>, rusqlite::Error> {
        if !has_table(&connection, table)? {
            return Ok(None);
        }
        let mut statement = connection.prepare(&format!("SELECT * FROM \"{table}\""))?;
        let columns: Vec<String> = statement
            .column_names()
            .into_iter()
            .map(str::to_string)
            .collect();
        let width = columns.len();
        let rows = statement
            .query_map([], |row| {
                (0..width)
                    .map(|i| {
                        Ok(match row.get_ref(i)? {
                            ValueRef::Null => OldCell::Null,
                            ValueRef::Integer(n) => OldCell::Integer(n),
                            ValueRef::Real(x) => OldCell::Real(x),
                            ValueRef::Text(t) => {
                                OldCell::Text(String::from_utf8_lossy(t).into_owned())
                            }
                            ValueRef::Blob(b) => OldCell::Blob(b.to_vec()),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(OldTable { columns, rows }))
    };
    read().map_err(|e| format!("{}: reading {table}: {e}", path.display()))
}

/// Drops `tables` (those there are) from the SQLite file at `path`, in
/// one transaction.
pub fn drop_old_tables(path: &Path, tables: &[String]) -> Result<(), String> {
    for table in tables {
        check_table(table)?;
    }
    let Some(mut connection) = open(path)? else {
        return Ok(());
    };
    let mut drop_all = || -> Result<(), rusqlite::Error> {
        let transaction = connection.transaction()?;
        for table in tables {
            transaction.execute_batch(&format!("DROP TABLE IF EXISTS \"{table}\""))?;
        }
        transaction.commit()
    };
    drop_all().map_err(|e| format!("{}: dropping {tables:?}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_old_table_is_read_whole_then_dropped_and_the_worlds_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("world.sqlite");
        assert_eq!(read_old_table(&path, "main_accounts").unwrap(), None);
        let connection = Connection::open(&path).unwrap();
        connection
            .execute_batch(
                "CREATE TABLE main_accounts (key TEXT, n INTEGER, x REAL, b BLOB);
                 INSERT INTO main_accounts VALUES ('ann', 5, 0.5, x'0102'), (NULL, NULL, NULL, NULL);
                 CREATE TABLE section (sx INTEGER);",
            )
            .unwrap();
        let table = read_old_table(&path, "main_accounts").unwrap().unwrap();
        assert_eq!(table.columns, ["key", "n", "x", "b"]);
        assert_eq!(
            table.rows[0],
            [
                OldCell::Text("ann".into()),
                OldCell::Integer(5),
                OldCell::Real(0.5),
                OldCell::Blob(vec![1, 2])
            ]
        );
        assert_eq!(table.get(&table.rows[1], "n"), Some(&OldCell::Null));
        assert_eq!(table.get(&table.rows[1], "none"), None);
        assert_eq!(read_old_table(&path, "main_bans").unwrap(), None);
        for refused in [
            "section",
            "module_value",
            "rollback_block",
            "sqlite_master",
            "a; DROP",
            "",
        ] {
            assert!(read_old_table(&path, refused).is_err(), "{refused}");
            assert!(drop_old_tables(&path, &[refused.to_string()]).is_err());
        }
        drop_old_tables(&path, &["main_accounts".into(), "main_bans".into()]).unwrap();
        assert_eq!(read_old_table(&path, "main_accounts").unwrap(), None);
        assert!(has_table(&connection, "section").unwrap());
    }
}
