//! `buildat-server`: the command line, logging, signals and the process's
//! exit status. Everything else is in the library (`buildat_server`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, bail};
use buildat_interface::meta::ModuleMeta;
use buildat_server::builder::{BuildError, Builder};
use buildat_server::config::{ModuleProfile, ServerConfig};
use buildat_server::core::Core;
use buildat_server::scaffold::ModuleKind;
use clap::{CommandFactory, Parser, Subcommand, ValueEnum};

mod inspect;

/// The process's allocator: mimalloc, built with `override` so that it is
/// also the C `malloc`/`free` the executable exports. The modules (cdylibs
/// whose Rust allocations call the C `malloc`) resolve those symbols to the
/// executable's, so the whole process, host and modules, has one
/// allocator: a buffer one module allocates and another frees stays sound.
/// Under load glibc's malloc spent a fifth of the server's time
/// consolidating its bins (docs/RELIABILITY.md, 1,000 light bots).
/// Built with `no_thp`: mimalloc otherwise marks its arena for transparent
/// huge pages, and every 2 MiB any thread touched stayed resident whole
/// (an idle server held 127 MiB instead of 57; docs/RELIABILITY.md, "The
/// idle server").
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns to mimalloc what the calling thread holds freed (its pages
/// whose blocks other threads freed, its emptied pages) and applies the
/// purges mimalloc delayed (memory freed more than 1 s ago given back to
/// the system). mimalloc does both only as a thread allocates or frees
/// again, so a server whose threads went quiet after a burst (its start,
/// the players gone) kept that memory resident for good
/// (docs/RELIABILITY.md, "The idle server"). The host calls it from each
/// module's thread ([`ServerConfig::allocator_collect`]).
fn collect_allocator() {
    unsafe extern "C" {
        fn mi_collect(force: bool);
    }
    // SAFETY: mi_collect is thread-safe and takes no pointer.
    unsafe { mi_collect(false) }
}

#[derive(Parser)]
#[command(
    name = "buildat-server",
    version,
    about = "A moddable multiplayer voxel game server"
)]
struct Cli {
    /// World directory (created if missing; its modules keep their files in it).
    #[arg(long, default_value = "world", global = true)]
    world: PathBuf,
    /// An extra module folder (repeatable); searched after the default `modules/`.
    #[arg(long = "modules", value_name = "DIR", global = true)]
    modules: Vec<PathBuf>,
    /// Do not search the default `modules/` folder.
    #[arg(long, global = true)]
    no_default_modules: bool,
    /// Address the network module listens on.
    #[arg(long, default_value = "0.0.0.0:20000", global = true)]
    listen: String,
    /// Where built modules are kept and loaded from; cargo builds them in
    /// DIR/target. Default: `target/buildat-modules` beside the first module
    /// folder, with cargo building in that `target/` itself (the server's
    /// own, so the dependencies its build compiled are reused).
    #[arg(long, value_name = "DIR", global = true)]
    build_dir: Option<PathBuf>,
    /// Cargo profile for building modules.
    #[arg(long, value_enum, default_value = "release", global = true)]
    module_profile: Profile,
    /// Log level: error, warn, info, debug, trace (RUST_LOG overrides).
    #[arg(long, default_value = "info", global = true)]
    log_level: String,
    /// Interval of core:tick in milliseconds.
    #[arg(long, default_value_t = 100, global = true)]
    tick_ms: u64,
    /// How long a call between modules waits for its answer, in milliseconds.
    #[arg(long, default_value_t = 30_000, global = true)]
    call_timeout_ms: u64,
    /// How long a module may stay in one handler before the watchdog reports it, in milliseconds.
    #[arg(long, default_value_t = 10_000, global = true)]
    watchdog_ms: u64,
    /// Log every module handler (event or call) that runs at least this
    /// many milliseconds, with how long it waited in its module's queue.
    #[arg(long, value_name = "MS", global = true)]
    slow_handler_ms: Option<u64>,
    /// Do not watch module folders (by default a saved source file rebuilds
    /// and reloads its module, and a changed client file is re-announced).
    #[arg(long, global = true)]
    no_watch: bool,
    /// A KEY=VALUE setting handed to modules (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE", global = true)]
    set: Vec<String>,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Build every module in the module paths (those whose inputs changed) and exit.
    Build {
        /// Build each module in a cargo run of its own, as the server did
        /// before it built a workspace's modules together (to compare the
        /// two: `scripts/bench-first-start`).
        #[arg(long)]
        alone: bool,
    },
    /// List what a world backup (written by `backup FILE`) holds: its
    /// sections and their sizes, or one section's nodes; or check it whole.
    Inspect {
        /// The backup file.
        file: PathBuf,
        /// One section's nodes, `X,Y,Z` in section coordinates.
        #[arg(long, value_name = "X,Y,Z", value_parser = inspect::parse_section)]
        section: Option<[i32; 3]>,
        /// Read the backup whole: every section's record decodes and holds
        /// the nodes its index says, every value reads, no bytes missing;
        /// exits non-zero naming what is wrong.
        #[arg(long, conflicts_with = "section")]
        verify: bool,
    },
    /// List every loaded module's settings (loaded headless, as for a
    /// command): key, type, default, current value and help.
    Settings,
    /// Write a new module that builds, loads and passes its test: meta.json,
    /// Cargo.toml, src/lib.rs (a chat command named after it, counting
    /// greetings across reloads), tests/NAME.rs (on the test kit) and
    /// client_lua/init.lua (with --lua: a Lua mod, no Rust), into the last
    /// `--modules DIR` given, else the world's `modules/` folder (which the
    /// server searches). A running server with that module path loads it at
    /// once.
    NewModule {
        /// The module's name (its folder's): letters, digits, '_' and '-'.
        name: String,
        /// A server-side Lua mod (meta.json, server_lua/init.lua and
        /// client_lua/init.lua): no Rust, run by the `lua` module, live on
        /// every save.
        #[arg(long, conflicts_with = "lua_only")]
        lua: bool,
        /// Client Lua only (meta.json and client_lua/init.lua), no Rust.
        #[arg(long)]
        lua_only: bool,
    },
    /// Any other word runs that console command of a module headless (no
    /// player can connect) and exits, e.g. `pregen --radius 4`; `help` on a
    /// running server's console lists the modules' commands.
    #[command(external_subcommand)]
    Module(Vec<String>),
}

