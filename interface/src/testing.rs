//! A module's test kit: the module run in-process behind a fake host, so
//! its glue (what it does with an event, a call, a command, a reload) is
//! tested with typed values and no server.
//!
//! [`TestHost`] is a real [`crate::abi::HostTable`] whose functions record
//! what the module does (events emitted, calls made, subscriptions, log
//! lines, tmp data) and answer its calls to other modules with closures
//! the test gives ([`TestHost::answer`]). [`TestModule`] drives one
//! instance through the same dispatch as the real glue
//! ([`crate::receive::Dispatch`]): create, table, init, `core:start`, then
//! events and calls one at a time, a reload that carries the stash.
//!
//! Owns: the fake host and its records. Does not own: threads or timing
//! (events are delivered when the test says: [`TestModule::emit`], and
//! the events the module emits to its own subscriptions with
//! [`TestModule::pump`]); the network's packets (typed helpers in
//! `buildat_network_api::testing` over this kit).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::c_void;
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};

use crate::abi::{self, ByteSink, HostTable, RawSlice, Status};
use crate::core_api::{CORE, RegisterCommand, RunCommand};
use crate::events::{Continue, Start};
use crate::module::{CallError, Host, Module, ModuleError, UnloadKind};
use crate::receive::Dispatch;
use crate::{Call, Event, payload};

type Answer = Box<dyn FnMut(&[u8]) -> Result<Vec<u8>, CallError> + Send>;

/// Everything the module did through its host, and how to answer it.
#[derive(Default)]
struct State {
    config: BTreeMap<String, String>,
    /// Answers by (module, function); module "" answers any module.
    answers: HashMap<(String, String), Arc<Mutex<Answer>>>,
    emitted: Vec<(String, Vec<u8>)>,
    /// How many of `emitted` were offered to the module by `pump`.
    pumped: usize,
    calls: Vec<(String, String, Vec<u8>)>,
    subscriptions: BTreeSet<String>,
    logs: Vec<(log::Level, String)>,
    tmp: HashMap<String, Vec<u8>>,
    shutdown: Option<(i32, String)>,
    shared: HashMap<u64, (Box<[u8]>, usize)>,
    next_shared: u64,
}

/// The fake host (see the [module docs](self)). Cheap to clone: clones
/// share the records.
#[derive(Clone)]
pub struct TestHost {
    state: Arc<Mutex<State>>,
    host: Host,
}

