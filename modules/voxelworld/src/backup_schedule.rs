//! Backups on a schedule: `backup.every` (`6h`, `30m`, `90s`; empty or `0`:
//! none), `backup.keep` (default 7) and `backup.dir` (default
//! `<world>/backups`), settings of the namespace `backup` that voxelworld
//! declares. Each scheduled backup is the console's online `backup FILE`
//! into `backup-YYYY-MM-DDTHH-MM-SSZ.backup` (its UTC time); after one is
//! whole, the oldest files of that name beyond `backup.keep` in the folder
//! are removed (never a file of another name); a failed one is logged with
//! its cause and retried once after a minute (or at its next time, if that
//! comes first), then on schedule. `backup status` and `get_backup_status`
//! tell the schedule and how the last one ended.
//!
//! Owns: the settings, when the next one is due ([`Schedule`]), the files'
//! names ([`file_name`], [`is_scheduled_name`]), which of them go
//! ([`to_remove`], [`prune`]), and the last outcome. Does not own: writing
//! a backup (`backup_run.rs`, `backup.rs`); a running one is watched there.
//!
//! Invariant: a scheduled file is never made half: the backup writes it as
//! `NAME.partial` and links it to `NAME` when whole (`backup.rs`), and a
//! partial name never matches [`is_scheduled_name`].

use std::time::Duration;

use buildat_interface::settings::SettingValue;
use buildat_voxelworld_api::{BackupOutcome, BackupStatus};

use super::*;
use crate::commands::CommandError;

/// After a failed scheduled backup, the wait before its one retry (at most
/// `backup.every`; none when the next regular one comes first).
pub const RETRY_AFTER: Duration = Duration::from_secs(60);
const PREFIX: &str = "backup-";
const SUFFIX: &str = ".backup";
/// `YYYY-MM-DDTHH-MM-SSZ`: where digits go (`0`) and the other characters.
const STAMP: &[u8; 20] = b"0000-00-00T00-00-00Z";

/// `backup.every`: the time between scheduled backups; `None`: none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Every(pub Option<Duration>);

impl SettingValue for Every {
    fn type_name() -> String {
        "duration (6h, 30m, 90s, 1h30m; 0: off)".to_string()
    }
    fn parse_setting(text: &str) -> Result<Self, String> {
        parse_every(text).map(Every)
    }
    fn show_setting(&self) -> String {
        self.0.map_or_else(|| "0".to_string(), show_duration)
    }
}

/// A duration as `6h`, `30m`, `90s`, `1d`, or several (`1h30m`); empty or
/// `0`: `None`. At least a second.
pub fn parse_every(text: &str) -> Result<Option<Duration>, String> {
    let text = text.trim();
    if text.is_empty() || text == "0" {
        return Ok(None);
    }
    let mut seconds: u64 = 0;
    let mut number = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit: u64 = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            'd' => 86_400,
            _ => return Err(format!("'{c}' is no unit (s, m, h or d)")),
        };
        let count: u64 = number
            .parse()
            .map_err(|_| format!("a number must come before '{c}'"))?;
        number.clear();
        seconds = count
            .checked_mul(unit)
            .and_then(|s| s.checked_add(seconds))
            .ok_or_else(|| "too long".to_string())?;
    }
    if !number.is_empty() {
        return Err(format!("'{number}' has no unit (s, m, h or d)"));
    }
    if seconds == 0 {
        return Ok(None);
    }
    Ok(Some(Duration::from_secs(seconds)))
}

/// `1h30m`, `90s` as `1m30s`, `2d`.
pub fn show_duration(duration: Duration) -> String {
    let mut left = duration.as_secs();
    if left == 0 {
        return "0s".into();
    }
    let mut out = String::new();
    for (unit, name) in [(86_400, 'd'), (3600, 'h'), (60, 'm'), (1, 's')] {
        if left >= unit {
            out.push_str(&format!("{}{name}", left / unit));
            left %= unit;
        }
    }
    out
}