#[derive(Clone, Copy, ValueEnum)]
enum Profile {
    Release,
    Dev,
}

/// Parses the command line. A module's command (`pregen --radius 4`) takes
/// the words after it as they are, so the server's own options written
/// among them (`pregen --world DIR --radius 4`) are moved before it and the
/// line parsed again: every global option is accepted anywhere.
fn parse_cli() -> Cli {
    let cli = Cli::parse();
    let Some(Command::Module(words)) = &cli.command else {
        return cli;
    };
    let Some((name, module_args)) = words.split_first() else {
        return cli;
    };
    let (globals, rest) = split_global_options(&Cli::command(), module_args);
    if globals.is_empty() {
        return cli;
    }
    let args: Vec<String> = std::env::args().collect();
    let prefix = &args[..args.len().saturating_sub(words.len())];
    let reordered = prefix
        .iter()
        .cloned()
        .chain(globals)
        .chain(std::iter::once(name.clone()))
        .chain(rest);
    Cli::parse_from(reordered)
}

/// The server's own options among `words` (with their values) and the rest,
/// in order.
fn split_global_options(command: &clap::Command, words: &[String]) -> (Vec<String>, Vec<String>) {
    let takes_value = |long: &str| -> Option<bool> {
        command
            .get_arguments()
            .find(|arg| arg.get_long() == Some(long))
            .map(|arg| arg.get_action().takes_values())
    };
    let (mut globals, mut rest) = (Vec::new(), Vec::new());
    let mut words = words.iter();
    while let Some(word) = words.next() {
        let long = word
            .strip_prefix("--")
            .map(|w| w.split('=').next().unwrap_or(w));
        match long.and_then(takes_value) {
            Some(true) if !word.contains('=') => {
                globals.push(word.clone());
                globals.extend(words.next().cloned());
            }
            Some(_) => globals.push(word.clone()),
            None => rest.push(word.clone()),
        }
    }
    (globals, rest)
}

