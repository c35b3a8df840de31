//! A loaded module instance and the thread it lives on.
//!
//! Owns: opening a library image, checking its descriptor (ABI magic and
//! version, interface and compiler versions) before trusting it, and the
//! module thread: constructor → init → `core:start`/`core:continue` → queued
//! events and calls → `core:unload` → destroy. Every call into the module
//! happens on this one host-spawned thread, so the thread can be joined
//! before `dlclose` (glibc keeps an image mapped while a thread that touched
//! its thread-locals is alive). Does not own: the slot's state transitions
//! beyond reporting failure (`core/mod.rs`).

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::encode_core_event;
use buildat_interface::abi::{
    self, ByteSink, EntryFn, HostTable, ModuleDescriptor, RawSlice, Status,
};
use buildat_interface::{CallError, Event, UnloadKind, events};
use crossbeam_channel::Sender;
use libloading::os::unix::{Library, RTLD_LOCAL, RTLD_NOW};

use super::CoreInner;
use super::host_table::{self, HostCtx};
use super::slot::{Message, ModuleSlot, Running};
use crate::config::ServerConfig;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StartKind {
    /// A fresh load: deliver `core:start` after init.
    Start,
    /// A reload: deliver `core:continue` after init.
    Continue,
}

/// A non-OK status from the module with its message.
struct Failure {
    status: Status,
    message: String,
}

impl Failure {
    fn panicked(&self) -> bool {
        self.status == abi::STATUS_PANIC
    }

    fn describe(&self, stage: &str) -> String {
        if self.panicked() {
            format!("panicked in {stage}: {}", self.message)
        } else {
            format!("{stage} failed: {}", self.message)
        }
    }
}

/// Opens `image` and returns it with its checked descriptor.
fn open_library(
    image: &Path,
    module: &str,
) -> Result<(Library, &'static ModuleDescriptor), String> {
    // SAFETY: loading a library runs its initialisers; module libraries are
    // built by the module builder from the operator's module folders.
    let library = unsafe { Library::open(Some(image), RTLD_NOW | RTLD_LOCAL) }
        .map_err(|e| format!("cannot load library {}: {e}", image.display()))?;
    // SAFETY: the symbol's type is fixed by the ABI.
    let entry = unsafe { library.get::<EntryFn>(abi::ENTRY_SYMBOL.as_bytes()) }.map_err(|_| {
        format!(
            "{} is not a Buildat module: it does not export `{}` (use buildat_interface::export_module!)",
            image.display(),
            abi::ENTRY_SYMBOL
        )
    })?;
    // SAFETY: calling the entry function is the ABI; it returns a static.
    let descriptor = unsafe { entry() };
    // SAFETY: the descriptor is a static in the library, which outlives every
    // use here (the instance is destroyed before the library is closed).
    let descriptor: &'static ModuleDescriptor = unsafe { check_descriptor(descriptor, module)? };
    Ok((library, descriptor))
}

/// Reads the fixed prefix first and trusts the rest only if it matches.
///
/// # Safety
/// `descriptor` must be null or point to at least the fixed prefix.
unsafe fn check_descriptor<'a>(
    descriptor: *const ModuleDescriptor,
    module: &str,
) -> Result<&'a ModuleDescriptor, String> {
    if descriptor.is_null() {
        return Err(format!(
            "module {module}: its descriptor function returned null"
        ));
    }
    // SAFETY: the prefix layout (magic, version, size) never changes.
    let (magic, version, size) = unsafe {
        (
            std::ptr::addr_of!((*descriptor).abi_magic).read_unaligned(),
            std::ptr::addr_of!((*descriptor).abi_version).read_unaligned(),
            std::ptr::addr_of!((*descriptor).descriptor_size).read_unaligned(),
        )
    };
    let rebuild = "rebuild it against this server's buildat-interface (touch its Cargo.toml, then load or reload it)";
    if magic != abi::ABI_MAGIC {
        return Err(format!(
            "module {module}: not a Buildat module descriptor (bad magic)"
        ));
    }
    if version != abi::ABI_VERSION {
        return Err(format!(
            "module {module} was built for module ABI version {version}, this server speaks version {}: {rebuild}",
            abi::ABI_VERSION
        ));
    }
    if (size as usize) < size_of::<ModuleDescriptor>() {
        return Err(format!(
            "module {module}: descriptor is {size} bytes, expected {}: {rebuild}",
            size_of::<ModuleDescriptor>()
        ));
    }
    // SAFETY: magic, version and size match this ABI's layout.
    let descriptor = unsafe { &*descriptor };
    // SAFETY: the strings are statics in the library.
    let interface = unsafe { descriptor.interface_version.as_str() }.unwrap_or("(not UTF-8)");
    if interface != abi::INTERFACE_VERSION {
        return Err(format!(
            "module {module} was built against buildat-interface {interface}, this server has {}: {rebuild}",
            abi::INTERFACE_VERSION
        ));
    }
    // SAFETY: as above.
    let rustc = unsafe { descriptor.rustc_version.as_str() }.unwrap_or("(not UTF-8)");
    if rustc != abi::RUSTC_VERSION {
        return Err(format!(
            "module {module} was built by {rustc}, this server by {}: {rebuild}",
            abi::RUSTC_VERSION
        ));
    }
    Ok(descriptor)
}

