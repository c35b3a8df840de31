//! The host functions a module calls, as `extern "C"` functions over a
//! per-instance context.
//!
//! Owns: [`HostCtx`] (which module is calling, which subscriptions this
//! instance made, which shared buffers it holds: given back when the
//! context is dropped, after the instance ends; which settings it read
//! through `get_config`, each checked once against the declared ones after
//! the handler that read it: [`HostCtx::check_config_reads`]) and the
//! table handed to the module. Invariant: no panic
//! crosses back into the module: every function runs under `catch_unwind`
//! and reports failure as a status. Does not own: the operations themselves
//! (`core/mod.rs`).

use std::collections::HashSet;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use buildat_interface::abi::{self, ByteSink, HostTable, RawSlice, Status};
use buildat_interface::config;

use super::CoreInner;
use super::shared::Holdings;
use super::slot::{ModuleSlot, lock};

/// What the host knows about the instance calling it.
pub(crate) struct HostCtx {
    pub core: Arc<CoreInner>,
    pub slot: Arc<ModuleSlot>,
    /// Subscriptions made by this instance (the slot's set may still hold the
    /// previous instance's until init finishes).
    instance_subs: Mutex<HashSet<String>>,
    /// The shared buffers this instance holds references to.
    holdings: Holdings,
    /// Settings keys this instance read, and those not checked yet.
    reads: Mutex<ConfigReads>,
    /// `reads` has keys to check (so a handler that read none costs no lock).
    reads_pending: AtomicBool,
}

/// The keys an instance read through `get_config`.
#[derive(Default)]
struct ConfigReads {
    seen: HashSet<String>,
    unchecked: Vec<String>,
}

impl Drop for HostCtx {
    fn drop(&mut self) {
        let given_back = self.core.shared.release_all(&self.holdings);
        if given_back > 0 {
            tracing::debug!(
                "module {}: {given_back} shared buffer references given back as it ended",
                self.slot.name
            );
        }
    }
}

impl HostCtx {
    pub fn new(core: Arc<CoreInner>, slot: Arc<ModuleSlot>) -> Self {
        Self {
            core,
            slot,
            instance_subs: Mutex::new(HashSet::new()),
            holdings: Holdings::default(),
            reads: Mutex::new(ConfigReads::default()),
            reads_pending: AtomicBool::new(false),
        }
    }

    /// After the start event (the module has declared its settings) and
    /// after each handler: warns about each key read since that is neither
    /// the core's own nor declared by a loaded module, once per key and
    /// instance.
    pub fn check_config_reads(&self) {
        if !self.reads_pending.swap(false, Ordering::AcqRel) {
            return;
        }
        let unchecked = std::mem::take(&mut lock(&self.reads).unchecked);
        for key in unchecked {
            let declared = self.core.is_declared(&key);
            if let Some(warning) = super::settings::undeclared_read(&self.slot.name, &key, declared)
            {
                tracing::warn!("{warning}");
            }
        }
    }

    fn note_read(&self, key: &str) {
        let mut reads = lock(&self.reads);
        if reads.seen.insert(key.to_string()) {
            reads.unchecked.push(key.to_string());
            self.reads_pending.store(true, Ordering::Release);
        }
    }

    /// After init: the instance's subscriptions replace the previous
    /// instance's (kept until now so nothing emitted during a reload is lost).
    pub fn finish_init(&self) {
        let current = lock(&self.instance_subs).clone();
        let previous: Vec<String> = match self.slot.subs.read() {
            Ok(subs) => subs.difference(&current).cloned().collect(),
            Err(_) => Vec::new(),
        };
        for name in previous {
            self.core.bus.unsubscribe(&name, &self.slot);
        }
        if let Ok(mut subs) = self.slot.subs.write() {
            *subs = current;
        }
    }

    fn subscribe(&self, name: &str) {
        lock(&self.instance_subs).insert(name.to_string());
        if let Ok(mut subs) = self.slot.subs.write() {
            subs.insert(name.to_string());
        }
        self.core.bus.subscribe(name, &self.slot);
    }

    fn unsubscribe(&self, name: &str) {
        lock(&self.instance_subs).remove(name);
        if let Ok(mut subs) = self.slot.subs.write() {
            subs.remove(name);
        }
        self.core.bus.unsubscribe(name, &self.slot);
    }