fn main() -> ExitCode {
    let cli = parse_cli();
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(&cli.log_level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
    match run(cli) {
        Ok(status) => ExitCode::from(status),
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Checks that the `malloc` and `free` a loaded module resolves (the first
/// in the process's global symbol scope) are mimalloc's, the host's own
/// allocator (see [`ALLOCATOR`]): were mimalloc built without `override`,
/// or the executable to stop exporting them, modules would allocate from
/// glibc while the host allocates from mimalloc, and a buffer crossing
/// between them would be freed by the wrong allocator.
fn check_one_allocator() -> anyhow::Result<()> {
    unsafe extern "C" {
        fn mi_malloc(size: usize) -> *mut libc::c_void;
        fn mi_free(pointer: *mut libc::c_void);
    }
    let wanted = [
        (c"malloc", mi_malloc as *const libc::c_void),
        (c"free", mi_free as *const libc::c_void),
    ];
    for (name, own) in wanted {
        // SAFETY: `dlsym` with RTLD_DEFAULT only looks the name up.
        let found = unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) };
        if found.cast_const() != own {
            bail!(
                "the process's {name:?} is not mimalloc's (found {found:?}, mimalloc's at {own:?}): \
                 loaded modules would allocate from another allocator than the server"
            );
        }
    }
    Ok(())
}

/// Raises the soft limit of open descriptors to the hard limit (often 1,024
/// against 500,000+), so connections, not the default, set how many players
/// fit; the network module refuses players well before the limit it finds.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit only read and write `limit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        tracing::warn!(
            "cannot read the descriptor limit: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    if limit.rlim_cur >= limit.rlim_max {
        return;
    }
    let soft = limit.rlim_cur;
    limit.rlim_cur = limit.rlim_max;
    // SAFETY: as above.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } == 0 {
        tracing::info!(
            "raised the descriptor limit from {soft} to {}",
            limit.rlim_max
        );
    } else {
        tracing::warn!(
            "cannot raise the descriptor limit from {soft}: {}",
            std::io::Error::last_os_error()
        );
    }
}

fn absolute(path: &Path) -> anyhow::Result<PathBuf> {
    std::path::absolute(path).with_context(|| format!("bad path {}", path.display()))
}

/// `./modules`, or the repository's `modules/` when run from elsewhere.
fn default_module_path() -> Option<PathBuf> {
    let local = PathBuf::from("modules");
    if local.is_dir() {
        return Some(local);
    }
    let repository = Path::new(env!("CARGO_MANIFEST_DIR")).join("../modules");
    repository.is_dir().then_some(repository)
}

/// The folder of a world holding its own modules.
const WORLD_MODULES: &str = "modules";