buildat_interface::settings! {
    /// Backups on a schedule (`--set backup.KEY=VALUE`), declared by voxelworld.
    pub(crate) struct BackupSettings in "backup" {
        /// Time between scheduled backups, as 6h, 30m or 90s (empty or 0: none).
        #[live]
        every: Every = Every(None),
        /// How many scheduled backups backup.dir keeps (older ones the schedule made are removed).
        #[live]
        keep: u32 = 7,
        /// Where scheduled backups go, relative to the world (unset: <world>/backups).
        #[live]
        dir: Option<PathBuf> = None,
    }
}

/// Days since 1970-01-01 as (year, month, day) in the proleptic Gregorian
/// calendar.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DDTHH-MM-SSZ` of a Unix time (UTC; `-` in the time, which file
/// names everywhere take).
pub fn stamp(unix_s: u64) -> String {
    let (year, month, day) = civil_from_days((unix_s / 86_400) as i64);
    let s = unix_s % 86_400;
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}-{:02}-{:02}Z",
        s / 3600,
        s % 3600 / 60,
        s % 60
    )
}

/// The name of the scheduled backup taken at `unix_s`.
pub fn file_name(unix_s: u64) -> String {
    format!("{PREFIX}{}{SUFFIX}", stamp(unix_s))
}

/// Whether `name` is one [`file_name`] makes (nothing else is ever removed;
/// `NAME.partial` is not one). Such names sort as their times do.
pub fn is_scheduled_name(name: &str) -> bool {
    let Some(stamp) = name
        .strip_prefix(PREFIX)
        .and_then(|rest| rest.strip_suffix(SUFFIX))
    else {
        return false;
    };
    stamp.len() == STAMP.len()
        && stamp.bytes().zip(STAMP).all(|(c, want)| match want {
            b'0' => c.is_ascii_digit(),
            other => c == *other,
        })
}

/// Of `names`, the scheduled backups (by [`is_scheduled_name`]) older than
/// the newest `keep`, oldest first; other names are never among them.
pub fn to_remove(names: impl IntoIterator<Item = String>, keep: usize) -> Vec<String> {
    let mut ours: Vec<String> = names
        .into_iter()
        .filter(|name| is_scheduled_name(name))
        .collect();
    ours.sort();
    let beyond = ours.len().saturating_sub(keep);
    ours.truncate(beyond);
    ours
}

/// Removes the scheduled backups in `dir` beyond the newest `keep`
/// (regular files only, never through a symlink); the names removed, and
/// the errors of those that could not be.
pub fn prune(dir: &Path, keep: usize) -> std::io::Result<(Vec<String>, Vec<String>)> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        if entry.file_type().is_ok_and(|kind| kind.is_file())
            && let Ok(name) = entry.file_name().into_string()
        {
            names.push(name);
        }
    }
    let (mut removed, mut failed) = (Vec::new(), Vec::new());
    for name in to_remove(names, keep) {
        match std::fs::remove_file(dir.join(&name)) {
            Ok(()) => removed.push(name),
            Err(error) => failed.push(format!("{name}: {error}")),
        }
    }
    Ok((removed, failed))
}

/// When the next scheduled backup is due: every `every` from the start,
/// a missed time once (not once per time missed), and after a failure one
/// retry [`RETRY_AFTER`] later when that comes before the next time.
#[derive(Debug, Clone)]
pub struct Schedule {
    every: Duration,
    /// The next regular time.
    next: Instant,
    /// A retry before it, after a failure.
    retry_at: Option<Instant>,
    /// The backup under way is a retry.
    retrying: bool,
}

impl Schedule {
    /// The first one `every` after `now`.
    pub fn new(every: Duration, now: Instant) -> Self {
        Self {
            every,
            next: now + every,
            retry_at: None,
            retrying: false,
        }
    }

    /// When the next one (or the retry) is due.
    pub fn due(&self) -> Instant {
        self.retry_at
            .map_or(self.next, |retry| retry.min(self.next))
    }

