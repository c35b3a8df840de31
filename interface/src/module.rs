//! The safe side of the ABI for module authors: the [`Module`] trait, the
//! [`Host`] handle, and the generic `extern "C"` glue behind
//! [`crate::export_module!`].
//!
//! Owns: panic containment inside the module (every exported function runs
//! under `catch_unwind`), routing this library's `log` records and panic
//! messages to the host. Does not own: scheduling, threads, or what the host
//! does with errors.

use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

use crate::abi::{self, ByteSink, HostTable, ModuleDescriptor, RawSlice, Status};
use crate::call::Call;
use crate::payload::{self, PayloadError};
use crate::receive::{Dispatch, Receive};
use crate::shared::SharedBytes;
use crate::stash::{self, Stash, StashError};

/// An error a module returns from a handler. The host logs it with the
/// module's name; it does not unload the module (a panic does).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ModuleError {
    #[error("{0}")]
    Message(String),
    #[error("unknown function '{0}'")]
    UnknownFunction(String),
    #[error(transparent)]
    Payload(#[from] PayloadError),
    #[error(transparent)]
    Stash(#[from] StashError),
    #[error(transparent)]
    Call(#[from] CallError),
    #[error(transparent)]
    Host(#[from] HostError),
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// A payload that does not decode as what the receive table expects
    /// (`what`: "event NAME" or "call NAME").
    #[error("malformed {what}: {error}")]
    Malformed { what: String, error: PayloadError },
    /// A command's words that do not parse: clap's message and usage.
    #[error("{0}")]
    Usage(String),
}

impl ModuleError {
    pub fn msg(message: impl Into<String>) -> Self {
        Self::Message(message.into())
    }
}

impl From<String> for ModuleError {
    fn from(message: String) -> Self {
        Self::Message(message)
    }
}

impl From<&str> for ModuleError {
    fn from(message: &str) -> Self {
        Self::Message(message.to_string())
    }
}

/// Why a call into another module failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CallError {
    #[error("{0}")]
    NotFound(String),
    #[error("call cycle: {0}")]
    Cycle(String),
    #[error("timed out: {0}")]
    Timeout(String),
    #[error("{0}")]
    Panicked(String),
    #[error("{0}")]
    Failed(String),
    #[error("{0}")]
    Invalid(String),
}

impl CallError {
    /// Builds the error for a non-OK status and the message in the sink.
    pub fn from_status(status: Status, message: &[u8]) -> Self {
        let message = String::from_utf8_lossy(message).into_owned();
        match status {
            abi::STATUS_NOT_FOUND => Self::NotFound(message),
            abi::STATUS_CALL_CYCLE => Self::Cycle(message),
            abi::STATUS_TIMEOUT => Self::Timeout(message),
            abi::STATUS_PANIC => Self::Panicked(message),
            abi::STATUS_INVALID => Self::Invalid(message),
            _ => Self::Failed(message),
        }
    }

    /// The status code carrying this error across the boundary.
    pub fn status(&self) -> Status {
        match self {
            Self::NotFound(_) => abi::STATUS_NOT_FOUND,
            Self::Cycle(_) => abi::STATUS_CALL_CYCLE,
            Self::Timeout(_) => abi::STATUS_TIMEOUT,
            Self::Panicked(_) => abi::STATUS_PANIC,
            Self::Invalid(_) => abi::STATUS_INVALID,
            Self::Failed(_) => abi::STATUS_ERROR,
        }
    }

    /// The message without the variant's prefix.
    pub fn message(&self) -> &str {
        match self {
            Self::NotFound(m)
            | Self::Cycle(m)
            | Self::Timeout(m)
            | Self::Panicked(m)
            | Self::Failed(m)
            | Self::Invalid(m) => m,
        }
    }
}

/// A host function refused a request.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("host refused {what}: status {status}")]
pub struct HostError {
    pub what: &'static str,
    pub status: Status,
}

/// Why a module is being unloaded (see [`Module::unload`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnloadKind {
    /// A new version loads right after: what it needs goes in the stash
    /// (the receive table's `.stash(..)`, or [`Host::store_stash`]).
    Reload,
    /// Unloaded on request; nothing follows.
    ForGood,
    /// The server is stopping: save and close everything.
    Stop,
    /// The module panicked: release what can be released.
    AfterFailure,
}

impl UnloadKind {
    pub fn to_raw(self) -> u32 {
        match self {
            Self::Reload => abi::UNLOAD_FOR_RELOAD,
            Self::ForGood => abi::UNLOAD_FOR_GOOD,
            Self::Stop => abi::UNLOAD_FOR_STOP,
            Self::AfterFailure => abi::UNLOAD_AFTER_FAILURE,
        }
    }

    /// Unknown numbers count as `ForGood` (nothing follows).
    pub fn from_raw(raw: u32) -> Self {
        match raw {
            abi::UNLOAD_FOR_RELOAD => Self::Reload,
            abi::UNLOAD_FOR_STOP => Self::Stop,
            abi::UNLOAD_AFTER_FAILURE => Self::AfterFailure,
            _ => Self::ForGood,
        }
    }
}

/// A module's handle on the host. Cheap to copy and usable from any thread
/// the module owns, while the module is loaded.
#[derive(Clone, Copy)]
pub struct Host {
    table: &'static HostTable,
}

// SAFETY: every host function is thread-safe (HostTable contract).
unsafe impl Send for Host {}
// SAFETY: as above.
unsafe impl Sync for Host {}

fn check(status: Status, what: &'static str) -> Result<(), HostError> {
    if status == abi::STATUS_OK {
        Ok(())
    } else {
        Err(HostError { what, status })
    }
}

impl Host {
    /// # Safety
    /// `table` must stay valid until the module's `destroy` returns.
    pub unsafe fn from_raw(table: *const HostTable) -> Option<Self> {
        // SAFETY: the host keeps the table alive while the module is loaded;
        // the module never uses it after `destroy`.
        let table: &'static HostTable = unsafe { table.as_ref()? };
        (table.abi_version == abi::ABI_VERSION).then_some(Self { table })
    }

    /// Logs under this module's name. Prefer the `log` macros, which route here.
    pub fn log(&self, level: log::Level, message: &str) {
        // SAFETY: valid table; the slice lives for the call.
        unsafe {
            (self.table.log)(
                self.table.ctx,
                abi::log_level_to_u32(level),
                RawSlice::from_str(message),
            )
        }
    }

    /// Queues an event for every subscriber of `name`.
    pub fn emit_event(&self, name: &str, payload: &[u8]) -> Result<(), HostError> {
        // SAFETY: valid table; slices live for the call.
        let status = unsafe {
            (self.table.emit_event)(
                self.table.ctx,
                RawSlice::from_str(name),
                RawSlice::from_bytes(payload),
            )
        };
        check(status, "emit_event")
    }

    /// Encodes `event` and emits it under its [`crate::Event::NAME`].
    pub fn emit<E: crate::Event>(&self, event: &E) -> Result<(), ModuleError> {
        Ok(self.emit_event(E::NAME, &payload::encode(event)?)?)
    }

    /// Subscribes to events named `name`; they arrive in [`Module::event`].
    pub fn sub_event(&self, name: &str) -> Result<(), HostError> {
        // SAFETY: valid table; the slice lives for the call.
        let status = unsafe { (self.table.sub_event)(self.table.ctx, RawSlice::from_str(name)) };
        check(status, "sub_event")
    }

    /// Removes a subscription.
    pub fn unsub_event(&self, name: &str) -> Result<(), HostError> {
        // SAFETY: valid table; the slice lives for the call.
        let status = unsafe { (self.table.unsub_event)(self.table.ctx, RawSlice::from_str(name)) };
        check(status, "unsub_event")
    }

    /// Calls `function` of `module` with raw bytes; blocks until it answers.
    /// Prefer [`Host::call`] with the callee's typed definition.
    pub fn call_raw(
        &self,
        module: &str,
        function: &str,
        payload: &[u8],
    ) -> Result<Vec<u8>, CallError> {
        let mut out = Vec::new();
        let sink = ByteSink::for_vec(&mut out);
        // SAFETY: valid table; slices and sink live for the call.
        let status = unsafe {
            (self.table.call_module)(
                self.table.ctx,
                RawSlice::from_str(module),
                RawSlice::from_str(function),
                RawSlice::from_bytes(payload),
                &sink,
            )
        };
        if status == abi::STATUS_OK {
            Ok(out)
        } else {
            Err(CallError::from_status(status, &out))
        }
    }

    /// Makes the call `args` defines ([`Call`]) on its module; blocks until
    /// the reply.
    pub fn call<C: Call>(&self, args: &C) -> Result<C::Reply, ModuleError> {
        self.call_module(C::MODULE, args)
    }

    /// Makes the call `args` defines on `module`, a module chosen at run
    /// time that answers the same definition (a world generator, say).
    pub fn call_module<C: Call>(&self, module: &str, args: &C) -> Result<C::Reply, ModuleError> {
        let bytes = self.call_raw(module, C::FUNCTION, &payload::encode(args)?)?;
        Ok(payload::decode(&bytes)?)
    }

    /// Keeps this module's reload stash for its next version (see [`Stash`]).
    pub fn store_stash<S: Stash>(&self, stash: &S) -> Result<(), ModuleError> {
        Ok(self.tmp_store_data(stash::STASH_NAME, &stash::encode_stash(stash)?)?)
    }

    /// Takes the stash the previous version stored: `None` on a fresh load,
    /// an error naming both layouts when the previous version's differs.
    /// A stash this version cannot read is kept for the next version, which
    /// may (it can hold resources only a reader can release: sockets).
    pub fn take_stash<S: Stash>(&self) -> Result<Option<S>, StashError> {
        let Some(bytes) = self.tmp_restore_data(stash::STASH_NAME) else {
            return Ok(None);
        };
        stash::decode_stash(&bytes).map(Some).inspect_err(|_| {
            let _ = self.tmp_store_data(stash::STASH_NAME, &bytes);
        })
    }

    /// Keeps `data` under `name` for this module's next load (a reload).
    pub fn tmp_store_data(&self, name: &str, data: &[u8]) -> Result<(), HostError> {
        // SAFETY: valid table; slices live for the call.
        let status = unsafe {
            (self.table.tmp_store_data)(
                self.table.ctx,
                RawSlice::from_str(name),
                RawSlice::from_bytes(data),
            )
        };
        check(status, "tmp_store_data")
    }

    /// Takes the data stored under `name` by a previous load of this module.
    pub fn tmp_restore_data(&self, name: &str) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        let sink = ByteSink::for_vec(&mut out);
        // SAFETY: valid table; slice and sink live for the call.
        let status = unsafe {
            (self.table.tmp_restore_data)(self.table.ctx, RawSlice::from_str(name), &sink)
        };
        (status == abi::STATUS_OK).then_some(out)
    }

    /// Asks the server to stop (status 0 is a clean stop).
    pub fn shutdown(&self, status: i32, reason: &str) {
        // SAFETY: valid table; the slice lives for the call.
        unsafe { (self.table.shutdown)(self.table.ctx, status, RawSlice::from_str(reason)) }
    }

    /// A configuration value; see [`crate::config`] for the keys.
    pub fn get_config(&self, key: &str) -> Option<String> {
        let mut out = Vec::new();
        let sink = ByteSink::for_vec(&mut out);
        // SAFETY: valid table; slice and sink live for the call.
        let status =
            unsafe { (self.table.get_config)(self.table.ctx, RawSlice::from_str(key), &sink) };
        if status == abi::STATUS_OK {
            String::from_utf8(out).ok()
        } else {
            None
        }
    }

    /// A `--set KEY=VALUE` setting parsed as `T`, `default` when unset; a
    /// value that does not parse is an error naming the key.
    pub fn get_setting<T: std::str::FromStr>(
        &self,
        key: &str,
        default: T,
    ) -> Result<T, ModuleError> {
        match self.get_config(key) {
            None => Ok(default),
            Some(text) => text.parse().map_err(|_| {
                ModuleError::msg(format!("setting {key}: '{text}' is not a valid value"))
            }),
        }
    }

    /// Copies `data` once into a buffer the host owns, to hand to other
    /// modules by id (see [`crate::shared`]).
    pub fn share_bytes(&self, data: &[u8]) -> Result<SharedBytes, HostError> {
        let mut id = 0;
        let mut address = std::ptr::null();
        // SAFETY: valid table; the slice lives for the call, the outputs are ours.
        let status = unsafe {
            (self.table.share_bytes)(
                self.table.ctx,
                RawSlice::from_bytes(data),
                &mut id,
                &mut address,
            )
        };
        check(status, "share_bytes")?;
        // SAFETY: the host made a buffer of `data.len()` bytes at `address`
        // that this instance holds one reference to, given to the value.
        Ok(unsafe { SharedBytes::from_reference(*self, id, address, data.len()) })
    }

    /// One more reference to the shared buffer `id`: its address and length.
    pub(crate) fn acquire_bytes(&self, id: u64) -> Result<(*const u8, usize), HostError> {
        let (mut address, mut len) = (std::ptr::null(), 0);
        // SAFETY: valid table; the outputs are ours.
        let status =
            unsafe { (self.table.acquire_bytes)(self.table.ctx, id, &mut address, &mut len) };
        check(status, "acquire_bytes")?;
        Ok((address, len))
    }

    /// Gives back one reference to the shared buffer `id`.
    pub(crate) fn release_bytes(&self, id: u64) -> Result<(), HostError> {
        // SAFETY: valid table.
        check(
            unsafe { (self.table.release_bytes)(self.table.ctx, id) },
            "release_bytes",
        )
    }

    /// This module's name (its folder's name).
    pub fn module_name(&self) -> String {
        self.get_config(crate::config::MODULE_NAME)
            .unwrap_or_default()
    }

    /// This module's folder.
    pub fn module_path(&self) -> PathBuf {
        PathBuf::from(
            self.get_config(crate::config::MODULE_PATH)
                .unwrap_or_default(),
        )
    }

    /// The world directory.
    pub fn world_path(&self) -> PathBuf {
        PathBuf::from(
            self.get_config(crate::config::WORLD_PATH)
                .unwrap_or_default(),
        )
    }
}