fn config_from(cli: &Cli) -> anyhow::Result<ServerConfig> {
    let mut module_paths = Vec::new();
    if !cli.no_default_modules {
        match default_module_path() {
            Some(path) => module_paths.push(path),
            None => bail!("no modules/ folder here; pass --modules DIR"),
        }
    }
    module_paths.extend(cli.modules.iter().cloned());
    // The world's own modules, searched last; the folder is made with the
    // world (`prepare_world`), so a server always watches it.
    let world_modules = cli.world.join(WORLD_MODULES);
    if world_modules.is_dir() || !matches!(cli.command, Some(Command::Build { .. })) {
        module_paths.push(world_modules);
    }
    let module_paths = module_paths
        .iter()
        .map(|p| absolute(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(first) = module_paths.first() else {
        bail!("no module paths: pass --modules DIR");
    };
    // Without a build dir, modules build in the workspace's own target dir
    // (the one `cargo run` just built the server in, or CARGO_TARGET_DIR as
    // cargo passes it on): the dependencies the server compiled are not
    // compiled again. Tests and the harness give a build dir of their own,
    // so a `cargo test` that starts servers never waits on its own lock.
    // (With a build dir, `ServerConfig::new` puts cargo's target dir in it.)
    let (build_dir, workspace_target) = match &cli.build_dir {
        Some(dir) => (absolute(dir)?, None),
        None => {
            let target = match std::env::var_os("CARGO_TARGET_DIR") {
                Some(dir) if !dir.is_empty() => absolute(Path::new(&dir))?,
                _ => first.parent().unwrap_or(first).join("target"),
            };
            (target.join("buildat-modules"), Some(target))
        }
    };
    let mut config = ServerConfig::new(absolute(&cli.world)?, module_paths, build_dir);
    if let Some(target) = workspace_target {
        config.cargo_target_dir = target;
    }
    config.module_profile = match cli.module_profile {
        Profile::Release => ModuleProfile::Release,
        Profile::Dev => ModuleProfile::Dev,
    };
    config.listen = cli.listen.clone();
    config.log_level = cli.log_level.clone();
    config.tick_interval = Duration::from_millis(cli.tick_ms.max(1));
    config.call_timeout = Duration::from_millis(cli.call_timeout_ms);
    config.watchdog_limit = Duration::from_millis(cli.watchdog_ms);
    config.slow_handler_limit = cli.slow_handler_ms.map(Duration::from_millis);
    config.allocator_collect = Some(collect_allocator);
    for setting in &cli.set {
        let Some((key, value)) = setting.split_once('=') else {
            bail!("--set {setting}: expected KEY=VALUE");
        };
        config.extra.insert(key.to_string(), value.to_string());
    }
    Ok(config)
}

/// Makes the world directory with mode 0700 (other local users read none
/// of it); warns about an existing one others can enter, which is the
/// operator's to change (its secrets are 0600 either way).
fn prepare_world(world: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(world)
        .with_context(|| format!("cannot create the world directory {}", world.display()))?;
    let modules = world.join(WORLD_MODULES);
    std::fs::create_dir_all(&modules).with_context(|| {
        format!(
            "cannot create the world's modules folder {}",
            modules.display()
        )
    })?;
    let mode = std::fs::metadata(world)
        .with_context(|| format!("cannot read the world directory {}", world.display()))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        tracing::warn!(
            "the world directory {} is open to other users (mode {:o}); its secret files \
             are 0600, but `chmod 700 {}` keeps the rest private too",
            world.display(),
            mode & 0o777,
            world.display()
        );
    }
    Ok(())
}

/// `new-module NAME`: writes a module ([`buildat_server::scaffold`]) into
/// the last `--modules DIR`, else the world's `modules/`, with the
/// workspace the server supplies beside it, so `cargo test` in it works
/// at once.
fn new_module(
    config: &ServerConfig,
    target: Option<PathBuf>,
    name: &str,
    kind: ModuleKind,
) -> anyhow::Result<u8> {
    let modules = match target {
        Some(dir) => dir,
        None => {
            prepare_world(&config.world_path)?;
            config.world_path.join(WORLD_MODULES)
        }
    };
    // One name, one module across the module paths.
    if let Some(other) = config
        .module_paths
        .iter()
        .find(|path| **path != modules && path.join(name).join("meta.json").is_file())
    {
        bail!(
            "a module named {name} is in {} already: pick another name",
            other.display()
        );
    }
    let (dir, files) = buildat_server::scaffold::write_module(&modules, name, kind)?;
    if kind == ModuleKind::Rust
        && let Err(error) = buildat_server::builder::outside::prepare(
            &dir,
            &config.cargo_target_dir,
            &config.module_paths,
        )
    {
        tracing::warn!(
            "cannot write the workspace beside {}: {error}",
            dir.display()
        );
    }
    let files: Vec<String> = files.iter().map(|f| f.display().to_string()).collect();
    println!(
        "wrote module {name} in {}: {}",
        dir.display(),
        files.join(", ")
    );
    match kind {
        ModuleKind::Rust => println!("test it: cd {} && cargo test", dir.display()),
        ModuleKind::LuaMod => println!(
            "edit {} and save: a running server loads it again at once",
            dir.join("server_lua/init.lua").display()
        ),
        ModuleKind::ClientOnly => {}
    }
    println!(
        "a server searching {} loads it now; else start one with `--modules {}`, \
         or type `modules add {}` on its console",
        modules.display(),
        modules.display(),
        modules.display()
    );
    Ok(0)
}

/// `build`: builds every Rust module found in the module paths.
fn build_all(config: &ServerConfig, alone: bool) -> anyhow::Result<u8> {
    let mut builder = Builder::new(config.build_dir.clone(), config.module_profile)
        .with_target_dir(config.cargo_target_dir.clone());
    if !alone {
        builder = builder.with_module_paths(config.module_paths.clone());
    }
    let cancel = builder.canceller();
    spawn_signal_handler(move |name| {
        tracing::info!("received {name}: cancelling the build");
        cancel.cancel();
    })?;
    let mut failed = 0;
    for path in &config.module_paths {
        let entries =
            std::fs::read_dir(path).with_context(|| format!("cannot read {}", path.display()))?;
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        for dir in dirs.into_iter().filter(|d| d.join("meta.json").is_file()) {
            let name = dir
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let meta = match ModuleMeta::read(&dir) {
                Ok(parsed) => parsed.meta,
                Err(error) => {
                    tracing::error!("{error}");
                    failed += 1;
                    continue;
                }
            };
            if meta.disable_rust {
                continue;
            }
            match builder.build(&name, &dir, &meta) {
                Ok(artifact) => tracing::info!("module {name}: artifact {}", artifact.hash),
                Err(BuildError::Cancelled { .. }) => {
                    tracing::info!("build interrupted");
                    return Ok(130);
                }
                Err(error) => {
                    tracing::error!("{error}");
                    failed += 1;
                }
            }
        }
    }
    if failed > 0 {
        bail!("{failed} module(s) failed to build");
    }
    Ok(0)
}

/// `NAME ARGS...`: a module's console command, run headless: every module
/// loads with `headless` set (nothing listens for players), the command
/// runs, the server stops.
fn run_headless(config: ServerConfig, words: Vec<String>) -> anyhow::Result<u8> {
    let Some((name, args)) = words.split_first() else {
        bail!("no command given");
    };
    headless(config, |core| {
        match core.run_module_command(name, args.to_vec()) {
            Some(answer) => answer.map_err(|e| anyhow::anyhow!("{name}: {e}")),
            None => {
                let known: Vec<String> =
                    core.module_commands().into_iter().map(|(n, _)| n).collect();
                bail!(
                    "unknown command '{name}': the loaded modules offer {}",
                    if known.is_empty() {
                        "none".to_string()
                    } else {
                        known.join(", ")
                    }
                )
            }
        }
    })
}

/// `settings`: every loaded module's settings, the modules loaded headless.
fn list_settings(config: ServerConfig) -> anyhow::Result<u8> {
    headless(config, |core| {
        let modules = core
            .call_typed(&buildat_interface::core_api::ListSettings {}, None)
            .map_err(|e| anyhow::anyhow!("list_settings: {e}"))?;
        Ok(buildat_server::settings::format_table(&modules)
            .trim_end()
            .to_string())
    })
}

/// Loads every module with `headless` set, runs `job` and stops the
/// server; prints what `job` answered.
fn headless(
    mut config: ServerConfig,
    job: impl FnOnce(&Core) -> anyhow::Result<String>,
) -> anyhow::Result<u8> {
    config
        .extra
        .insert(buildat_interface::config::HEADLESS.to_string(), "1".into());
    // The command is the one thing running and may take as long as its
    // work (pregen, migrate or restore of a big world): no watchdog report
    // for it. Ctrl-C still stops it.
    config.watchdog_limit = config.watchdog_limit.max(Duration::from_secs(24 * 3600));
    let core = Core::new(config).context("cannot start the module host")?;
    stop_on_signal(core.clone())?;
    let result = (|| -> anyhow::Result<String> {
        core.start()
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("the modules did not load")?;
        job(&core)
    })();
    core.stop_all();
    let answer = result?;
    if !answer.is_empty() {
        println!("{answer}");
    }
    Ok(0)
}

/// Calls `on_signal` with the signal's name on the first SIGINT or SIGTERM;
/// a second one exits at once without a clean stop.
fn spawn_signal_handler(on_signal: impl Fn(&str) + Send + 'static) -> anyhow::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install signal handlers")?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut received = 0;
            for signal in signals.forever() {
                received += 1;
                let name = if signal == SIGINT {
                    "SIGINT"
                } else {
                    "SIGTERM"
                };
                if received > 1 {
                    tracing::error!("second {name}: exiting without a clean stop");
                    std::process::exit(130);
                }
                on_signal(name);
            }
        })
        .context("cannot start the signal thread")?;
    Ok(())
}

