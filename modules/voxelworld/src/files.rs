//! Files of the world that other local users cannot read.
//!
//! Owns: making the world's directories (0700) and its secret files (0600:
//! `world.sqlite` before SQLite opens it, so its `-wal` and `-shm`, which
//! SQLite makes with the database's mode, follow; `world.toml`; recovery
//! files; backups), the mode set at creation whatever the umask; tightening
//! such a file an older server left readable by others; creating a file
//! that never follows a symlink and never replaces anything
//! ([`create_new_private`]), and putting it in place without replacing
//! anything either ([`place_new`]).
//! Does not own: the directory the operator names with `--world` when it
//! exists already (the server warns about its mode, `server/src/main.rs`),
//! the TLS key (the network module), the web token (the web module).

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// The mode of the world's secret files.
pub const FILE_MODE: u32 = 0o600;
/// The mode of the directories the world makes.
pub const DIR_MODE: u32 = 0o700;

/// Makes `path` and its missing parents with mode 0700 (those that exist
/// are left as they are).
pub fn create_private_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Creates `path`, which must not exist, for writing (and reading back)
/// with mode 0600:
/// an existing file or symlink (even a dangling one) there is an
/// `AlreadyExists` error, and nothing is followed.
pub fn create_new_private(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Writes a new file `path` (which must not exist) with mode 0600.
pub fn write_new_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = create_new_private(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Replaces the contents of `path` (made 0600 when new), keeping it
/// private: an existing file is tightened first, and a symlink there is
/// not followed (an error).
pub fn rewrite_private(path: &Path, bytes: &[u8]) -> io::Result<()> {
    tighten(path)?;
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(bytes)?;
    file.sync_all()
}

/// Takes group and other access away from the file at `path`, if there
/// is one; whether it had any. A symlink is left alone (the operator's:
/// what it names is theirs to set).
pub fn tighten(path: &Path) -> io::Result<bool> {
    let metadata = match std::fs::symlink_metadata(path) {
        Ok(metadata) => metadata,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(error) => return Err(error),
    };
    if !metadata.is_file() {
        return Ok(false);
    }
    let mode = metadata.permissions().mode() & 0o7777;
    if mode & 0o077 == 0 {
        return Ok(false);
    }
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode & 0o700))?;
    Ok(true)
}

/// [`tighten`], telling the operator when a file was readable by others.
pub fn tighten_logged(path: &Path) -> io::Result<()> {
    if tighten(path)? {
        buildat_interface::log::warn!(
            "{} was readable by other users: made 0600 (owner only)",
            path.display()
        );
    }
    Ok(())
}

/// Puts the finished file `from` at `to` without ever replacing a file
/// (or symlink) at `to`: a hard link then the removal of `from`; where the
/// filesystem has no hard links, a rename after checking `to` is free.
/// `AlreadyExists` when `to` is taken (`from` is left for the caller).
pub fn place_new(from: &Path, to: &Path) -> io::Result<()> {
    match std::fs::hard_link(from, to) {
        Ok(()) => std::fs::remove_file(from),
        Err(error) if error.kind() == io::ErrorKind::AlreadyExists => Err(error),
        Err(_) => {
            if std::fs::symlink_metadata(to).is_ok() {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    "the file exists",
                ));
            }
            std::fs::rename(from, to)
        }
    }
}

/// The permission bits of `path` (not following a symlink).
pub fn get_mode(path: &Path) -> Option<u32> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_files_and_dirs_are_private_whatever_the_umask_allows() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("a/b");
        create_private_dir(&sub).unwrap();
        assert_eq!(get_mode(&sub), Some(0o700));
        assert_eq!(get_mode(&dir.path().join("a")), Some(0o700));
        let file = sub.join("secret");
        write_new_private(&file, b"one").unwrap();
        assert_eq!(get_mode(&file), Some(0o600));
        assert_eq!(
            write_new_private(&file, b"two").unwrap_err().kind(),
            io::ErrorKind::AlreadyExists
        );
        assert_eq!(std::fs::read(&file).unwrap(), b"one");
    }

    #[test]
    fn a_symlink_is_never_followed_nor_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, b"theirs").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(create_new_private(&link).is_err());
        assert!(create_new_private(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
        assert!(rewrite_private(&link, b"mine").is_err());
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");

        let from = dir.path().join("from");
        write_new_private(&from, b"new").unwrap();
        for taken in [&target, &link, &dangling] {
            assert_eq!(
                place_new(&from, taken).unwrap_err().kind(),
                io::ErrorKind::AlreadyExists
            );
        }
        assert_eq!(std::fs::read(&target).unwrap(), b"theirs");
        let to = dir.path().join("to");
        place_new(&from, &to).unwrap();
        assert!(!from.exists());
        assert_eq!(std::fs::read(&to).unwrap(), b"new");
    }

    #[test]
    fn a_readable_file_is_tightened() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("old");
        std::fs::write(&file, b"x").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(tighten(&file).unwrap());
        assert_eq!(get_mode(&file), Some(0o600));
        assert!(!tighten(&file).unwrap());
        assert!(!tighten(&dir.path().join("missing")).unwrap());
        rewrite_private(&file, b"y").unwrap();
        assert_eq!(get_mode(&file), Some(0o600));
    }
}