/// What a module author implements. All methods run on the module's own
/// thread, one at a time.
///
/// Lifecycle: `create` (no access to other modules) → `init` (subscribe) →
/// event `core:start` (or `core:continue` after a reload) → events and calls
/// → `unload` (`core:unload`) → drop.
pub trait Module: Sized + 'static {
    fn create(host: Host) -> Result<Self, ModuleError>;

    /// Declares what the module receives (see [`crate::receive`]): events,
    /// calls, commands and its reload stash, each with its handler. Runs
    /// once per instance, right after [`Module::create`].
    fn receive(table: &mut Receive<Self>) {
        let _ = table;
    }

    fn init(&mut self) -> Result<(), ModuleError> {
        Ok(())
    }

    /// An event the table does not handle.
    fn event(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        let _ = (name, payload);
        Ok(())
    }

    /// A call the table does not answer.
    fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        let _ = payload;
        Err(ModuleError::UnknownFunction(function.to_string()))
    }

    /// `core:unload`: stop and join every thread and runtime the module
    /// started. On [`UnloadKind::Reload`], what the next version needs is
    /// stashed by the receive table (`.stash(..)`, saved after this
    /// returns), or by hand with [`Host::store_stash`], taken back with
    /// [`Host::take_stash`] on `core:continue`.
    fn unload(&mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        let _ = kind;
        Ok(())
    }
}