impl Default for TestHost {
    fn default() -> Self {
        Self::new()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// # Safety
/// `ctx` is the `Arc<Mutex<State>>` pointer [`TestHost::new`] leaked.
unsafe fn state<'a>(ctx: *const c_void) -> &'a Mutex<State> {
    // SAFETY: see fn docs; the leaked Arc is never freed.
    unsafe { &*ctx.cast::<Mutex<State>>() }
}

/// # Safety
/// The slice is valid for the call (the host table's contract).
unsafe fn text(slice: RawSlice) -> String {
    // SAFETY: see fn docs.
    String::from_utf8_lossy(unsafe { slice.as_bytes() }).into_owned()
}

unsafe extern "C" fn log(ctx: *const c_void, level: u32, message: RawSlice) {
    let level = abi::get_log_level(level).unwrap_or(log::Level::Error);
    // SAFETY: host table contract.
    let message = unsafe { text(message) };
    lock(unsafe { state(ctx) }).logs.push((level, message));
}

unsafe extern "C" fn emit_event(ctx: *const c_void, name: RawSlice, payload: RawSlice) -> Status {
    // SAFETY: host table contract.
    let (name, payload) = unsafe { (text(name), payload.as_bytes().to_vec()) };
    lock(unsafe { state(ctx) }).emitted.push((name, payload));
    abi::STATUS_OK
}

unsafe extern "C" fn sub_event(ctx: *const c_void, name: RawSlice) -> Status {
    // SAFETY: host table contract.
    let name = unsafe { text(name) };
    lock(unsafe { state(ctx) }).subscriptions.insert(name);
    abi::STATUS_OK
}

unsafe extern "C" fn unsub_event(ctx: *const c_void, name: RawSlice) -> Status {
    // SAFETY: host table contract.
    let name = unsafe { text(name) };
    lock(unsafe { state(ctx) }).subscriptions.remove(&name);
    abi::STATUS_OK
}

unsafe extern "C" fn call_module(
    ctx: *const c_void,
    module: RawSlice,
    function: RawSlice,
    payload: RawSlice,
    out: *const ByteSink,
) -> Status {
    // SAFETY: host table contract.
    let (module, function, payload) =
        unsafe { (text(module), text(function), payload.as_bytes().to_vec()) };
    // SAFETY: host table contract.
    let state = unsafe { state(ctx) };
    let answer = {
        let mut state = lock(state);
        state
            .calls
            .push((module.clone(), function.clone(), payload.clone()));
        state
            .answers
            .get(&(module.clone(), function.clone()))
            .or_else(|| state.answers.get(&(String::new(), function.clone())))
            .cloned()
    };
    // The answer runs without the records locked: it may look at them.
    let result = match answer {
        Some(answer) => (answer.lock().unwrap_or_else(|p| p.into_inner()))(&payload),
        None if module == CORE => core_answer(&function),
        None => Err(CallError::NotFound(format!(
            "the test host has no answer for {module}:{function}"
        ))),
    };
    let (status, bytes) = match result {
        Ok(bytes) => (abi::STATUS_OK, bytes),
        Err(error) => (error.status(), error.message().as_bytes().to_vec()),
    };
    // SAFETY: host table contract.
    if let Some(sink) = unsafe { out.as_ref() } {
        // SAFETY: as above.
        unsafe { sink.put(&bytes) };
    }
    status
}

/// What the core answers by default: registering a command and declaring
/// settings succeed (the records are [`TestHost::commands`] and
/// [`TestHost::calls`]).
fn core_answer(function: &str) -> Result<Vec<u8>, CallError> {
    if function == <RegisterCommand as Call>::FUNCTION
        || function == <crate::core_api::DeclareSettings as Call>::FUNCTION
    {
        return payload::encode(&()).map_err(|e| CallError::Failed(e.to_string()));
    }
    Err(CallError::NotFound(format!(
        "the test host has no answer for {CORE}:{function}"
    )))
}

unsafe extern "C" fn tmp_store_data(ctx: *const c_void, name: RawSlice, data: RawSlice) -> Status {
    // SAFETY: host table contract.
    let (name, data) = unsafe { (text(name), data.as_bytes().to_vec()) };
    lock(unsafe { state(ctx) }).tmp.insert(name, data);
    abi::STATUS_OK
}

unsafe extern "C" fn tmp_restore_data(
    ctx: *const c_void,
    name: RawSlice,
    out: *const ByteSink,
) -> Status {
    // SAFETY: host table contract.
    let name = unsafe { text(name) };
    let Some(data) = lock(unsafe { state(ctx) }).tmp.remove(&name) else {
        return abi::STATUS_NOT_FOUND;
    };
    // SAFETY: host table contract.
    if let Some(sink) = unsafe { out.as_ref() } {
        // SAFETY: as above.
        unsafe { sink.put(&data) };
    }
    abi::STATUS_OK
}

unsafe extern "C" fn shutdown(ctx: *const c_void, status: i32, reason: RawSlice) {
    // SAFETY: host table contract.
    let reason = unsafe { text(reason) };
    lock(unsafe { state(ctx) }).shutdown = Some((status, reason));
}

unsafe extern "C" fn get_config(ctx: *const c_void, key: RawSlice, out: *const ByteSink) -> Status {
    // SAFETY: host table contract.
    let key = unsafe { text(key) };
    let Some(value) = lock(unsafe { state(ctx) }).config.get(&key).cloned() else {
        return abi::STATUS_NOT_FOUND;
    };
    // SAFETY: host table contract.
    if let Some(sink) = unsafe { out.as_ref() } {
        // SAFETY: as above.
        unsafe { sink.put(value.as_bytes()) };
    }
    abi::STATUS_OK
}

unsafe extern "C" fn share_bytes(
    ctx: *const c_void,
    data: RawSlice,
    id: *mut u64,
    address: *mut *const u8,
) -> Status {
    // SAFETY: host table contract.
    let data: Box<[u8]> = unsafe { data.as_bytes() }.into();
    let mut state = lock(unsafe { state(ctx) });
    state.next_shared += 1;
    let new_id = state.next_shared;
    // SAFETY: the outputs are the caller's.
    unsafe {
        *id = new_id;
        *address = data.as_ptr();
    }
    // A boxed slice's bytes stay where they are while the box lives.
    state.shared.insert(new_id, (data, 1));
    abi::STATUS_OK
}

unsafe extern "C" fn acquire_bytes(
    ctx: *const c_void,
    id: u64,
    address: *mut *const u8,
    len: *mut usize,
) -> Status {
    let mut state = lock(unsafe { state(ctx) });
    let Some((data, references)) = state.shared.get_mut(&id) else {
        return abi::STATUS_NOT_FOUND;
    };
    *references += 1;
    // SAFETY: the outputs are the caller's.
    unsafe {
        *address = data.as_ptr();
        *len = data.len();
    }
    abi::STATUS_OK
}

unsafe extern "C" fn release_bytes(ctx: *const c_void, id: u64) -> Status {
    let mut state = lock(unsafe { state(ctx) });
    let Some((_, references)) = state.shared.get_mut(&id) else {
        return abi::STATUS_INVALID;
    };
    *references -= 1;
    if *references == 0 {
        state.shared.remove(&id);
    }
    abi::STATUS_OK
}

impl TestHost {
    /// A host with no configuration but the module's name (`test`) and no
    /// answers: every call the module makes fails with "no answer" until
    /// the test gives one (registering a command always succeeds).
    pub fn new() -> Self {
        let state = Arc::new(Mutex::new(State::default()));
        // The table and one reference to the state live as long as the test
        // process: a module may keep its `Host` in threads it leaks.
        let ctx = Arc::into_raw(Arc::clone(&state)).cast::<c_void>();
        let table: &'static HostTable = Box::leak(Box::new(HostTable {
            table_size: size_of::<HostTable>() as u32,
            abi_version: abi::ABI_VERSION,
            ctx,
            log,
            emit_event,
            sub_event,
            unsub_event,
            call_module,
            tmp_store_data,
            tmp_restore_data,
            shutdown,
            get_config,
            share_bytes,
            acquire_bytes,
            release_bytes,
        }));
        // SAFETY: the table is leaked, so valid for ever, and of this ABI.
        let host = unsafe { Host::from_raw(table) }.expect("the test host's table is of this ABI");
        let kit = Self { state, host };
        kit.config(crate::config::MODULE_NAME, "test")
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// The host handle a module gets.
    pub fn host(&self) -> Host {
        self.host
    }

