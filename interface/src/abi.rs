//! The C ABI between the server (host) and a module library.
//!
//! Owns: the `#[repr(C)]` module descriptor, the host function table, the byte
//! slice and byte sink types that carry data across, status codes and version
//! stamps. Does not own: any behaviour; the safe wrappers live in `module.rs`
//! (module side) and in the server (host side).
//!
//! Invariants:
//! - Nothing Rust-specific crosses: only `#[repr(C)]` structs, integers, raw
//!   pointers and `extern "C"` function pointers.
//! - Memory is freed by the side that allocated it. Data coming back from a
//!   call is written through a [`ByteSink`] owned by the receiving side, which
//!   copies it into its own allocation.
//! - The first three fields of [`ModuleDescriptor`] never move, so any
//!   future host can read `abi_magic`, `abi_version` and `descriptor_size`
//!   before trusting anything else.

use std::ffi::c_void;

/// `b"BUILDAT\x01"` read as little-endian: identifies a Buildat module descriptor.
pub const ABI_MAGIC: u64 = u64::from_le_bytes(*b"BUILDAT\x01");
/// Bumped whenever the layout of any type in this file changes.
pub const ABI_VERSION: u32 = 2;
/// The interface crate's version plus a hash of its sources: a module built
/// against any other interface is refused.
pub const INTERFACE_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    "+",
    env!("BUILDAT_INTERFACE_SOURCE_HASH")
);
/// The compiler that built this copy of the interface crate.
pub const RUSTC_VERSION: &str = env!("BUILDAT_RUSTC_VERSION");
/// The symbol every module library exports; see [`EntryFn`].
pub const ENTRY_SYMBOL: &str = "buildat_module_descriptor";
/// Signature of [`ENTRY_SYMBOL`]: returns a pointer to a static descriptor.
pub type EntryFn = unsafe extern "C" fn() -> *const ModuleDescriptor;

/// Result code of every function crossing the boundary.
pub type Status = i32;
pub const STATUS_OK: Status = 0;
/// The callee returned an error; its message was written to the error sink.
pub const STATUS_ERROR: Status = 1;
/// The callee panicked; the panic message was written to the error sink.
pub const STATUS_PANIC: Status = 2;
/// A named thing (module, function, stored data) does not exist.
pub const STATUS_NOT_FOUND: Status = 3;
/// The call would wait on itself (A -> B -> A); the chain was written to the sink.
pub const STATUS_CALL_CYCLE: Status = 4;
/// The callee did not answer in time.
pub const STATUS_TIMEOUT: Status = 5;
/// Bad arguments (for example a name that is not UTF-8).
pub const STATUS_INVALID: Status = 6;

/// `unload` kinds: a reload follows at once (keep what must survive with
/// `tmp_store_data`).
pub const UNLOAD_FOR_RELOAD: u32 = 1;
/// Unloaded on request (`unload NAME`); nothing follows.
pub const UNLOAD_FOR_GOOD: u32 = 2;
/// The server is stopping.
pub const UNLOAD_FOR_STOP: u32 = 3;
/// The module failed (panicked); clean up what can be cleaned.
pub const UNLOAD_AFTER_FAILURE: u32 = 4;

/// A borrowed byte slice crossing the boundary. Valid only for the duration of
/// the call it is passed to.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct RawSlice {
    pub ptr: *const u8,
    pub len: usize,
}

impl RawSlice {
    pub const fn from_bytes(bytes: &[u8]) -> Self {
        Self {
            ptr: bytes.as_ptr(),
            len: bytes.len(),
        }
    }

    pub const fn from_str(text: &str) -> Self {
        Self::from_bytes(text.as_bytes())
    }

    /// # Safety
    /// `ptr` must point to `len` readable bytes that outlive `'a` (or `len` is 0).
    pub unsafe fn as_bytes<'a>(self) -> &'a [u8] {
        if self.len == 0 || self.ptr.is_null() {
            &[]
        } else {
            // SAFETY: guaranteed by the caller.
            unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
        }
    }