/// One module instance: its descriptor, its instance pointer and the host
/// table it was given (which must outlive it).
struct Instance {
    descriptor: &'static ModuleDescriptor,
    pointer: *mut c_void,
    table: Box<HostTable>,
}

fn run_ffi(f: impl FnOnce(&ByteSink) -> Status) -> Result<Vec<u8>, Failure> {
    let mut out = Vec::new();
    let sink = ByteSink::for_vec(&mut out);
    let status = f(&sink);
    if status == abi::STATUS_OK {
        Ok(out)
    } else {
        Err(Failure {
            status,
            message: String::from_utf8_lossy(&out).into_owned(),
        })
    }
}

impl Instance {
    fn create(&mut self) -> Result<(), Failure> {
        let mut pointer = std::ptr::null_mut();
        // SAFETY: the ABI; the table outlives the instance.
        run_ffi(|sink| unsafe { (self.descriptor.create)(&*self.table, &mut pointer, sink) })?;
        self.pointer = pointer;
        Ok(())
    }

    fn init(&mut self) -> Result<(), Failure> {
        // SAFETY: the ABI; `pointer` came from `create`.
        run_ffi(|sink| unsafe { (self.descriptor.init)(self.pointer, sink) }).map(drop)
    }

    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), Failure> {
        run_ffi(|sink| {
            // SAFETY: the ABI; slices live for the call.
            unsafe {
                (self.descriptor.event)(
                    self.pointer,
                    RawSlice::from_str(name),
                    RawSlice::from_bytes(payload),
                    sink,
                )
            }
        })
        .map(drop)
    }

    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, Failure> {
        run_ffi(|sink| {
            // SAFETY: the ABI; slices live for the call.
            unsafe {
                (self.descriptor.call)(
                    self.pointer,
                    RawSlice::from_str(function),
                    RawSlice::from_bytes(payload),
                    sink,
                )
            }
        })
    }

    fn unload(&mut self, kind: UnloadKind) -> Result<(), Failure> {
        // SAFETY: the ABI.
        run_ffi(|sink| unsafe { (self.descriptor.unload)(self.pointer, kind.to_raw(), sink) })
            .map(drop)
    }

    fn destroy(&mut self) -> Result<(), Failure> {
        if self.pointer.is_null() {
            return Ok(());
        }
        let pointer = std::mem::replace(&mut self.pointer, std::ptr::null_mut());
        // SAFETY: the ABI; the pointer is not used again.
        run_ffi(|sink| unsafe { (self.descriptor.destroy)(pointer, sink) }).map(drop)
    }
}

pub(crate) struct ThreadArgs {
    pub core: Arc<CoreInner>,
    pub slot: Arc<ModuleSlot>,
    pub image: PathBuf,
    pub start: StartKind,
    /// Answered once: loaded and started, or why not.
    pub ready: Sender<Result<(), String>>,
}

/// Starts the module's thread.
pub(crate) fn spawn(args: ThreadArgs) -> std::io::Result<Running> {
    let (done_tx, done) = crossbeam_channel::bounded(1);
    let image = args.image.clone();
    let thread = std::thread::Builder::new()
        .name(format!("module:{}", args.slot.name))
        .spawn(move || {
            let library = thread_main(args);
            let _ = done_tx.send(());
            library
        })?;
    Ok(Running {
        thread,
        done,
        image,
    })
}