    /// Sets a configuration value (`--set KEY=VALUE`, or a key of
    /// [`crate::config`]).
    pub fn config(self, key: &str, value: &str) -> Self {
        self.state()
            .config
            .insert(key.to_string(), value.to_string());
        self
    }

    /// Changes a configuration value while a module runs (an operator's
    /// `set`, before the core's [`crate::core_api::ApplySettings`]).
    pub fn set_config(&self, key: &str, value: &str) {
        self.state()
            .config
            .insert(key.to_string(), value.to_string());
    }

    /// The module's name (default `test`).
    pub fn name(self, name: &str) -> Self {
        self.config(crate::config::MODULE_NAME, name)
    }

    /// The world directory the module is told.
    pub fn world_path(self, path: &Path) -> Self {
        let path = path.to_string_lossy().into_owned();
        self.config(crate::config::WORLD_PATH, &path)
    }

    /// Answers the module's calls `C` defines (to `C::MODULE`) with `answer`.
    pub fn answer<C: Call>(
        &self,
        answer: impl FnMut(C) -> Result<C::Reply, ModuleError> + Send + 'static,
    ) -> &Self {
        self.answer_module(C::MODULE, answer)
    }

    /// Answers `C` addressed to `module` (a module chosen at run time); an
    /// empty `module` answers `C` addressed to any module.
    pub fn answer_module<C: Call>(
        &self,
        module: &str,
        mut answer: impl FnMut(C) -> Result<C::Reply, ModuleError> + Send + 'static,
    ) -> &Self {
        let raw: Answer = Box::new(move |bytes| {
            let args: C = payload::decode(bytes).map_err(|e| CallError::Invalid(e.to_string()))?;
            let reply = answer(args).map_err(|e| match e {
                ModuleError::Call(call) => call,
                other => CallError::Failed(other.to_string()),
            })?;
            payload::encode(&reply).map_err(|e| CallError::Failed(e.to_string()))
        });
        self.state().answers.insert(
            (module.to_string(), C::FUNCTION.to_string()),
            Arc::new(Mutex::new(raw)),
        );
        self
    }