/// Stops `core` on SIGINT or SIGTERM (cancelling a running module build).
fn stop_on_signal(core: Core) -> anyhow::Result<()> {
    spawn_signal_handler(move |name| core.request_shutdown(0, format!("received {name}")))
}

fn run(cli: Cli) -> anyhow::Result<u8> {
    check_one_allocator()?;
    let config = config_from(&cli)?;
    match cli.command {
        Some(Command::Build { alone }) => return build_all(&config, alone),
        Some(Command::NewModule {
            name,
            lua,
            lua_only,
        }) => {
            let target = cli.modules.last().map(|dir| absolute(dir)).transpose()?;
            let kind = match (lua, lua_only) {
                (true, _) => ModuleKind::LuaMod,
                (false, true) => ModuleKind::ClientOnly,
                (false, false) => ModuleKind::Rust,
            };
            return new_module(&config, target, &name, kind);
        }
        Some(Command::Inspect {
            file,
            section,
            verify,
        }) => {
            let listing = if verify {
                inspect::verify(&file)?
            } else {
                inspect::inspect(&file, section)?
            };
            // A reader that stopped early (`| head`) is no failure.
            match std::io::Write::write_all(&mut std::io::stdout(), listing.as_bytes()) {
                Err(error) if error.kind() != std::io::ErrorKind::BrokenPipe => {
                    return Err(error).context("writing the listing");
                }
                _ => return Ok(0),
            }
        }
        Some(Command::Module(words)) => {
            prepare_world(&config.world_path)?;
            return run_headless(config, words);
        }
        Some(Command::Settings) => {
            prepare_world(&config.world_path)?;
            return list_settings(config);
        }
        None => {}
    }
    prepare_world(&config.world_path)?;
    raise_descriptor_limit();
    tracing::info!(
        "buildat-server {}: world {}, modules {}",
        env!("CARGO_PKG_VERSION"),
        config.world_path.display(),
        config
            .module_paths
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    );
    let core = Core::new(config).context("cannot start the module host")?;
    stop_on_signal(core.clone())?;
    // The console runs during startup too, so `stop` ends the first start's
    // long module builds.
    buildat_server::console::spawn(core.clone()).context("cannot start the console")?;
    if let Err(error) = core.start() {
        match core.shutdown_request() {
            Some((_, reason)) => tracing::info!("startup interrupted: {reason}"),
            None => {
                tracing::error!("{error}");
                core.stop_all();
                bail!("the server did not start");
            }
        }
    }
    if !cli.no_watch
        && core.shutdown_request().is_none()
        && let Err(error) = buildat_server::watch::spawn(core.clone(), core.module_paths())
    {
        tracing::warn!("file watching is off: {error}");
    }
    let (status, reason) = core.wait_for_shutdown();
    tracing::info!("stopping: {reason}");
    core.stop_all();
    if status == 0 {
        tracing::info!("stopped cleanly");
    } else {
        tracing::error!("stopped with status {status}: {reason}");
    }
    Ok(u8::try_from(status).unwrap_or(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn server_options_among_a_module_commands_words_are_found() {
        let (globals, rest) = split_global_options(
            &Cli::command(),
            &strings(&[
                "--world",
                "w",
                "--radius",
                "1",
                "--no-watch",
                "--set=a=b",
                "--height",
                "2",
            ]),
        );
        assert_eq!(
            globals,
            strings(&["--world", "w", "--no-watch", "--set=a=b"])
        );
        assert_eq!(rest, strings(&["--radius", "1", "--height", "2"]));
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn global_options_are_accepted_before_and_after_the_subcommand() {
        let options = [
            "--world",
            "w",
            "--modules",
            "m",
            "--no-default-modules",
            "--module-profile",
            "dev",
        ];
        let parse = |line: Vec<&str>| Cli::try_parse_from(line).unwrap_or_else(|e| panic!("{e}"));
        let after = parse([&["buildat-server", "build"][..], &options].concat());
        let before = parse([&["buildat-server"][..], &options, &["build"]].concat());
        for cli in [after, before] {
            assert!(matches!(cli.command, Some(Command::Build { alone: false })));
            assert_eq!(cli.world, PathBuf::from("w"));
            assert_eq!(cli.modules, [PathBuf::from("m")]);
            assert!(cli.no_default_modules);
            assert!(matches!(cli.module_profile, Profile::Dev));
        }
    }
}