    /// # Safety
    /// As [`RawSlice::as_bytes`].
    pub unsafe fn as_str<'a>(self) -> Result<&'a str, std::str::Utf8Error> {
        // SAFETY: forwarded to the caller.
        std::str::from_utf8(unsafe { self.as_bytes() })
    }
}

/// Where the other side writes bytes it returns. The `write` function belongs
/// to the side that created the sink, so the bytes are copied into memory that
/// side allocates and later frees. `write` may be called several times; the
/// pieces are concatenated.
#[repr(C)]
pub struct ByteSink {
    pub ctx: *mut c_void,
    pub write: unsafe extern "C" fn(ctx: *mut c_void, data: RawSlice),
}

unsafe extern "C" fn write_into_vec(ctx: *mut c_void, data: RawSlice) {
    // SAFETY: `ctx` was made from `&mut Vec<u8>` in `ByteSink::for_vec` and the
    // sink does not outlive that borrow; `data` is valid for this call.
    let out = unsafe { &mut *ctx.cast::<Vec<u8>>() };
    out.extend_from_slice(unsafe { data.as_bytes() });
}

impl ByteSink {
    /// A sink appending to `out`, which must outlive every use of the sink.
    pub fn for_vec(out: &mut Vec<u8>) -> Self {
        Self {
            ctx: (out as *mut Vec<u8>).cast(),
            write: write_into_vec,
        }
    }

    /// Writes `bytes` through the sink.
    ///
    /// # Safety
    /// The sink must still be valid (its creator's borrow alive).
    pub unsafe fn put(&self, bytes: &[u8]) {
        // SAFETY: forwarded to the caller.
        unsafe { (self.write)(self.ctx, RawSlice::from_bytes(bytes)) }
    }
}

/// Functions the host offers to a module. One table per loaded module
/// instance; `ctx` identifies that instance to the host. Every function is
/// thread-safe and may be called from any thread the module owns while the
/// module is loaded.
#[repr(C)]
pub struct HostTable {
    pub table_size: u32,
    pub abi_version: u32,
    pub ctx: *const c_void,
    /// Logs `message` at `level` (see [`log_level_to_u32`]) under the module's name.
    pub log: unsafe extern "C" fn(ctx: *const c_void, level: u32, message: RawSlice),
    /// Queues an event for every subscriber of `name`.
    pub emit_event:
        unsafe extern "C" fn(ctx: *const c_void, name: RawSlice, payload: RawSlice) -> Status,
    /// Subscribes this module to events named `name`.
    pub sub_event: unsafe extern "C" fn(ctx: *const c_void, name: RawSlice) -> Status,
    /// Removes a subscription made with `sub_event`.
    pub unsub_event: unsafe extern "C" fn(ctx: *const c_void, name: RawSlice) -> Status,
    /// Runs `function` on `module`'s thread and blocks until it answers.
    /// On success the result is written to `out`; otherwise an error message.
    pub call_module: unsafe extern "C" fn(
        ctx: *const c_void,
        module: RawSlice,
        function: RawSlice,
        payload: RawSlice,
        out: *const ByteSink,
    ) -> Status,
    /// Stores bytes under `name` for this module until its next load.
    pub tmp_store_data:
        unsafe extern "C" fn(ctx: *const c_void, name: RawSlice, data: RawSlice) -> Status,
    /// Takes bytes stored with `tmp_store_data`; `STATUS_NOT_FOUND` if none.
    pub tmp_restore_data:
        unsafe extern "C" fn(ctx: *const c_void, name: RawSlice, out: *const ByteSink) -> Status,
    /// Asks the server to stop with an exit status and a reason.
    pub shutdown: unsafe extern "C" fn(ctx: *const c_void, status: i32, reason: RawSlice),
    /// Writes a configuration value (see [`crate::config`]) to `out`;
    /// `STATUS_NOT_FOUND` if unset.
    pub get_config:
        unsafe extern "C" fn(ctx: *const c_void, key: RawSlice, out: *const ByteSink) -> Status,
    /// Copies `data` into a buffer the host owns, shared by id (see
    /// [`crate::shared`]): writes the id and the address of its first byte,
    /// valid while this instance holds a reference (it holds one now).
    pub share_bytes: unsafe extern "C" fn(
        ctx: *const c_void,
        data: RawSlice,
        id: *mut u64,
        address: *mut *const u8,
    ) -> Status,
    /// Takes one more reference to the shared buffer `id` for this
    /// instance: writes its address and length; `STATUS_NOT_FOUND` when no
    /// buffer has that id any more.
    pub acquire_bytes: unsafe extern "C" fn(
        ctx: *const c_void,
        id: u64,
        address: *mut *const u8,
        len: *mut usize,
    ) -> Status,
    /// Gives back one of this instance's references to `id`
    /// (`STATUS_INVALID` if it holds none); the buffer is freed with its
    /// last reference. What an instance still holds when it ends is given
    /// back for it.
    pub release_bytes: unsafe extern "C" fn(ctx: *const c_void, id: u64) -> Status,
}