    /// A backup starts `now` (it was due): the next regular time is moved
    /// past `now` unless this is the retry.
    pub fn started(&mut self, now: Instant) {
        self.retrying = self.retry_at.take().is_some_and(|retry| retry < self.next);
        while self.next <= now {
            self.next += self.every;
        }
    }

    /// The backup started last failed at `now`: a retry after
    /// [`RETRY_AFTER`] (at most `every`) unless it was the retry or the
    /// next time comes first.
    pub fn failed(&mut self, now: Instant) {
        if !self.retrying {
            let retry = now + RETRY_AFTER.min(self.every);
            self.retry_at = (retry < self.next).then_some(retry);
        }
        self.retrying = false;
    }

    /// The backup started last is whole.
    pub fn succeeded(&mut self) {
        self.retrying = false;
        self.retry_at = None;
    }
}

/// The schedule as this run set it, and how the last one ended.
pub(crate) struct BackupSchedule {
    /// `None` when `backup.every` is off or the module runs headless.
    schedule: Option<Schedule>,
    every: Option<Duration>,
    keep: u32,
    dir: PathBuf,
    last: Option<BackupOutcome>,
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl BackupSchedule {
    /// From the settings (`backup.dir` relative to `world`); headless,
    /// nothing is scheduled.
    pub(crate) fn new(
        settings: BackupSettings,
        world: &Path,
        headless: bool,
    ) -> Result<Self, ModuleError> {
        if settings.keep == 0 {
            return Err(ModuleError::msg(
                "setting backup.keep: '0' would remove every scheduled backup; expected 1 or more",
            ));
        }
        let dir = match settings.dir {
            Some(dir) if !dir.as_os_str().is_empty() => world.join(dir),
            _ => world.join("backups"),
        };
        let every = settings.every.0;
        let schedule = every
            .filter(|_| !headless)
            .map(|every| Schedule::new(every, Instant::now()));
        if let Some(every) = every.filter(|_| !headless) {
            log::info!(
                "backups every {} into {}, the newest {} kept",
                show_duration(every),
                dir.display(),
                settings.keep
            );
        }
        Ok(Self {
            schedule,
            every,
            keep: settings.keep,
            dir,
            last: None,
        })
    }

    /// The console's `set` of a `backup.*` setting: the schedule made
    /// again from the new settings (the next backup `every` from now; a
    /// backup under way finishes where it started), the last outcome kept.
    /// Refused as at start (`backup.keep` 0): the schedule stays as it was.
    pub(crate) fn apply(
        &mut self,
        settings: BackupSettings,
        world: &Path,
        headless: bool,
    ) -> Result<String, ModuleError> {
        let mut schedule = Self::new(settings, world, headless)?;
        schedule.last = self.last.take();
        *self = schedule;
        Ok(match (&self.schedule, self.every) {
            (Some(_), Some(every)) => format!(
                "the next backup in {} into {}, the newest {} kept",
                show_duration(every),
                self.dir.display(),
                self.keep
            ),
            _ => "no backups on a schedule".to_string(),
        })
    }

    /// What `get_backup_status` answers.
    pub(crate) fn status(&self, running: bool) -> BackupStatus {
        let now = Instant::now();
        BackupStatus {
            every_s: self.every.map_or(0, |every| every.as_secs()),
            keep: self.keep,
            dir: self.dir.display().to_string(),
            next_in_s: self
                .schedule
                .as_ref()
                .filter(|_| !running)
                .map(|s| s.due().saturating_duration_since(now).as_secs()),
            running,
            last: self.last.clone(),
        }
    }
}

/// `backup status`'s answer.
pub fn describe(status: &BackupStatus) -> String {
    let mut out = if status.every_s == 0 {
        format!(
            "backups: none scheduled (backup.every: off; backup.dir {})",
            status.dir
        )
    } else {
        format!(
            "backups: every {} into {}, the newest {} kept",
            show_duration(Duration::from_secs(status.every_s)),
            status.dir,
            status.keep
        )
    };
    if status.running {
        out.push_str("; one is being written");
    }
    if let Some(next) = status.next_in_s {
        out.push_str(&format!("; next in {next} s"));
    }
    match &status.last {
        None => out.push_str("; none taken since the start"),
        Some(last) => match &last.error {
            None => out.push_str(&format!(
                "; last: ok at {}, {}, {} bytes",
                stamp(last.finished_unix_s),
                last.file,
                last.bytes
            )),
            Some(error) => out.push_str(&format!(
                "; last: FAILED at {}, {}: {error}",
                stamp(last.finished_unix_s),
                last.file
            )),
        },
    }
    out
}

impl VoxelWorld {
    /// A tick: starts the scheduled backup when it is due and no backup
    /// runs (one running, manual or scheduled, makes it wait).
    pub(crate) fn tick_backup_schedule(&mut self) {
        let now = Instant::now();
        let Some(schedule) = &mut self.backups.schedule else {
            return;
        };
        if self.backup_run.is_some() || now < schedule.due() {
            return;
        }
        schedule.started(now);
        let file = self.backups.dir.join(file_name(unix_now()));
        let started = files::create_private_dir(&self.backups.dir)
            .map_err(|error| CommandError::File {
                what: "backup.dir",
                path: self.backups.dir.clone(),
                error,
            })
            .and_then(|()| self.start_backup(&file, true));
        match started {
            Ok(_) => log::info!("scheduled backup started into {}", file.display()),
            Err(error) => self.scheduled_backup_ended(&file, Err(error.to_string()), 0.0),
        }
    }