    fn get_config(&self, key: &str) -> Option<String> {
        let settings = &self.core.config;
        let value = match key {
            config::MODULE_NAME => self.slot.name.clone(),
            config::MODULE_PATH => self.slot.dir.display().to_string(),
            config::WORLD_PATH => settings.world_path.display().to_string(),
            config::MODULE_PATHS => self
                .core
                .get_module_paths()
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join("\n"),
            config::LISTEN => settings.listen.clone(),
            config::LOG_LEVEL => settings.log_level.clone(),
            config::STARTED => {
                let started = self.core.started.load(std::sync::atomic::Ordering::Acquire);
                u8::from(started).to_string()
            }
            other => {
                self.note_read(other);
                self.core.get_setting(other)?.0
            }
        };
        Some(value)
    }
}

/// The table for one instance. `ctx` must outlive the instance.
pub(crate) fn table_for(ctx: &HostCtx) -> HostTable {
    HostTable {
        table_size: size_of::<HostTable>() as u32,
        abi_version: abi::ABI_VERSION,
        ctx: (ctx as *const HostCtx).cast(),
        log: host_log,
        emit_event: host_emit_event,
        sub_event: host_sub_event,
        unsub_event: host_unsub_event,
        call_module: host_call_module,
        tmp_store_data: host_tmp_store_data,
        tmp_restore_data: host_tmp_restore_data,
        shutdown: host_shutdown,
        get_config: host_get_config,
        share_bytes: host_share_bytes,
        acquire_bytes: host_acquire_bytes,
        release_bytes: host_release_bytes,
    }
}

/// Runs `f` with the context, containing any panic of host code.
fn with_ctx(ctx: *const c_void, f: impl FnOnce(&HostCtx) -> Status) -> Status {
    // SAFETY: the table was made by `table_for` with a live HostCtx.
    let Some(ctx) = (unsafe { ctx.cast::<HostCtx>().as_ref() }) else {
        return abi::STATUS_INVALID;
    };
    catch_unwind(AssertUnwindSafe(|| f(ctx))).unwrap_or_else(|_| {
        tracing::error!("host function panicked");
        abi::STATUS_ERROR
    })
}

/// A UTF-8 argument, or `STATUS_INVALID`.
fn text<'a>(slice: RawSlice) -> Result<&'a str, Status> {
    // SAFETY: the module passes slices valid for the call.
    unsafe { slice.as_str() }.map_err(|_| abi::STATUS_INVALID)
}

fn put(out: *const ByteSink, bytes: &[u8]) {
    // SAFETY: the module passes a sink valid for the call.
    if let Some(sink) = unsafe { out.as_ref() } {
        // SAFETY: as above.
        unsafe { sink.put(bytes) };
    }
}

unsafe extern "C" fn host_log(ctx: *const c_void, level: u32, message: RawSlice) {
    with_ctx(ctx, |ctx| {
        // SAFETY: valid for the call.
        let bytes = unsafe { message.as_bytes() };
        let message = String::from_utf8_lossy(bytes);
        let module = ctx.slot.name.as_str();
        match abi::get_log_level(level).unwrap_or(log::Level::Error) {
            log::Level::Error => tracing::error!("[{module}] {message}"),
            log::Level::Warn => tracing::warn!("[{module}] {message}"),
            log::Level::Info => tracing::info!("[{module}] {message}"),
            log::Level::Debug => tracing::debug!("[{module}] {message}"),
            log::Level::Trace => tracing::trace!("[{module}] {message}"),
        }
        abi::STATUS_OK
    });
}

unsafe extern "C" fn host_emit_event(
    ctx: *const c_void,
    name: RawSlice,
    payload: RawSlice,
) -> Status {
    with_ctx(ctx, |ctx| {
        let name = match text(name) {
            Ok(name) => name,
            Err(status) => return status,
        };
        // SAFETY: valid for the call.
        let payload = unsafe { payload.as_bytes() }.to_vec();
        // A subscriber whose queue stayed full is logged by its slot; the
        // emitter gets an error status.
        match ctx.core.bus.emit(name, payload, Some(ctx.slot.as_ref())) {
            Ok(_) => abi::STATUS_OK,
            Err(_) => abi::STATUS_ERROR,
        }
    })
}

unsafe extern "C" fn host_sub_event(ctx: *const c_void, name: RawSlice) -> Status {
    with_ctx(ctx, |ctx| match text(name) {
        Ok(name) => {
            ctx.subscribe(name);
            abi::STATUS_OK
        }
        Err(status) => status,
    })
}

unsafe extern "C" fn host_unsub_event(ctx: *const c_void, name: RawSlice) -> Status {
    with_ctx(ctx, |ctx| match text(name) {
        Ok(name) => {
            ctx.unsubscribe(name);
            abi::STATUS_OK
        }
        Err(status) => status,
    })
}