/// The host of this library copy (one module per library), for the logger
/// and the panic hook.
static HOST: OnceLock<Host> = OnceLock::new();
/// Where the panic hook leaves the location of the latest panic, so the
/// reported message says where it happened.
static LAST_PANIC_LOCATION: Mutex<Option<String>> = Mutex::new(None);

/// The host of this library copy, once the module is created (`None` in
/// a process that is not a module: the server, a tool, a test).
pub(crate) fn library_host() -> Option<Host> {
    HOST.get().copied()
}

struct HostLogger;

impl log::Log for HostLogger {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }

    fn log(&self, record: &log::Record) {
        if let Some(host) = HOST.get() {
            host.log(record.level(), &record.args().to_string());
        }
    }

    fn flush(&self) {}
}

fn install_host_hooks(host: Host) {
    if HOST.set(host).is_err() {
        return;
    }
    if log::set_logger(&HostLogger).is_ok() {
        let level = host
            .get_config(crate::config::LOG_LEVEL)
            .and_then(|l| l.parse().ok())
            .unwrap_or(log::LevelFilter::Info);
        log::set_max_level(level);
    }
    std::panic::set_hook(Box::new(|info| {
        let location = info
            .location()
            .map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()))
            .unwrap_or_default();
        if let Ok(mut last) = LAST_PANIC_LOCATION.lock() {
            *last = Some(location);
        }
    }));
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    let message = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(non-string panic payload)".to_string());
    let location = LAST_PANIC_LOCATION
        .lock()
        .ok()
        .and_then(|mut l| l.take())
        .unwrap_or_default();
    if location.is_empty() {
        message
    } else {
        format!("panicked at {location}: {message}")
    }
}