fn thread_main(args: ThreadArgs) -> Option<Library> {
    let ThreadArgs {
        core,
        slot,
        image,
        start,
        ready,
    } = args;
    let name = slot.name.clone();
    let (library, descriptor) = match open_library(&image, &name) {
        Ok(opened) => opened,
        Err(reason) => {
            let _ = ready.send(Err(reason));
            return None;
        }
    };
    let ctx = Box::new(HostCtx::new(core.clone(), slot.clone()));
    let mut instance = Instance {
        descriptor,
        pointer: std::ptr::null_mut(),
        table: Box::new(host_table::table_for(&ctx)),
    };
    let activity = &slot.activity;
    let in_handler = |what: &str, f: &mut dyn FnMut() -> Result<(), Failure>| {
        activity.enter(what);
        let result = f();
        activity.leave();
        result.map_err(|failure| failure.describe(what))
    };

    // Constructor, init and the start event: a failure in any of them fails
    // the load and is reported to whoever asked for it.
    let start_event = match start {
        StartKind::Start => (events::Start::NAME, encode_core_event(&events::Start {})),
        StartKind::Continue => (
            events::Continue::NAME,
            encode_core_event(&events::Continue {}),
        ),
    };
    let mut started = in_handler("constructor", &mut || instance.create());
    if started.is_ok() {
        started = in_handler("init", &mut || instance.init());
        ctx.finish_init();
    }
    if started.is_ok() {
        started = in_handler(start_event.0, &mut || {
            instance.event(start_event.0, &start_event.1)
        });
    }
    // A failure while serving is this thread's to report; a failure while
    // starting goes back to whoever asked for the load.
    let (unload_kind, serve_failure) = match started {
        Ok(()) => {
            ctx.check_config_reads();
            let _ = ready.send(Ok(()));
            match serve_queue(&slot, &ctx, &mut instance, &core.config) {
                Ok(kind) => (kind, None),
                Err(reason) => (UnloadKind::AfterFailure, Some(reason)),
            }
        }
        Err(reason) => {
            let _ = ready.send(Err(reason));
            (UnloadKind::AfterFailure, None)
        }
    };

    // `core:unload`, also after a failure, so the module can stop the threads
    // it started before its image is closed.
    if !instance.pointer.is_null() {
        if let Err(reason) = in_handler("core:unload", &mut || instance.unload(unload_kind)) {
            tracing::error!("module {name}: {reason}");
        }
        if let Err(reason) = in_handler("destroy", &mut || instance.destroy()) {
            tracing::error!("module {name}: {reason}");
        }
    }
    if let Some(reason) = serve_failure {
        core.module_failed(&slot, reason);
    }
    drop(instance);
    drop(ctx);
    Some(library)
}

/// Where a handled message's times go: the module's queue clock, and the
/// log when it ran at least the slow-handler limit.
struct HandledTimes<'a> {
    slot: &'a ModuleSlot,
    slow_limit: Option<Duration>,
}

impl HandledTimes<'_> {
    /// A `kind` ("event" or "call") named `name`, queued at `queued_at`,
    /// taken from the queue at `taken` and just handled.
    fn record(&self, kind: &str, name: &str, queued_at: Instant, taken: Instant) {
        let wait = taken.duration_since(queued_at);
        let run = taken.elapsed();
        self.slot.clock.record(wait, run);
        if self.slow_limit.is_some_and(|limit| run >= limit) {
            tracing::info!(
                "slow handler: module {} ran {kind} '{name}' for {:.1} ms, after {:.1} ms in its queue",
                self.slot.name,
                run.as_secs_f64() * 1e3,
                wait.as_secs_f64() * 1e3
            );
        }
    }
}

/// Delivers queued events and calls until a stop message (returns its kind)
/// or a panic (returns the reason). Handlers that run at least the
/// config's slow-handler limit are logged; after each, the settings it
/// read are checked ([`HostCtx::check_config_reads`]). As a message comes,
/// at most once an interval, the allocator collects what this thread holds
/// freed ([`ServerConfig::allocator_collect`]: a quiet module's thread
/// would otherwise keep it).
fn serve_queue(
    slot: &ModuleSlot,
    ctx: &HostCtx,
    instance: &mut Instance,
    config: &ServerConfig,
) -> Result<UnloadKind, String> {
    let name = slot.name.as_str();
    let activity = &slot.activity;
    let handled = HandledTimes {
        slot,
        slow_limit: config.slow_handler_limit,
    };
    let mut collected = Instant::now();
    while let Some(message) = slot.recv() {
        let taken = Instant::now();
        if let Some(collect) = config.allocator_collect
            && taken.duration_since(collected) >= config.allocator_collect_interval
        {
            collect();
            collected = taken;
        }
        match message {
            Message::Event(event) => {
                if !slot.is_subscribed(&event.name) {
                    continue;
                }
                activity.enter(&event.name);
                let result = instance.event(&event.name, &event.payload);
                activity.leave();
                handled.record("event", &event.name, event.queued_at, taken);
                if let Err(failure) = result {
                    let reason = failure.describe(&format!("event '{}'", event.name));
                    if failure.panicked() {
                        return Err(reason);
                    }
                    tracing::warn!("module {name}: {reason}");
                }
            }
            Message::Call {
                function,
                payload,
                reply,
                queued_at,
            } => {
                activity.enter(&function);
                let result = instance.call(&function, &payload);
                activity.leave();
                handled.record("call", &function, queued_at, taken);
                match result {
                    Ok(bytes) => {
                        reply.send(Ok(bytes));
                    }
                    Err(failure) if failure.panicked() => {
                        let reason = failure.describe(&format!("call '{function}'"));
                        reply.send(Err(CallError::Panicked(format!("module {name} {reason}"))));
                        return Err(reason);
                    }
                    Err(failure) => {
                        reply.send(Err(CallError::from_status(
                            failure.status,
                            failure.message.as_bytes(),
                        )));
                    }
                }
            }
            Message::Stop(kind) => return Ok(kind),
        }
        ctx.check_config_reads();
    }
    Ok(UnloadKind::ForGood)
}
