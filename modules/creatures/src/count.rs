//! How many persistent creatures were ever made in a world, so a restart
//! never makes them again.
//!
//! Owns: that count, kept as the world's value [`SPACE`]/[`KEY`] (decimal
//! text) in the world's storage beside the creatures' own nodes: moved by
//! `migrate`, in every backup, so a restored backup has the herd and its
//! count together and does not make the herd again; and taking over, once,
//! the `<world>/creatures.txt` earlier versions kept (its count written as
//! the value, then the file removed). Does not own: the storage
//! (`voxelworld`'s `get_value` / `put_values`).

use std::path::{Path, PathBuf};

use buildat_interface::{Host, ModuleError};
use buildat_voxelworld_api::{GetValue, PutValues, ValueWrite};

/// The world's value space the creatures module keeps its values in.
pub const SPACE: &str = "creatures";
/// The key of the count of persistent creatures made.
pub const KEY: &str = "persistent_created";
/// The file earlier versions kept the count in, in the world folder.
pub const OLD_FILE: &str = "creatures.txt";
const OLD_KEY: &str = "persistent_created";

/// Why the count could not be read or kept.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CountError {
    #[error("the world's value {SPACE}/{KEY}: {0}")]
    Values(String),
    #[error("the world's value {SPACE}/{KEY} is not a count: {0:?}")]
    Malformed(String),
    #[error("reading {path}: {source}")]
    OldRead {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{path}: no line '{OLD_KEY} = N'")]
    OldMalformed { path: PathBuf },
}

impl From<CountError> for ModuleError {
    fn from(error: CountError) -> Self {
        ModuleError::msg(format!("creatures: {error}"))
    }
}

/// The world's values, as `voxelworld` keeps them (`Host`), or a map in tests.
pub trait Values {
    fn get(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, CountError>;
    /// Written durably before it answers.
    fn put(&mut self, space: &str, key: &str, value: Vec<u8>) -> Result<(), CountError>;
}

impl Values for Host {
    fn get(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, CountError> {
        self.call(&GetValue {
            space: space.into(),
            key: key.into(),
        })
        .map_err(|error| CountError::Values(error.to_string()))
    }

    fn put(&mut self, space: &str, key: &str, value: Vec<u8>) -> Result<(), CountError> {
        self.call(&PutValues {
            writes: vec![ValueWrite {
                space: space.into(),
                key: key.into(),
                value: Some(value),
                only_if_absent: false,
            }],
        })
        .map(|_| ())
        .map_err(|error| CountError::Values(error.to_string()))
    }
}

/// The count kept in the world's storage; when there is none yet, the one
/// in `<world>/creatures.txt` (kept as the value, then the file removed),
/// or 0.
pub fn read_count(values: &mut impl Values, world: &Path) -> Result<u32, CountError> {
    if let Some(bytes) = values.get(SPACE, KEY)? {
        let text = String::from_utf8_lossy(&bytes);
        return text
            .trim()
            .parse()
            .map_err(|_| CountError::Malformed(text.into_owned()));
    }
    let Some(count) = read_old_file(world)? else {
        return Ok(0);
    };
    write_count(values, count)?;
    let path = world.join(OLD_FILE);
    match std::fs::remove_file(&path) {
        Ok(()) => buildat_interface::log::info!(
            "creatures: the count of persistent creatures made ({count}) moved from {} into the \
             world's storage",
            path.display()
        ),
        // Harmless: the value wins from now on.
        Err(error) => buildat_interface::log::warn!(
            "creatures: the count ({count}) is in the world's storage now, but {} stays: {error}",
            path.display()
        ),
    }
    Ok(count)
}

/// Keeps `count` in the world's storage.
pub fn write_count(values: &mut impl Values, count: u32) -> Result<(), CountError> {
    values.put(SPACE, KEY, count.to_string().into_bytes())
}

/// The count in the file earlier versions kept (`None`: no file).
fn read_old_file(world: &Path) -> Result<Option<u32>, CountError> {
    let path = world.join(OLD_FILE);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(CountError::OldRead { path, source }),
    };
    text.lines()
        .filter_map(|line| line.split_once('='))
        .find(|(key, _)| key.trim() == OLD_KEY)
        .and_then(|(_, value)| value.trim().parse().ok())
        .map(Some)
        .ok_or(CountError::OldMalformed { path })
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use std::collections::BTreeMap;

    /// The world's values in memory.
    #[derive(Default)]
    pub struct Map(pub BTreeMap<(String, String), Vec<u8>>);

    impl Values for Map {
        fn get(&mut self, space: &str, key: &str) -> Result<Option<Vec<u8>>, CountError> {
            Ok(self.0.get(&(space.into(), key.into())).cloned())
        }
        fn put(&mut self, space: &str, key: &str, value: Vec<u8>) -> Result<(), CountError> {
            self.0.insert((space.into(), key.into()), value);
            Ok(())
        }
    }

    #[test]
    fn the_count_is_kept_in_the_worlds_values_not_in_a_file() {
        let world = tempfile::tempdir().expect("temp dir");
        let mut values = Map::default();
        assert_eq!(read_count(&mut values, world.path()).expect("read"), 0);
        write_count(&mut values, 8).expect("write");
        assert_eq!(
            values.0.get(&(SPACE.into(), KEY.into())).map(Vec::as_slice),
            Some(&b"8"[..])
        );
        assert!(
            std::fs::read_dir(world.path())
                .expect("list")
                .next()
                .is_none(),
            "nothing written in the world folder"
        );
        assert_eq!(read_count(&mut values, world.path()).expect("read"), 8);
        // A world restored from a backup has its values: the count with it.
        let restored = tempfile::tempdir().expect("temp dir");
        assert_eq!(read_count(&mut values, restored.path()).expect("read"), 8);
    }

    #[test]
    fn an_old_count_file_is_taken_over_once() {
        let world = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            world.path().join(OLD_FILE),
            "# The creatures module\npersistent_created = 5\n",
        )
        .expect("write");
        let mut values = Map::default();
        assert_eq!(read_count(&mut values, world.path()).expect("read"), 5);
        assert!(!world.path().join(OLD_FILE).exists(), "the file is gone");
        assert_eq!(
            values.0.get(&(SPACE.into(), KEY.into())).map(Vec::as_slice),
            Some(&b"5"[..])
        );
        // The value wins over a file that came back.
        std::fs::write(world.path().join(OLD_FILE), "persistent_created = 2\n").expect("write");
        assert_eq!(read_count(&mut values, world.path()).expect("read"), 5);
    }

    #[test]
    fn a_malformed_count_is_an_error_not_zero() {
        let world = tempfile::tempdir().expect("temp dir");
        std::fs::write(world.path().join(OLD_FILE), "nothing here\n").expect("write");
        let mut values = Map::default();
        assert!(matches!(
            read_count(&mut values, world.path()),
            Err(CountError::OldMalformed { .. })
        ));
        values.put(SPACE, KEY, b"many".to_vec()).expect("put");
        assert!(matches!(
            read_count(&mut values, world.path()),
            Err(CountError::Malformed(_))
        ));
    }
}