/// Runs `f`, turning errors and panics into a status with the message in `out`.
fn guard(out: *const ByteSink, f: impl FnOnce() -> Result<Vec<u8>, ModuleError>) -> Status {
    let (status, bytes) = match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(bytes)) => (abi::STATUS_OK, bytes),
        Ok(Err(ModuleError::Call(call))) => (call.status(), call.to_string().into_bytes()),
        Ok(Err(ModuleError::UnknownFunction(name))) => (
            abi::STATUS_NOT_FOUND,
            format!("unknown function '{name}'").into_bytes(),
        ),
        Ok(Err(error @ ModuleError::Malformed { .. })) => {
            (abi::STATUS_INVALID, error.to_string().into_bytes())
        }
        Ok(Err(error)) => (abi::STATUS_ERROR, error.to_string().into_bytes()),
        Err(panic) => {
            let message = panic_message(&*panic);
            // Dropping a panic payload can itself panic; leak it instead.
            std::mem::forget(panic);
            (abi::STATUS_PANIC, message.into_bytes())
        }
    };
    if !bytes.is_empty() {
        // SAFETY: the host passes a sink valid for this call.
        if let Some(sink) = unsafe { out.as_ref() } {
            // SAFETY: as above.
            unsafe { sink.put(&bytes) };
        }
    }
    status
}