unsafe extern "C" fn host_call_module(
    ctx: *const c_void,
    module: RawSlice,
    function: RawSlice,
    payload: RawSlice,
    out: *const ByteSink,
) -> Status {
    with_ctx(ctx, |ctx| {
        let (Ok(module), Ok(function)) = (text(module), text(function)) else {
            return abi::STATUS_INVALID;
        };
        // SAFETY: valid for the call.
        let payload = unsafe { payload.as_bytes() };
        ctx.slot.activity.begin_wait();
        let result = ctx.core.call(&ctx.slot.name, module, function, payload);
        ctx.slot.activity.end_wait();
        match result {
            Ok(bytes) => {
                put(out, &bytes);
                abi::STATUS_OK
            }
            Err(error) => {
                put(out, error.message().as_bytes());
                error.status()
            }
        }
    })
}

unsafe extern "C" fn host_tmp_store_data(
    ctx: *const c_void,
    name: RawSlice,
    data: RawSlice,
) -> Status {
    with_ctx(ctx, |ctx| {
        let name = match text(name) {
            Ok(name) => name,
            Err(status) => return status,
        };
        // SAFETY: valid for the call.
        let data = unsafe { data.as_bytes() }.to_vec();
        lock(&ctx.core.tmp_data).insert((ctx.slot.name.clone(), name.to_string()), data);
        abi::STATUS_OK
    })
}

unsafe extern "C" fn host_tmp_restore_data(
    ctx: *const c_void,
    name: RawSlice,
    out: *const ByteSink,
) -> Status {
    with_ctx(ctx, |ctx| {
        let name = match text(name) {
            Ok(name) => name,
            Err(status) => return status,
        };
        let data = lock(&ctx.core.tmp_data).remove(&(ctx.slot.name.clone(), name.to_string()));
        match data {
            Some(data) => {
                put(out, &data);
                abi::STATUS_OK
            }
            None => abi::STATUS_NOT_FOUND,
        }
    })
}

unsafe extern "C" fn host_shutdown(ctx: *const c_void, status: i32, reason: RawSlice) {
    with_ctx(ctx, |ctx| {
        // SAFETY: valid for the call.
        let reason = String::from_utf8_lossy(unsafe { reason.as_bytes() });
        ctx.core.request_shutdown(
            status,
            format!("module {} asked to stop: {reason}", ctx.slot.name),
        );
        abi::STATUS_OK
    });
}

unsafe extern "C" fn host_get_config(
    ctx: *const c_void,
    key: RawSlice,
    out: *const ByteSink,
) -> Status {
    with_ctx(ctx, |ctx| {
        let key = match text(key) {
            Ok(key) => key,
            Err(status) => return status,
        };
        match ctx.get_config(key) {
            Some(value) => {
                put(out, value.as_bytes());
                abi::STATUS_OK
            }
            None => abi::STATUS_NOT_FOUND,
        }
    })
}

unsafe extern "C" fn host_share_bytes(
    ctx: *const c_void,
    data: RawSlice,
    id: *mut u64,
    address: *mut *const u8,
) -> Status {
    with_ctx(ctx, |ctx| {
        if id.is_null() || address.is_null() {
            return abi::STATUS_INVALID;
        }
        // SAFETY: valid for the call.
        let data = unsafe { data.as_bytes() };
        let (shared, start) = ctx.core.shared.share(&ctx.holdings, data);
        // SAFETY: checked non-null; the module passes places valid for the call.
        unsafe {
            *id = shared;
            *address = start;
        }
        abi::STATUS_OK
    })
}

unsafe extern "C" fn host_acquire_bytes(
    ctx: *const c_void,
    id: u64,
    address: *mut *const u8,
    len: *mut usize,
) -> Status {
    with_ctx(ctx, |ctx| {
        if address.is_null() || len.is_null() {
            return abi::STATUS_INVALID;
        }
        match ctx.core.shared.acquire(&ctx.holdings, id) {
            Ok((start, length)) => {
                // SAFETY: checked non-null; valid for the call.
                unsafe {
                    *address = start;
                    *len = length;
                }
                abi::STATUS_OK
            }
            Err(_) => abi::STATUS_NOT_FOUND,
        }
    })
}

unsafe extern "C" fn host_release_bytes(ctx: *const c_void, id: u64) -> Status {
    with_ctx(ctx, |ctx| {
        match ctx.core.shared.release(&ctx.holdings, id) {
            Ok(()) => abi::STATUS_OK,
            Err(_) => abi::STATUS_INVALID,
        }
    })
}