    /// Every `E` the module emitted, in order.
    pub fn emitted<E: Event>(&self) -> Vec<E> {
        self.emitted_named(E::NAME)
    }

    /// Every event named `name` the module emitted, decoded as `T` (one
    /// that does not decode is a test failure).
    pub fn emitted_named<T: serde::de::DeserializeOwned>(&self, name: &str) -> Vec<T> {
        self.state()
            .emitted
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, bytes)| {
                payload::decode(bytes)
                    .unwrap_or_else(|e| panic!("event {name} the module emitted: {e}"))
            })
            .collect()
    }

    /// The names of every event emitted, in order.
    pub fn emitted_names(&self) -> Vec<String> {
        self.state()
            .emitted
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Every call `C` the module made (answered or not), in order.
    pub fn calls<C: Call>(&self) -> Vec<C> {
        self.state()
            .calls
            .iter()
            .filter(|(module, function, _)| {
                function == C::FUNCTION && (C::MODULE.is_empty() || module == C::MODULE)
            })
            .map(|(_, _, bytes)| {
                payload::decode(bytes)
                    .unwrap_or_else(|e| panic!("call {} the module made: {e}", C::FUNCTION))
            })
            .collect()
    }

    /// The commands the module registered with the core.
    pub fn commands(&self) -> Vec<RegisterCommand> {
        self.calls::<RegisterCommand>()
    }

    /// The events the module is subscribed to.
    pub fn subscriptions(&self) -> Vec<String> {
        self.state().subscriptions.iter().cloned().collect()
    }

    /// What the module logged through its host (`Host::log`; the `log`
    /// macros of a module loaded by a real host route there too).
    pub fn logs(&self) -> Vec<(log::Level, String)> {
        self.state().logs.clone()
    }

    /// The stop the module asked for, if it did.
    pub fn shutdown_requested(&self) -> Option<(i32, String)> {
        self.state().shutdown.clone()
    }

    /// Forgets what was emitted and called so far.
    pub fn clear(&self) {
        let mut state = self.state();
        state.emitted.clear();
        state.pumped = 0;
        state.calls.clear();
    }

    /// Loads `M` on this host: create, its table, init and `core:start`,
    /// then the events it emitted to itself.
    pub fn load<M: Module>(&self) -> Result<TestModule<M>, ModuleError> {
        self.start::<M>(Start::NAME)
    }

    /// Loads `M` as the version after a reload: `core:continue` instead of
    /// `core:start`, with whatever tmp data the host holds (what a test
    /// stored with [`Host::tmp_store_data`]: a previous version's stash).
    pub fn load_continued<M: Module>(&self) -> Result<TestModule<M>, ModuleError> {
        self.start::<M>(Continue::NAME)
    }

    fn start<M: Module>(&self, event: &str) -> Result<TestModule<M>, ModuleError> {
        let mut dispatch = Dispatch::<M>::create(self.host)?;
        dispatch.init()?;
        let mut module = TestModule {
            kit: self.clone(),
            dispatch: Some(dispatch),
        };
        module.deliver(event, &payload::encode(&Start {})?)?;
        module.pump()?;
        Ok(module)
    }
}

/// At most this many rounds of a module's events to itself in one `pump`
/// (a module that emits an event every time it handles one never settles).
const MAX_PUMP_ROUNDS: usize = 10_000;

/// One module instance on a [`TestHost`]. Unloaded (`ForGood`) on drop if
/// the test did not unload it.
pub struct TestModule<M: Module> {
    kit: TestHost,
    dispatch: Option<Dispatch<M>>,
}

impl<M: Module> TestModule<M> {
    fn dispatch(&mut self) -> &mut Dispatch<M> {
        self.dispatch
            .as_mut()
            .expect("the module is loaded until unload or reload")
    }

    /// The host it runs on (its records).
    pub fn kit(&self) -> &TestHost {
        &self.kit
    }

    /// The module's value, to inspect its state.
    pub fn module(&self) -> &M {
        self.dispatch
            .as_ref()
            .expect("the module is loaded until unload or reload")
            .module()
    }

    pub fn module_mut(&mut self) -> &mut M {
        self.dispatch().module_mut()
    }

    fn deliver(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        self.dispatch().event(name, payload)
    }

    /// Delivers `event` as the host would (an error if the module is not
    /// subscribed to it: what it subscribes to and what it handles must
    /// agree), then the events it emitted to itself.
    pub fn emit<E: Event>(&mut self, event: &E) -> Result<(), ModuleError> {
        self.emit_raw(E::NAME, &payload::encode(event)?)
    }

