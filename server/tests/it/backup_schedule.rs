//! Backups on a schedule in the real server (`backup.every`, `backup.keep`,
//! `backup.dir`): they appear whole under their UTC names, the oldest
//! beyond `backup.keep` go and files of other names stay; `inspect
//! --verify` passes on one and fails, naming why, on a cut copy; a failed
//! one is logged with its cause and shown by `backup status` and on the
//! web status page.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use buildat_harness::http::request;

use crate::common::{Scratch, console, run_headless, run_headless_args, start_server};

/// A port free now, for the web page.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// The file a `scheduled backup done in ... MB in FILE; ...` line names.
fn done_file(line: &str) -> PathBuf {
    let after = line
        .split(" MB in ")
        .nth(1)
        .unwrap_or_else(|| panic!("no file in: {line}"));
    PathBuf::from(after.split("; ").next().unwrap_or(after))
}

fn name_of(path: &Path) -> String {
    path.file_name().unwrap().to_string_lossy().into_owned()
}

#[test]
fn scheduled_backups_appear_whole_and_the_oldest_beyond_keep_go_and_nothing_else() {
    let scratch = Scratch::new();
    scratch.add_world(false);
    let (status, output) = run_headless(
        &scratch,
        &["pregen", "--radius", "1", "--height", "0"].map(String::from),
    );
    assert_eq!(status, Some(0), "{output}");
    // The default folder, with files the schedule did not make.
    let dir = scratch.world().join("backups");
    std::fs::create_dir_all(&dir).unwrap();
    let notes = dir.join("notes.txt");
    std::fs::write(&notes, b"mine").unwrap();
    let before_upgrade = dir.join("backup-before-upgrade.backup");
    std::fs::write(&before_upgrade, b"an operator's backup").unwrap();

    let mut args = scratch.server_args();
    args.extend(
        [
            "--no-watch",
            "--set",
            "backup.every=2s",
            "--set",
            "backup.keep=2",
        ]
        .map(String::from),
    );
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("backups every 2s into", Duration::from_secs(300));
    server.expect_line("server started", Duration::from_secs(120));
    let mut taken = Vec::new();
    for _ in 0..4 {
        let from = server.seen.len();
        let line = server
            .wait_for_from(from, "scheduled backup done in", Duration::from_secs(30))
            .unwrap_or_else(|| panic!("a scheduled backup every 2 s:\n{}", server.output()));
        assert!(line.contains("(the newest 2 kept)"), "{line}");
        taken.push(done_file(&line));
    }
    // Pruned before its line was logged: the 4th's leaves the 3rd and 4th.
    for (n, file) in taken.iter().enumerate() {
        assert_eq!(file.parent(), Some(dir.as_path()), "{}", file.display());
        let name = name_of(file);
        assert!(
            name.starts_with("backup-20") && name.ends_with("Z.backup"),
            "{name}"
        );
        assert_eq!(file.exists(), n >= 2, "{name} after the 4th: {taken:?}");
    }
    let newest_kept = name_of(&taken[2]);
    let older_left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.starts_with("backup-20") && name.as_str() < newest_kept.as_str())
        .collect();
    assert!(older_left.is_empty(), "{older_left:?}");
    assert_eq!(std::fs::read(&notes).unwrap(), b"mine");
    assert_eq!(
        std::fs::read(&before_upgrade).unwrap(),
        b"an operator's backup"
    );
    let status = console(&mut server, "backup status", "backups: every 2s into");
    assert!(
        status.contains("the newest 2 kept") && status.contains("; last: ok at "),
        "{status}"
    );
    server.stop_cleanly();

    // Whole: every record decodes and holds what the index says.
    let kept = &taken[3];
    let verified = run_headless_args(&[
        "inspect".to_string(),
        kept.display().to_string(),
        "--verify".into(),
    ]);
    assert!(
        verified.contains(" verified: ") && verified.contains(" sections ("),
        "{verified}"
    );
    // A copy cut short fails, naming what is missing.
    let bytes = std::fs::read(kept).unwrap();
    let cut = scratch.dir.path().join("cut.backup");
    std::fs::write(&cut, &bytes[..bytes.len() - 10]).unwrap();
    let mut inspect = start_server(
        &[
            "inspect".to_string(),
            cut.display().to_string(),
            "--verify".into(),
        ],
        Stdio::null(),
    );
    assert_ne!(
        inspect.wait_exit(Duration::from_secs(60)),
        Some(0),
        "{}",
        inspect.output()
    );
    assert!(
        inspect.output().contains("is not a whole backup")
            && inspect.output().contains("cannot be read"),
        "{}",
        inspect.output()
    );

    // A folder that cannot be made: the failure and its cause are logged
    // and shown (the console, the web page's `backups` row), and the file
    // in the way is left alone.
    scratch.add_game();
    scratch.add_web();
    let web = format!("127.0.0.1:{}", free_port());
    let mut args = scratch.server_args();
    args.extend(
        [
            "--no-watch",
            "--listen",
            "127.0.0.1:0",
            "--set",
            &format!("web.listen={web}"),
            "--set",
            "backup.every=1s",
            "--set",
            &format!("backup.dir={}", notes.display()),
        ]
        .map(String::from),
    );
    let mut server = start_server(&args, Stdio::piped());
    server.expect_line("server started", Duration::from_secs(300));
    let failed = server
        .wait_for("scheduled backup to ", Duration::from_secs(30))
        .unwrap_or_else(|| panic!("a failed backup is logged:\n{}", server.output()));
    assert!(
        failed.contains(" failed: backup.dir: ") && failed.contains("tried again in"),
        "{failed}"
    );
    let status = console(&mut server, "backup status", "backups: every 1s into");
    assert!(status.contains("; last: FAILED at "), "{status}");
    let page = request(&web, "GET", "/", None).expect("the status page");
    let html = String::from_utf8_lossy(&page.body);
    let row = html
        .split("<th>backups</th>")
        .nth(1)
        .and_then(|rest| rest.split("</tr>").next())
        .unwrap_or_else(|| panic!("a backups row:\n{html}"));
    assert!(
        row.contains("every 1 s, the newest 7 kept")
            && row.contains("last FAILED ")
            && row.contains("notes.txt"),
        "{row}"
    );
    server.stop_cleanly();
    assert_eq!(std::fs::read(&notes).unwrap(), b"mine");
}