/// Glue instantiated per module type by [`crate::export_module!`].
#[doc(hidden)]
pub mod glue {
    use super::*;

    /// # Safety
    /// Called by the host with a valid table, out pointer and sink.
    pub unsafe extern "C" fn create<M: Module>(
        host: *const HostTable,
        instance: *mut *mut c_void,
        err: *const ByteSink,
    ) -> Status {
        guard(err, || {
            // SAFETY: the host keeps the table alive until destroy.
            let host = unsafe { Host::from_raw(host) }
                .ok_or_else(|| ModuleError::msg("host table missing or of another ABI version"))?;
            install_host_hooks(host);
            let module = Dispatch::<M>::create(host)?;
            // SAFETY: the host passes a valid out pointer.
            unsafe { *instance = Box::into_raw(Box::new(module)).cast() };
            Ok(Vec::new())
        })
    }

    /// # Safety
    /// `instance` must come from `create::<M>` and not be destroyed.
    unsafe fn module<'a, M: Module>(instance: *mut c_void) -> &'a mut Dispatch<M> {
        // SAFETY: guaranteed by the caller; calls are serialised on one thread.
        unsafe { &mut *instance.cast::<Dispatch<M>>() }
    }

    /// # Safety
    /// See [`ModuleDescriptor::init`].
    pub unsafe extern "C" fn init<M: Module>(
        instance: *mut c_void,
        err: *const ByteSink,
    ) -> Status {
        // SAFETY: see fn docs.
        guard(err, || {
            unsafe { module::<M>(instance) }.init().map(|()| Vec::new())
        })
    }