    /// Delivers the event `name` with `payload` (see [`Self::emit`]).
    pub fn emit_raw(&mut self, name: &str, payload: &[u8]) -> Result<(), ModuleError> {
        if !self.kit.state().subscriptions.contains(name) {
            return Err(ModuleError::msg(format!(
                "the module is not subscribed to {name}"
            )));
        }
        self.deliver(name, payload)?;
        self.pump()
    }

    /// Delivers the events the module emitted that it is itself subscribed
    /// to (as the bus would), until there are none left.
    pub fn pump(&mut self) -> Result<(), ModuleError> {
        for _ in 0..MAX_PUMP_ROUNDS {
            let next = {
                let mut state = self.kit.state();
                let start = state.pumped;
                let found = state.emitted[start..]
                    .iter()
                    .position(|(name, _)| state.subscriptions.contains(name));
                match found {
                    Some(offset) => {
                        state.pumped = start + offset + 1;
                        Some(state.emitted[start + offset].clone())
                    }
                    None => {
                        state.pumped = state.emitted.len();
                        None
                    }
                }
            };
            let Some((name, payload)) = next else {
                return Ok(());
            };
            self.deliver(&name, &payload)?;
        }
        Err(ModuleError::msg(format!(
            "the module kept emitting events to itself ({MAX_PUMP_ROUNDS} rounds)"
        )))
    }

    /// Makes the call `args` defines on the module; its reply.
    pub fn call<C: Call>(&mut self, args: &C) -> Result<C::Reply, ModuleError> {
        let bytes = self.dispatch().call(C::FUNCTION, &payload::encode(args)?)?;
        let reply = payload::decode(&bytes)?;
        self.pump()?;
        Ok(reply)
    }

    /// Runs the command `name` with `args`, as a player `by` (chat) or the
    /// console (`None`); the reply the console would print.
    pub fn command(
        &mut self,
        name: &str,
        args: &[&str],
        by: Option<&str>,
    ) -> Result<String, ModuleError> {
        self.call(&RunCommand {
            name: name.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            by: by.map(str::to_string),
        })
    }

    /// Unloads the module (`kind`) and drops it.
    pub fn unload(mut self, kind: UnloadKind) -> Result<(), ModuleError> {
        let mut dispatch = self.dispatch.take().expect("loaded");
        dispatch.unload(kind)
    }

    /// Reloads it as `N` (the same type, or its next version in a test):
    /// unload for a reload, a new instance, `core:continue` with the
    /// stash carried over.
    pub fn reload<N: Module>(mut self) -> Result<TestModule<N>, ModuleError> {
        let mut dispatch = self.dispatch.take().expect("loaded");
        dispatch.unload(UnloadKind::Reload)?;
        drop(dispatch);
        self.kit.state().subscriptions.clear();
        self.kit.start::<N>(Continue::NAME)
    }
}