/// What a module library exports through [`ENTRY_SYMBOL`]. A `'static` in
/// the module; valid while the library is loaded.
///
/// Every function catches panics inside the module and reports them as
/// `STATUS_PANIC` with the message written to the sink.
#[repr(C)]
pub struct ModuleDescriptor {
    pub abi_magic: u64,
    pub abi_version: u32,
    pub descriptor_size: u32,
    pub interface_version: RawSlice,
    pub rustc_version: RawSlice,
    /// The module crate's package name (informational: the module's name
    /// is its folder's name).
    pub crate_name: RawSlice,
    /// Constructor: must not touch other modules. Writes the instance pointer
    /// to `instance` on success, an error message to `err` otherwise.
    pub create: unsafe extern "C" fn(
        host: *const HostTable,
        instance: *mut *mut c_void,
        err: *const ByteSink,
    ) -> Status,
    /// Subscribe to events and reach other modules.
    pub init: unsafe extern "C" fn(instance: *mut c_void, err: *const ByteSink) -> Status,
    /// Handle one event.
    pub event: unsafe extern "C" fn(
        instance: *mut c_void,
        name: RawSlice,
        payload: RawSlice,
        err: *const ByteSink,
    ) -> Status,
    /// Handle one call; the result (or error message) goes to `out`.
    pub call: unsafe extern "C" fn(
        instance: *mut c_void,
        function: RawSlice,
        payload: RawSlice,
        out: *const ByteSink,
    ) -> Status,
    /// `core:unload`: the module is unloaded right after this returns. Stop
    /// and join every thread and runtime the module started; stash state with
    /// `tmp_store_data` if `kind` is [`UNLOAD_FOR_RELOAD`].
    pub unload:
        unsafe extern "C" fn(instance: *mut c_void, kind: u32, err: *const ByteSink) -> Status,
    /// Drops the instance.
    pub destroy: unsafe extern "C" fn(instance: *mut c_void, err: *const ByteSink) -> Status,
}

// SAFETY: the descriptor only holds pointers to `'static` data and functions.
unsafe impl Sync for ModuleDescriptor {}
// SAFETY: the table's functions are thread-safe by contract (see HostTable docs).
unsafe impl Sync for HostTable {}
// SAFETY: as above.
unsafe impl Send for HostTable {}

/// Maps a `log` level to the number carried by [`HostTable::log`].
pub fn log_level_to_u32(level: log::Level) -> u32 {
    level as u32
}

/// Maps a number carried by [`HostTable::log`] back to a level (unknown
/// numbers become `Error` so nothing is lost).
pub fn get_log_level(level: u32) -> Option<log::Level> {
    [
        log::Level::Error,
        log::Level::Warn,
        log::Level::Info,
        log::Level::Debug,
        log::Level::Trace,
    ]
    .into_iter()
    .find(|l| *l as u32 == level)
}