    /// # Safety
    /// See [`ModuleDescriptor::event`].
    pub unsafe extern "C" fn event<M: Module>(
        instance: *mut c_void,
        name: RawSlice,
        payload: RawSlice,
        err: *const ByteSink,
    ) -> Status {
        guard(err, || {
            // SAFETY: the host passes slices valid for the call.
            let name = unsafe { name.as_str() }
                .map_err(|_| ModuleError::msg("event name is not UTF-8"))?;
            // SAFETY: as above.
            let payload = unsafe { payload.as_bytes() };
            // SAFETY: see fn docs.
            unsafe { module::<M>(instance) }
                .event(name, payload)
                .map(|()| Vec::new())
        })
    }

    /// # Safety
    /// See [`ModuleDescriptor::call`].
    pub unsafe extern "C" fn call<M: Module>(
        instance: *mut c_void,
        function: RawSlice,
        payload: RawSlice,
        out: *const ByteSink,
    ) -> Status {
        guard(out, || {
            // SAFETY: the host passes slices valid for the call.
            let function = unsafe { function.as_str() }
                .map_err(|_| ModuleError::msg("function name is not UTF-8"))?;
            // SAFETY: as above.
            let payload = unsafe { payload.as_bytes() };
            // SAFETY: see fn docs.
            unsafe { module::<M>(instance) }.call(function, payload)
        })
    }

    /// # Safety
    /// See [`ModuleDescriptor::unload`].
    pub unsafe extern "C" fn unload<M: Module>(
        instance: *mut c_void,
        kind: u32,
        err: *const ByteSink,
    ) -> Status {
        guard(err, || {
            // SAFETY: see fn docs.
            unsafe { module::<M>(instance) }
                .unload(UnloadKind::from_raw(kind))
                .map(|()| Vec::new())
        })
    }

    /// # Safety
    /// See [`ModuleDescriptor::destroy`].
    pub unsafe extern "C" fn destroy<M: Module>(
        instance: *mut c_void,
        err: *const ByteSink,
    ) -> Status {
        guard(err, || {
            // SAFETY: `instance` came from Box::into_raw in `create::<M>`.
            drop(unsafe { Box::from_raw(instance.cast::<Dispatch<M>>()) });
            Ok(Vec::new())
        })
    }
}

impl ModuleDescriptor {
    /// The descriptor for module type `M`, stamped with this interface's
    /// versions. Used by [`crate::export_module!`].
    pub const fn for_module<M: Module>(crate_name: &'static str) -> Self {
        Self {
            abi_magic: abi::ABI_MAGIC,
            abi_version: abi::ABI_VERSION,
            descriptor_size: size_of::<ModuleDescriptor>() as u32,
            interface_version: RawSlice::from_str(abi::INTERFACE_VERSION),
            rustc_version: RawSlice::from_str(abi::RUSTC_VERSION),
            crate_name: RawSlice::from_str(crate_name),
            create: glue::create::<M>,
            init: glue::init::<M>,
            event: glue::event::<M>,
            call: glue::call::<M>,
            unload: glue::unload::<M>,
            destroy: glue::destroy::<M>,
        }
    }
}

/// Exports `$module` (a type implementing [`Module`]) as this library's module.
///
/// ```ignore
/// struct Counter { host: Host, count: u64 }
/// impl Module for Counter { fn create(host: Host) -> Result<Self, ModuleError> { Ok(Self { host, count: 0 }) } }
/// buildat_interface::export_module!(Counter);
/// ```
#[macro_export]
macro_rules! export_module {
    ($module:ty) => {
        #[unsafe(no_mangle)]
        pub extern "C" fn buildat_module_descriptor() -> *const $crate::abi::ModuleDescriptor {
            static DESCRIPTOR: $crate::abi::ModuleDescriptor =
                $crate::abi::ModuleDescriptor::for_module::<$module>(env!("CARGO_PKG_NAME"));
            &DESCRIPTOR
        }
    };
}