    /// A scheduled backup ended (`seconds` after it started): recorded;
    /// when whole, the oldest beyond `backup.keep` removed; when not, a
    /// retry planned. One line logged either way.
    pub(crate) fn scheduled_backup_ended(
        &mut self,
        file: &Path,
        outcome: Result<backup::BackupReport, String>,
        seconds: f64,
    ) {
        let now = Instant::now();
        let finished_unix_s = unix_now();
        match outcome {
            Ok(report) => {
                if let Some(schedule) = &mut self.backups.schedule {
                    schedule.succeeded();
                }
                let pruned = match prune(&self.backups.dir, self.backups.keep as usize) {
                    Ok((removed, failed)) => {
                        let mut text = format!(
                            "{} older removed (the newest {} kept)",
                            removed.len(),
                            self.backups.keep
                        );
                        if !failed.is_empty() {
                            text.push_str(&format!("; cannot remove {}", failed.join(", ")));
                        }
                        text
                    }
                    Err(error) => format!(
                        "cannot list {} to remove older ones: {error}",
                        self.backups.dir.display()
                    ),
                };
                log::info!("scheduled {}; {pruned}", report.done_line(seconds));
                self.backups.last = Some(BackupOutcome {
                    finished_unix_s,
                    file: file.display().to_string(),
                    bytes: report.bytes,
                    error: None,
                });
            }
            Err(why) => {
                let next = match &mut self.backups.schedule {
                    Some(schedule) => {
                        schedule.failed(now);
                        let wait = schedule.due().saturating_duration_since(now);
                        format!("tried again in {} s", wait.as_secs())
                    }
                    None => "not scheduled".into(),
                };
                log::warn!(
                    "scheduled backup to {} failed: {why}; {next}",
                    file.display()
                );
                self.backups.last = Some(BackupOutcome {
                    finished_unix_s,
                    file: file.display().to_string(),
                    bytes: 0,
                    error: Some(why),
                });
            }
        }
    }