impl<M: Module> Drop for TestModule<M> {
    fn drop(&mut self) {
        if let Some(mut dispatch) = self.dispatch.take() {
            let _ = dispatch.unload(UnloadKind::ForGood);
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;
    use crate::Receive;
    use crate::events::Tick;
    use crate::settings::Settings;

    /// A call of another module the test answers.
    #[derive(Serialize, Deserialize)]
    struct Double(u32);
    crate::calls! { module "doubler"; Double = "double" -> u32; }

    /// A call the counter answers.
    #[derive(Serialize, Deserialize)]
    struct GetCount {}
    crate::calls! { module "counter"; GetCount = "get_count" -> u64; }

    #[derive(Serialize, Deserialize, Debug, PartialEq)]
    struct Counted {
        count: u64,
    }
    impl Event for Counted {
        const NAME: &'static str = "counter:counted";
    }

    #[derive(Serialize, Deserialize)]
    struct CounterStash {
        count: u64,
    }
    impl crate::Stash for CounterStash {
        const LAYOUT: u32 = 1;
    }

    #[derive(clap::Parser)]
    #[command(name = "add", about = "Adds to the count")]
    struct Add {
        /// How much.
        amount: u64,
    }

    crate::settings! {
        /// The counter's settings.
        struct CounterSettings in "counter" {
            /// Added by each tick.
            step: u64 = 1,
        }
    }

    struct Counter {
        host: Host,
        count: u64,
        step: u64,
    }

    impl Module for Counter {
        fn create(host: Host) -> Result<Self, ModuleError> {
            let step = CounterSettings::read(&host)?.step;
            Ok(Self {
                host,
                count: 0,
                step,
            })
        }

        fn receive(table: &mut Receive<Self>) {
            table
                .event(|counter, tick: Tick| {
                    counter.count += (tick.dtime * 10.0) as u64 * counter.step;
                    counter.host.emit(&Counted {
                        count: counter.count,
                    })
                })
                .call(|counter, _: GetCount| Ok(counter.count))
                .settings::<CounterSettings>()
                .command(Some("server"), |counter, by, add: Add| {
                    let doubled = counter.host.call(&Double(add.amount as u32))?;
                    counter.count += u64::from(doubled);
                    Ok(format!("{} by {by:?}", counter.count))
                })
                .stash(
                    |counter| CounterStash {
                        count: counter.count,
                    },
                    |counter, stash| {
                        counter.count = stash.count;
                        Ok(())
                    },
                );
        }
    }

    #[test]
    fn a_module_runs_on_the_kit_from_its_table() {
        let kit = TestHost::new();
        kit.answer(|Double(n)| Ok(n * 2));
        let mut counter = kit.load::<Counter>().unwrap();
        assert_eq!(kit.subscriptions(), vec![Tick::NAME.to_string()]);
        let registered = kit.commands();
        assert_eq!(registered.len(), 1);
        assert_eq!(registered[0].name, "add");
        assert_eq!(registered[0].usage, "<AMOUNT>");
        assert_eq!(registered[0].help, "Adds to the count");
        assert_eq!(registered[0].privilege.as_deref(), Some("server"));
        let declared = kit.calls::<crate::core_api::DeclareSettings>();
        assert_eq!(declared.len(), 1);
        assert_eq!(declared[0].settings[0].key, "counter.step");

        counter.emit(&Tick { dtime: 0.5 }).unwrap();
        assert_eq!(kit.emitted::<Counted>(), vec![Counted { count: 5 }]);
        assert_eq!(counter.call(&GetCount {}).unwrap(), 5);
        assert_eq!(
            counter.command("add", &["3"], Some("ann")).unwrap(),
            "11 by Some(\"ann\")"
        );
        assert_eq!(kit.calls::<Double>().len(), 1);

        // Words that do not parse get clap's message, naming the usage.
        let error = counter.command("add", &["many"], None).unwrap_err();
        assert!(
            matches!(error, ModuleError::Usage(ref text) if text.contains("<AMOUNT>")),
            "{error}"
        );
        // An event it does not subscribe to is refused by the kit.
        let error = counter.emit(&Counted { count: 1 }).unwrap_err();
        assert!(error.to_string().contains("not subscribed"), "{error}");
        // A payload that does not decode is refused in one place, named.
        let error = counter.emit_raw(Tick::NAME, &[1, 2]).unwrap_err();
        assert!(
            error.to_string().starts_with("malformed event core:tick"),
            "{error}"
        );

        // The count survives a reload through the table's stash, and the
        // new version registers its commands again.
        let mut counter = counter.reload::<Counter>().unwrap();
        assert_eq!(counter.module().count, 11);
        assert_eq!(kit.commands().len(), 2);
        assert_eq!(counter.call(&GetCount {}).unwrap(), 11);
    }

    crate::settings! {
        /// A greeter's settings: one live, one read at start.
        struct GreeterSettings in "greeter" {
            /// Said to each comer.
            #[live]
            greeting: String = "hello".to_string(),
            /// Read at start only.
            loud: bool = false,
        }
    }

    struct Greeter {
        greeting: String,
        loud: bool,
    }

    impl Module for Greeter {
        fn create(host: Host) -> Result<Self, ModuleError> {
            let settings = GreeterSettings::read(&host)?;
            Ok(Self {
                greeting: settings.greeting,
                loud: settings.loud,
            })
        }

        fn receive(table: &mut Receive<Self>) {
            table.live_settings(|greeter, settings: GreeterSettings, keys| {
                if settings.greeting.is_empty() {
                    return Err(ModuleError::msg("greeter.greeting: say something"));
                }
                greeter.greeting = settings.greeting;
                Ok(format!("greeting now (changed: {})", keys.join(",")))
            });
        }
    }

    #[test]
    fn live_settings_are_declared_live_and_applied_on_the_cores_call() {
        use crate::core_api::ApplySettings;
        let kit = TestHost::new();
        let mut greeter = kit.load::<Greeter>().unwrap();
        let declared = kit.calls::<crate::core_api::DeclareSettings>();
        let live: Vec<(&str, bool)> = declared[0]
            .settings
            .iter()
            .map(|s| (s.key.as_str(), s.live))
            .collect();
        assert_eq!(live, [("greeter.greeting", true), ("greeter.loud", false)]);

        let apply = ApplySettings {
            namespace: "greeter".into(),
            keys: vec!["greeter.greeting".into()],
        };
        kit.set_config("greeter.greeting", "welcome");
        kit.set_config("greeter.loud", "true");
        let reply = greeter.call(&apply).unwrap();
        assert_eq!(reply, "greeting now (changed: greeter.greeting)");
        assert_eq!(greeter.module().greeting, "welcome");
        assert!(
            !greeter.module().loud,
            "what is not live waits for a reload"
        );

        // Refused late (by the module) or not of its type: the old value stays.
        kit.set_config("greeter.greeting", "");
        let error = greeter.call(&apply).unwrap_err();
        assert!(error.to_string().contains("say something"), "{error}");
        kit.set_config("greeter.greeting", "hi");
        kit.set_config("greeter.loud", "very");
        let error = greeter.call(&apply).unwrap_err();
        assert!(error.to_string().contains("greeter.loud"), "{error}");
        assert_eq!(greeter.module().greeting, "welcome");

        // A namespace with no live handler is refused, naming it.
        let error = greeter
            .call(&ApplySettings {
                namespace: "other".into(),
                keys: vec![],
            })
            .unwrap_err();
        assert!(error.to_string().contains("next reload"), "{error}");
    }

    #[test]
    fn settings_declared_without_a_live_handler_are_not_live() {
        struct Plain;
        impl Module for Plain {
            fn create(_: Host) -> Result<Self, ModuleError> {
                Ok(Self)
            }
            fn receive(table: &mut Receive<Self>) {
                table.settings::<GreeterSettings>();
            }
        }
        let kit = TestHost::new();
        let _plain = kit.load::<Plain>().unwrap();
        let declared = kit.calls::<crate::core_api::DeclareSettings>();
        assert!(declared[0].settings.iter().all(|s| !s.live), "{declared:?}");
    }

    #[test]
    fn an_unanswered_call_fails_and_is_recorded() {
        let kit = TestHost::new();
        let mut counter = kit.load::<Counter>().unwrap();
        let error = counter.command("add", &["1"], None).unwrap_err();
        assert!(
            error.to_string().contains("no answer for doubler:double"),
            "{error}"
        );
        assert_eq!(kit.calls::<Double>().len(), 1);
    }

    /// A module without a table: what it subscribes to by hand reaches
    /// `Module::event`, its calls `Module::call` (the fallback).
    struct Plain {
        host: Host,
        seen: Vec<String>,
    }

    impl Module for Plain {
        fn create(host: Host) -> Result<Self, ModuleError> {
            Ok(Self {
                host,
                seen: Vec::new(),
            })
        }

        fn init(&mut self) -> Result<(), ModuleError> {
            Ok(self.host.sub_event(Tick::NAME)?)
        }

        fn event(&mut self, name: &str, _: &[u8]) -> Result<(), ModuleError> {
            self.seen.push(name.to_string());
            Ok(())
        }

        fn call(&mut self, function: &str, _: &[u8]) -> Result<Vec<u8>, ModuleError> {
            match function {
                "get_count" => Ok(payload::encode(&(self.seen.len() as u64))?),
                other => Err(ModuleError::UnknownFunction(other.to_string())),
            }
        }
    }

    #[test]
    fn without_a_table_events_and_calls_fall_back_to_the_module() {
        let kit = TestHost::new();
        let mut plain = kit.load::<Plain>().unwrap();
        plain.emit(&Tick { dtime: 0.1 }).unwrap();
        assert_eq!(plain.module().seen, [Start::NAME, Tick::NAME]);
        assert_eq!(plain.call(&GetCount {}).unwrap(), 2);
        let error = plain.command("add", &["1"], None).unwrap_err();
        assert!(
            matches!(error, ModuleError::UnknownFunction(ref f) if f == RunCommand::FUNCTION),
            "{error}"
        );
    }
}