    /// `backup status`, `get_backup_status`.
    pub(crate) fn backup_status(&self) -> BackupStatus {
        self.backups
            .status(self.backup_run.as_ref().is_some_and(|run| run.scheduled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_is_read_as_a_duration_and_off_when_empty_or_zero() {
        let secs = |s| Ok(Some(Duration::from_secs(s)));
        assert_eq!(parse_every("6h"), secs(6 * 3600));
        assert_eq!(parse_every("30m"), secs(1800));
        assert_eq!(parse_every("90s"), secs(90));
        assert_eq!(parse_every(" 1h30m "), secs(5400));
        assert_eq!(parse_every("1d"), secs(86_400));
        assert_eq!(parse_every(""), Ok(None));
        assert_eq!(parse_every("0"), Ok(None));
        assert_eq!(parse_every("0s"), Ok(None));
        for bad in [
            "6",
            "h",
            "6x",
            "6h30",
            "-1h",
            "1.5h",
            "99999999999999999999d",
        ] {
            assert!(parse_every(bad).is_err(), "{bad}");
        }
        assert_eq!(
            parse_every("6x").unwrap_err(),
            "'x' is no unit (s, m, h or d)"
        );
        assert_eq!(
            parse_every("90").unwrap_err(),
            "'90' has no unit (s, m, h or d)"
        );
        assert_eq!(show_duration(Duration::from_secs(5400)), "1h30m");
        assert_eq!(show_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(Every(None).show_setting(), "0");
        // A bad value stops the start, naming the key and what is expected.
        let set = |key: &str| (key == "backup.every").then(|| "soon".to_string());
        let error = BackupSettings::read_with(set).unwrap_err().to_string();
        assert!(
            error.contains("setting backup.every: 'soon' is not a valid duration (6h, 30m"),
            "{error}"
        );
        let defaults = BackupSettings::default();
        assert_eq!((defaults.every, defaults.keep), (Every(None), 7));
    }

    #[test]
    fn names_carry_the_utc_time_and_only_they_are_the_schedules() {
        assert_eq!(file_name(0), "backup-1970-01-01T00-00-00Z.backup");
        // 2026-12-06 21:30:00 UTC; a leap day.
        assert_eq!(
            file_name(1_796_592_600),
            "backup-2026-12-06T21-30-00Z.backup"
        );
        assert_eq!(stamp(951_825_600), "2000-02-29T12-00-00Z");
        assert!(is_scheduled_name(&file_name(1_796_592_600)));
        for other in [
            "backup-2026-12-06T21-30-00Z.backup.partial",
            "backup-2026-12-06T21-30-00Z.backup.payload.partial",
            "backup-2026-12-06T21-30-0xZ.backup",
            "backup-2026-12-06 21-30-00Z.backup",
            "world-2026-12-06T21-30-00Z.backup",
            "backup-2026-12-06T21-30-00Z.backup2",
            "backup-mine.backup",
            "notes.txt",
        ] {
            assert!(!is_scheduled_name(other), "{other}");
        }
    }

    #[test]
    fn only_the_schedules_oldest_beyond_keep_are_removed() {
        let names =
            |times: &[u64]| -> Vec<String> { times.iter().map(|t| file_name(*t)).collect() };
        let mut all = names(&[300, 100, 400, 200]);
        all.extend(["notes.txt", "backup-mine.backup"].map(String::from));
        all.push(format!("{}.partial", file_name(500)));
        assert_eq!(to_remove(all.clone(), 2), names(&[100, 200]));
        assert_eq!(to_remove(all.clone(), 4), Vec::<String>::new());
        assert_eq!(to_remove(all, 1), names(&[100, 200, 300]));

        let dir = tempfile::tempdir().unwrap();
        for name in names(&[1, 2, 3]) {
            std::fs::write(dir.path().join(name), b"x").unwrap();
        }
        std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
        // A directory and a symlink of the pattern's name are not files of it.
        std::fs::create_dir(dir.path().join(file_name(0))).unwrap();
        std::os::unix::fs::symlink(dir.path().join("notes.txt"), dir.path().join(file_name(4)))
            .unwrap();
        let (removed, failed) = prune(dir.path(), 2).unwrap();
        assert_eq!(removed, names(&[1]));
        assert!(failed.is_empty());
        let mut left: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        let mut expected = names(&[0, 2, 3, 4]);
        expected.push("notes.txt".into());
        assert_eq!(left, expected);
    }

    #[test]
    fn the_folder_is_the_worlds_unless_set_and_keep_is_at_least_one() {
        let world = Path::new("/srv/world");
        let set = |keep, dir: Option<&str>| BackupSettings {
            every: Every(Some(Duration::from_secs(60))),
            keep,
            dir: dir.map(PathBuf::from),
        };
        let dir_of = |settings| BackupSchedule::new(settings, world, false).unwrap().dir;
        assert_eq!(dir_of(set(7, None)), world.join("backups"));
        assert_eq!(dir_of(set(7, Some("old"))), world.join("old"));
        assert_eq!(dir_of(set(7, Some("/mnt/b"))), PathBuf::from("/mnt/b"));
        let error = BackupSchedule::new(set(0, None), world, false)
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("backup.keep: '0'"), "{error}");
        // Headless (a console command run alone), nothing is scheduled.
        let headless = BackupSchedule::new(set(7, None), world, true).unwrap();
        assert!(headless.schedule.is_none());
        assert_eq!(headless.status(false).next_in_s, None);
        assert_eq!(headless.status(false).every_s, 60);
    }

    /// `set backup.*` on the console: the schedule made again from the new
    /// settings; refused as at start, the old one stays.
    #[test]
    fn a_set_makes_the_schedule_again_or_keeps_it_when_refused() {
        let world = Path::new("/srv/world");
        let set = |every: Option<u64>, keep| BackupSettings {
            every: Every(every.map(Duration::from_secs)),
            keep,
            dir: None,
        };
        let mut schedule = BackupSchedule::new(set(None, 7), world, false).unwrap();
        assert_eq!(schedule.status(false).next_in_s, None);
        let said = schedule.apply(set(Some(3600), 3), world, false).unwrap();
        assert_eq!(
            said,
            "the next backup in 1h into /srv/world/backups, the newest 3 kept"
        );
        let status = schedule.status(false);
        assert_eq!((status.every_s, status.keep), (3600, 3));
        assert!(status.next_in_s.is_some_and(|s| s > 3500), "{status:?}");
        let error = schedule.apply(set(Some(60), 0), world, false).unwrap_err();
        assert!(error.to_string().contains("backup.keep"), "{error}");
        assert_eq!(schedule.status(false).every_s, 3600, "kept");
        let said = schedule.apply(set(None, 3), world, false).unwrap();
        assert_eq!(said, "no backups on a schedule");
        assert_eq!(schedule.status(false).next_in_s, None);
    }

    #[test]
    fn a_failure_is_retried_once_after_a_minute_then_on_schedule() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut schedule = Schedule::new(Duration::from_secs(3600), t0);
        assert_eq!(schedule.due(), at(3600));
        schedule.started(at(3600));
        schedule.succeeded();
        assert_eq!(schedule.due(), at(7200));
        // Fails: retried a minute later; the retry fails: the next time.
        schedule.started(at(7200));
        schedule.failed(at(7205));
        assert_eq!(schedule.due(), at(7265));
        schedule.started(at(7265));
        schedule.failed(at(7266));
        assert_eq!(schedule.due(), at(10_800));
        // A retry that works: back on schedule.
        schedule.started(at(10_800));
        schedule.failed(at(10_801));
        schedule.started(at(10_861));
        schedule.succeeded();
        assert_eq!(schedule.due(), at(14_400));
        // Times missed (a long backup, a pause) give one backup, not many.
        schedule.started(at(30_000));
        assert_eq!(schedule.due(), at(32_400));
        // No retry after `every` when that is shorter than a minute, nor
        // past the next time.
        let mut quick = Schedule::new(Duration::from_secs(10), t0);
        quick.started(at(10));
        quick.failed(at(11));
        assert_eq!(quick.due(), at(20));
        let mut late = Schedule::new(Duration::from_secs(3600), t0);
        late.started(at(3600));
        late.failed(at(7190));
        assert_eq!(late.due(), at(7200));
    }
}
