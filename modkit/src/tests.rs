//! The modkit's own tests, on the test kit and [`crate::testing::TestWorld`].

use buildat_active_api::{RegisterAbm, SetTimers, VoxelTimer};
use buildat_interface::events::{ModuleLoaded, Tick};
use buildat_interface::testing::TestHost;
use buildat_interface::{ModuleError, UnloadKind};
use buildat_main_api::ChatLine;
use buildat_network_api::receive::testing::sent;
use buildat_voxelworld_api::{CreateNodes, MoveNodes, RemoveNodes, VoxelChange, VoxelsChanged};

use crate::prelude::*;
use crate::testing::TestWorld;

settings! {
    /// The greeter's settings.
    pub struct GreeterSettings in "test" {
        /// What it says.
        pub greeting: String = "hello".to_string(),
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Greeter {
    count: u64,
}

impl Mod for Greeter {
    fn setup(m: &mut Setup<Self>) {
        m.settings::<GreeterSettings>();
        m.command("hello", "Greets you", Some("interact"), |s, ctx, args| {
            s.count += 1;
            let greeting = ctx.settings::<GreeterSettings>()?.greeting;
            let to = ctx.player().unwrap_or("console").to_string();
            Ok(format!("{greeting} {to} #{} {args:?}", s.count))
        });
    }
}

/// The same state under another type: another layout.
#[derive(Default, Serialize, Deserialize)]
struct Renamed {
    count: u64,
}

impl Mod for Renamed {
    fn setup(_: &mut Setup<Self>) {}
}

#[test]
fn a_command_counts_across_a_reload_with_its_setting() {
    let world = TestWorld::on(TestHost::new().config("test.greeting", "hi"));
    let kit = world.kit().clone();
    let mut m = world.load::<Greeter>().unwrap();
    let registered = kit.commands();
    assert_eq!(registered.len(), 1);
    assert_eq!(registered[0].name, "hello");
    assert_eq!(registered[0].privilege.as_deref(), Some("interact"));
    assert_eq!(world.declared()[0].namespace, "test");
    assert_eq!(
        m.command("hello", &["x"], Some("ann")).unwrap(),
        "hi ann #1 [\"x\"]"
    );
    assert_eq!(m.command("hello", &[], None).unwrap(), "hi console #2 []");

    let mut m = m.reload::<Modkit<Greeter>>().unwrap();
    assert_eq!(m.module().state().count, 2, "the state is kept");
    assert_eq!(kit.commands().len(), 2, "registered again");
    assert_eq!(m.command("hello", &[], None).unwrap(), "hi console #3 []");

    // A state of another type is not misread: the new one starts fresh.
    let m = m.reload::<Modkit<Renamed>>().unwrap();
    assert_eq!(m.module().state().count, 0);
    assert!(
        kit.logs()
            .iter()
            .any(|(_, line)| line.contains("another layout")),
        "{:?}",
        kit.logs()
    );
}

#[test]
fn a_bad_setting_fails_the_start_naming_it() {
    let world = TestWorld::on(TestHost::new().config("test.greeting", "hi"));
    assert!(world.load::<Greeter>().is_ok());
    #[derive(Default, Serialize, Deserialize)]
    struct Strict;
    settings! {
        struct StrictSettings in "strict" {
            /// A number.
            pub n: u32 = 1,
        }
    }
    impl Mod for Strict {
        fn setup(m: &mut Setup<Self>) {
            m.settings::<StrictSettings>();
        }
    }
    let world = TestWorld::on(TestHost::new().config("strict.n", "many"));
    let error = world.load::<Strict>().err().expect("refused");
    assert!(error.to_string().contains("strict.n"), "{error}");
}

/// A block that puts a torch on itself, counts digs and tells who touched it.
#[derive(Default, Serialize, Deserialize)]
struct Bouncer {
    dug: u32,
    touched_by: Vec<String>,
}

impl Mod for Bouncer {
    fn setup(m: &mut Setup<Self>) {
        m.block(BlockDefinition::simple("bouncer", "bouncer.png"))
            .on_place(|_, ctx, [x, y, z]| ctx.set_voxel([x, y + 1, z], "torch").map(drop))
            .on_dig(|s, _, _| {
                s.dug += 1;
                Ok(())
            })
            .on_touch(|s, ctx, _| {
                s.touched_by
                    .push(ctx.player().unwrap_or("nobody").to_string());
                Ok(())
            });
    }
}

#[test]
fn a_placed_block_changes_the_voxel_above_and_hears_digs_and_touches() {
    let world = TestWorld::new();
    world.fill([-2, 0, -2], [2, 0, 2], "stone");
    let mut m = world.load::<Bouncer>().unwrap();
    assert_eq!(
        world.kit().subscriptions(),
        vec!["voxelworld:special/test".to_string()]
    );
    world
        .place(&mut m, [0, 1, 0], "bouncer", Some("ann"))
        .unwrap();
    assert_eq!(world.voxel([0, 2, 0]).as_deref(), Some("torch"));
    let edits = world.edits();
    assert_eq!(edits.len(), 1, "{edits:?}");
    assert_eq!(edits[0].pos, [0, 2, 0]);
    assert_eq!(edits[0].voxel, world.id("torch"));
    assert_eq!(
        edits[0].by.as_deref(),
        Some("test (module)"),
        "the rollback log names the module"
    );
    // Its own torch touched it (a module's edit: nobody).
    assert_eq!(m.module().state().touched_by, ["nobody"]);

    world.dig(&mut m, [1, 1, 0], Some("bob")).unwrap();
    world.place(&mut m, [1, 1, 0], "dirt", Some("bob")).unwrap();
    assert_eq!(m.module().state().touched_by, ["nobody", "bob"]);
    world.dig(&mut m, [0, 1, 0], Some("ann")).unwrap();
    assert_eq!(m.module().state().dug, 1);
    assert_eq!(world.edits().len(), 1, "nothing more edited");
}

/// A lever: using it switches a torch above it on and off; a punch is
/// remembered with who punched, and fails on the lever's second punch.
#[derive(Default, Serialize, Deserialize)]
struct Lever {
    on: bool,
    punched_by: Vec<String>,
}

impl Mod for Lever {
    fn setup(m: &mut Setup<Self>) {
        m.block(BlockDefinition::simple("lever", "lever.png"))
            .on_use(|s, ctx, [x, y, z]| {
                s.on = !s.on;
                ctx.set_voxel([x, y + 1, z], if s.on { "torch" } else { "air" })
            })
            .on_punch(|s, ctx, _| {
                s.punched_by
                    .push(ctx.player().unwrap_or("nobody").to_string());
                if s.punched_by.len() > 1 {
                    return Err(ModuleError::msg("the lever is stuck"));
                }
                Ok(())
            });
    }
}

#[test]
fn using_and_punching_a_block_run_its_closures_with_the_player() {
    let world = TestWorld::new();
    let kit = world.kit().clone();
    let mut m = world.load::<Lever>().unwrap();
    let mut subscribed = kit.subscriptions();
    subscribed.sort();
    assert_eq!(
        subscribed,
        ["main:block_action/test", "voxelworld:special/test"]
    );
    world
        .place(&mut m, [0, 1, 0], "lever", Some("ann"))
        .unwrap();

    world.use_block(&mut m, [0, 1, 0], "ann").unwrap();
    assert!(m.module().state().on);
    assert_eq!(world.voxel([0, 2, 0]).as_deref(), Some("torch"));
    world.use_block(&mut m, [0, 1, 0], "bob").unwrap();
    assert_eq!(world.voxel([0, 2, 0]).as_deref(), Some("air"), "off again");

    world.punch(&mut m, [0, 1, 0], "bob").unwrap();
    assert_eq!(m.module().state().punched_by, ["bob"]);
    assert_eq!(m.module().ctx.player(), None, "only while it runs");

    // A voxel of another block (or of none) is not the lever's business.
    world.fill([1, 1, 0], [1, 1, 0], "stone");
    world.punch(&mut m, [1, 1, 0], "ann").unwrap();
    world.use_block(&mut m, [5, 5, 5], "ann").unwrap();
    assert_eq!(m.module().state().punched_by, ["bob"]);
    assert!(!m.module().state().on);

    // A closure's error is logged, naming the block and what happened.
    world.punch(&mut m, [0, 1, 0], "ann").unwrap();
    assert!(
        kit.logs()
            .iter()
            .any(|(_, line)| line == "lever punched at [0, 1, 0]: the lever is stuck"),
        "{:?}",
        kit.logs()
    );
}

/// An entity walking a circle of 3 voxels around where it was made.
#[derive(Default, Serialize, Deserialize)]
struct Circler;

impl Mod for Circler {
    fn setup(m: &mut Setup<Self>) {
        m.entity("circler", |_, _, e, _| {
            let angle = e.age;
            e.position = [
                e.home[0] + 3.0 * angle.cos(),
                e.home[1],
                e.home[2] + 3.0 * angle.sin(),
            ];
            Ok(())
        });
    }
}

fn tick(m: &mut buildat_interface::testing::TestModule<Modkit<Circler>>) {
    m.emit(&Tick { dtime: 0.25 }).unwrap();
}

#[test]
fn an_entity_is_made_at_spawn_and_moves_every_tick_in_one_call() {
    let world = TestWorld::new();
    world.set_spawn(None);
    let kit = world.kit().clone();
    let mut m = world.load::<Circler>().unwrap();
    tick(&mut m);
    assert!(kit.calls::<CreateNodes>().is_empty(), "no spawn point yet");
    world.set_spawn(Some([0.5, 5.0, 0.5]));
    for _ in 0..4 {
        tick(&mut m);
    }
    let made = kit.calls::<CreateNodes>();
    assert_eq!(made.len(), 1, "looked again after a second");
    assert_eq!(made[0].nodes[0].position, [0.5, 5.0, 0.5]);
    assert_eq!(made[0].nodes[0].vars["entity"], b"circler");
    let moves = kit.calls::<MoveNodes>();
    assert!(!moves.is_empty());
    assert!(moves.iter().all(|m| m.moves.len() == 1), "one call a tick");
    let node = world
        .nodes()
        .into_iter()
        .find(|n| n.vars.contains_key("entity"))
        .unwrap();
    let age = m.module().entities()[0].age;
    assert!((node.position[0] - (0.5 + 3.0 * age.cos())).abs() < 1e-9);
    assert!((node.position[2] - (0.5 + 3.0 * age.sin())).abs() < 1e-9);

    // Kept over a reload: the same node moves on.
    let mut m = m.reload::<Modkit<Circler>>().unwrap();
    assert_eq!(m.module().entities().len(), 1);
    assert_eq!(m.module().entities()[0].id, node.id);
    tick(&mut m);
    assert_eq!(kit.calls::<CreateNodes>().len(), 1, "none made again");

    // A node the world lost is made again.
    world.lose_node(node.id);
    for _ in 0..5 {
        tick(&mut m);
    }
    assert_eq!(kit.calls::<CreateNodes>().len(), 2);
    let id = m.module().entities()[0].id;
    assert_ne!(id, node.id);

    // Unloaded for good: its node goes.
    m.unload(UnloadKind::ForGood).unwrap();
    assert_eq!(kit.calls::<RemoveNodes>().last().unwrap().ids, [id]);
}

#[derive(Default, Serialize, Deserialize)]
struct Crier;

impl Mod for Crier {
    fn setup(m: &mut Setup<Self>) {
        m.command("cry", "Tells everyone", None, |_, ctx, args| {
            let told = ctx.announce(&args.join(" "))?;
            let ann = ctx.tell("ANN", "psst")?;
            Ok(format!("{told} {ann}"))
        });
    }
}

#[test]
fn chat_reaches_one_player_or_every_player() {
    let world = TestWorld::new();
    world.join("ann", 7);
    world.join("bob", 8);
    let mut m = world.load::<Crier>().unwrap();
    assert_eq!(m.command("cry", &["hi", "all"], None).unwrap(), "2 true");
    let lines: Vec<(u64, String)> = sent::<ChatLine>(world.kit())
        .into_iter()
        .map(|(peer, line)| (peer, line.text))
        .collect();
    assert_eq!(
        lines,
        [
            (7, "hi all".to_string()),
            (8, "hi all".to_string()),
            (7, "psst".to_string())
        ]
    );
}

#[test]
fn an_unknown_block_name_is_an_error_naming_it() {
    #[derive(Default, Serialize, Deserialize)]
    struct Wrong;
    impl Mod for Wrong {
        fn setup(m: &mut Setup<Self>) {
            m.command("wrong", "", None, |_, ctx, _| {
                ctx.set_voxel([0, 0, 0], "unobtainium")?;
                Ok(String::new())
            });
        }
    }
    let world = TestWorld::new();
    let mut m = world.load::<Wrong>().unwrap();
    let error: ModuleError = m.command("wrong", &[], None).unwrap_err();
    assert!(error.to_string().contains("unobtainium"), "{error}");
}

#[derive(clap::Parser)]
#[command(name = "jump", about = "Jumps")]
struct Jump {
    /// How high.
    height: u32,
}

#[derive(Default, Serialize, Deserialize)]
struct Jumper;

impl Mod for Jumper {
    fn setup(m: &mut Setup<Self>) {
        m.command_args(None, |_, _, jump: Jump| Ok(format!("up {}", jump.height)));
    }
}

#[test]
fn a_typed_command_takes_its_name_usage_and_help_from_its_definition() {
    let world = TestWorld::new();
    let mut m = world.load::<Jumper>().unwrap();
    let registered = &world.kit().commands()[0];
    assert_eq!(
        (registered.name.as_str(), registered.usage.as_str()),
        ("jump", "<HEIGHT>")
    );
    assert_eq!(registered.help, "Jumps");
    assert_eq!(m.command("jump", &["3"], None).unwrap(), "up 3");
    let error = m.command("jump", &["high"], None).unwrap_err();
    assert!(
        matches!(error, ModuleError::Usage(ref text) if text.contains("<HEIGHT>")),
        "{error}"
    );
}

#[derive(Default, Serialize, Deserialize)]
struct Stumbler;

impl Mod for Stumbler {
    fn setup(m: &mut Setup<Self>) {
        m.entity("stumbler", |_, _, e, _| {
            e.position[1] += 1.0;
            Err::<(), _>(ModuleError::msg("tripped"))
        })
        .keep(2);
    }
}

#[test]
fn an_entity_whose_step_fails_every_tick_is_logged_a_few_times() {
    let world = TestWorld::new();
    let kit = world.kit().clone();
    let mut m = world.load::<Stumbler>().unwrap();
    for _ in 0..40 {
        m.emit(&Tick { dtime: 0.1 })
            .expect("the tick itself goes on");
    }
    let warned = kit
        .logs()
        .into_iter()
        .filter(|(_, line)| line.contains("tripped"))
        .count();
    assert_eq!(warned, 3, "{:?}", kit.logs());
    assert_eq!(m.module().entities().len(), 2);
    assert!(
        kit.calls::<MoveNodes>().is_empty(),
        "a failed step moves nothing"
    );
}

/// Counts the voxels any commit changed (a typed event) and the sizes a
/// neighbour module announces (a named one), failing on a size of 0.
#[derive(Default, Serialize, Deserialize)]
struct Listener {
    changed: usize,
    by: Vec<String>,
    sizes: Vec<u32>,
    raw: Vec<usize>,
}

#[derive(Serialize, Deserialize)]
struct Size {
    size: u32,
}

impl Mod for Listener {
    fn setup(m: &mut Setup<Self>) {
        m.on_event(|s, _, changed: VoxelsChanged| {
            s.changed += changed.changes.len();
            s.by.extend(changed.changes.into_iter().filter_map(|c| c.by));
            Ok(())
        });
        m.on_event_named("other:size/test", |s, _, size: Size| {
            if size.size == 0 {
                return Err(ModuleError::msg("a size of nothing"));
            }
            s.sizes.push(size.size);
            Ok(())
        });
        m.on_event_raw("other:bytes", |s, _, bytes| {
            s.raw.push(bytes.len());
            Ok(())
        });
    }
}

#[test]
fn any_event_reaches_its_closure_typed_named_or_raw() {
    let world = TestWorld::new();
    let kit = world.kit().clone();
    let mut m = world.load::<Listener>().unwrap();
    let mut subscribed = kit.subscriptions();
    subscribed.sort();
    assert_eq!(
        subscribed,
        [
            "other:bytes",
            "other:size/test",
            "voxelworld:voxels_changed"
        ]
    );
    let change = VoxelChange {
        pos: [1, 2, 3],
        was: 0,
        now: world.id("stone"),
        by: Some("ann".into()),
    };
    m.emit(&VoxelsChanged {
        changes: vec![change.clone(), change],
        untold: 0,
    })
    .unwrap();
    assert_eq!(m.module().state().changed, 2);
    assert_eq!(m.module().state().by, ["ann", "ann"]);

    let size = |n| buildat_interface::encode(&Size { size: n }).unwrap();
    m.emit_raw("other:size/test", &size(4)).unwrap();
    m.emit_raw("other:bytes", &[1, 2, 3]).unwrap();
    assert_eq!(m.module().state().sizes, [4]);
    assert_eq!(m.module().state().raw, [3]);

    // A closure's error is logged (the event handled); a payload that does
    // not decode is refused, naming the event.
    m.emit_raw("other:size/test", &size(0)).unwrap();
    assert!(
        kit.logs()
            .iter()
            .any(|(_, line)| line == "on_event other:size/test: a size of nothing"),
        "{:?}",
        kit.logs()
    );
    let error = m.emit_raw("other:size/test", &[]).unwrap_err();
    assert!(error.to_string().contains("other:size/test"), "{error}");
    assert_eq!(m.module().state().sizes, [4]);
}

#[test]
#[should_panic(expected = "takes the event 'voxelworld:voxels_changed' twice")]
fn an_event_taken_twice_is_refused_naming_it() {
    #[derive(Default, Serialize, Deserialize)]
    struct Twice;
    impl Mod for Twice {
        fn setup(m: &mut Setup<Self>) {
            m.on_event(|_, _, _: VoxelsChanged| Ok(()));
            m.on_event(|_, _, _: VoxelsChanged| Ok(()));
        }
    }
    let _ = TestWorld::new().load::<Twice>();
}

/// Dirt beside grass turns green (an ABM); a bomb vanishes 5 s after it
/// is placed (a voxel timer).
#[derive(Default, Serialize, Deserialize)]
struct Garden {
    greened: usize,
    late: Vec<f64>,
}

impl Mod for Garden {
    fn setup(m: &mut Setup<Self>) {
        m.on_start(|_, ctx| ctx.register_abm("test:green", &["dirt"], &["grass"], 2.0, 3));
        m.on_abm("test:green", |s, ctx, found| {
            s.greened += found.len();
            for &(pos, _) in found {
                ctx.set_voxel(pos, "grass")?;
            }
            Ok(())
        });
        m.block(BlockDefinition::simple("bomb", "bomb.png"))
            .on_place(|_, ctx, pos| ctx.set_timer(pos, 5.0, "boom"));
        m.on_timer("boom", |s, ctx, timer| {
            s.late.push(timer.late_seconds);
            ctx.set_voxel(timer.pos, "air")
        });
    }
}

#[test]
fn an_abm_registered_on_start_gets_its_batches() {
    let world = TestWorld::new();
    let kit = world.kit().clone();
    world.fill([0, 0, 0], [3, 0, 0], "dirt");
    world.fill([-1, 0, 0], [-1, 0, 0], "grass");
    let mut m = world.load::<Garden>().unwrap();
    assert!(kit.subscriptions().contains(&"active:abm/test".to_string()));
    let abms = world.abms();
    assert_eq!(abms.len(), 1);
    let abm = &abms[0];
    assert_eq!(
        (abm.name.as_str(), abm.module.as_str()),
        ("test:green", "test")
    );
    assert_eq!(
        (abm.nodes.clone(), abm.neighbours.clone()),
        (vec!["dirt".into()], vec!["grass".into()])
    );
    assert_eq!((abm.interval_seconds, abm.chance), (2.0, 3));

    // Only the dirt beside the grass, one further each round.
    assert_eq!(world.run_abm(&mut m, "test:green").unwrap(), 1);
    assert_eq!(world.voxel([0, 0, 0]).as_deref(), Some("grass"));
    assert_eq!(world.voxel([1, 0, 0]).as_deref(), Some("dirt"));
    assert_eq!(world.run_abm(&mut m, "test:green").unwrap(), 1);
    assert_eq!(world.run_abm(&mut m, "test:green").unwrap(), 1);
    assert_eq!(world.run_abm(&mut m, "test:green").unwrap(), 1);
    assert_eq!(world.run_abm(&mut m, "test:green").unwrap(), 0);
    assert_eq!(world.voxel([3, 0, 0]).as_deref(), Some("grass"));
    assert_eq!(m.module().state().greened, 4);
}

#[test]
fn a_voxel_timer_fires_once_after_its_seconds_unless_its_voxel_was_replaced() {
    let world = TestWorld::new();
    let kit = world.kit().clone();
    let mut m = world.load::<Garden>().unwrap();
    assert!(
        kit.subscriptions()
            .contains(&"active:timers/test".to_string())
    );
    world.place(&mut m, [0, 1, 0], "bomb", Some("ann")).unwrap();
    world.place(&mut m, [5, 1, 0], "bomb", Some("ann")).unwrap();
    assert_eq!(
        world.timers("test"),
        [
            ([0, 1, 0], "boom".to_string(), 5.0),
            ([5, 1, 0], "boom".to_string(), 5.0)
        ]
    );
    // One is replaced before it fires: its timer goes with it.
    world.fill([5, 1, 0], [5, 1, 0], "stone");
    assert_eq!(world.pass(&mut m, 3.0).unwrap(), 0);
    assert_eq!(world.voxel([0, 1, 0]).as_deref(), Some("bomb"));
    assert_eq!(world.pass(&mut m, 3.0).unwrap(), 1, "late by a second");
    assert_eq!(world.voxel([0, 1, 0]).as_deref(), Some("air"));
    assert_eq!(world.voxel([5, 1, 0]).as_deref(), Some("stone"));
    assert_eq!(m.module().state().late, [1.0]);
    assert!(world.timers("test").is_empty(), "each fires once");
    assert_eq!(world.pass(&mut m, 10.0).unwrap(), 0);

    // A tag without a closure is logged, naming it.
    kit.host()
        .call(&SetTimers {
            module: "test".into(),
            timers: vec![VoxelTimer {
                pos: [5, 1, 0],
                seconds: 1.0,
                tag: "fizz".into(),
            }],
        })
        .unwrap();
    assert_eq!(world.pass(&mut m, 1.0).unwrap(), 1);
    assert!(
        kit.logs()
            .iter()
            .any(|(_, line)| line == "on_timer fizz at [5, 1, 0]: no closure for this tag"),
        "{:?}",
        kit.logs()
    );
}

#[test]
fn without_the_active_module_abms_and_timers_are_declined_not_failed() {
    #[derive(Default, Serialize, Deserialize)]
    struct Hopeful;
    impl Mod for Hopeful {
        fn setup(m: &mut Setup<Self>) {
            m.command("try", "", None, |_, ctx, _| {
                let abm = ctx.register_abm("test:x", &["dirt"], &[], 1.0, 1)?;
                let timer = ctx.set_timer([0, 0, 0], 1.0, "x")?;
                let left = ctx.timer_left([0, 0, 0])?;
                Ok(format!("{abm} {timer} {left:?}"))
            });
            m.on_abm("test:x", |_, _, _| Ok(()));
        }
    }
    // A bare kit: no module answers the active calls.
    let mut m = TestHost::new().load::<Modkit<Hopeful>>().unwrap();
    assert_eq!(m.command("try", &[], None).unwrap(), "false false None");
}

#[test]
fn a_voxels_definition_is_read_by_id_even_of_a_block_registered_later() {
    let world = TestWorld::new();
    let mut m = world.load::<Garden>().unwrap();
    let ctx = &mut m.module_mut().ctx;
    let bomb = ctx.voxel_definition(world.id("bomb")).unwrap();
    assert_eq!(bomb.name.block_name, "bomb");
    assert_eq!(bomb.handler_module, "test");
    let mut late = BlockDefinition::simple("late", "late.png");
    late.light_absorption = 3;
    world
        .kit()
        .host()
        .call(&buildat_voxelworld_api::RegisterBlock { block: late })
        .unwrap();
    let late = ctx.voxel_definition(world.id("late")).unwrap();
    assert_eq!(late.light_absorption, 3);
    let error = ctx.voxel_definition(1 << 20).unwrap_err();
    assert!(error.to_string().contains("no voxel type"), "{error}");
}

/// docs/modding.md's example of active voxels, as written there.
#[derive(Default, Serialize, Deserialize)]
struct Moss;

impl Mod for Moss {
    fn setup(m: &mut Setup<Self>) {
        // Every 10 s, cobblestone beside water near players, each with chance 1/5.
        m.on_start(|_, ctx| ctx.register_abm("moss:grow", &["cobblestone"], &["water"], 10.0, 5));
        m.on_abm("moss:grow", |_, ctx, found| {
            for &(pos, _voxel) in found {
                ctx.set_voxel(pos, "mossy_cobblestone")?;
            }
            Ok(())
        });
        // A mushroom placed spreads 30 s later, once.
        m.block(BlockDefinition::simple("mushroom", "mushroom.png"))
            .on_place(|_, ctx, pos| ctx.set_timer(pos, 30.0, "spread"));
        m.on_timer("spread", |_, ctx, timer| {
            let [x, y, z] = timer.pos;
            ctx.place_voxel([x + 1, y, z], "mushroom")
        });
    }
}

#[test]
fn the_guides_example_grows_moss_and_spreads_mushrooms() {
    let world = TestWorld::new();
    for name in ["cobblestone", "mossy_cobblestone", "water"] {
        let block = BlockDefinition::simple(name, "x.png");
        world
            .kit()
            .host()
            .call(&buildat_voxelworld_api::RegisterBlock { block })
            .unwrap();
    }
    world.fill([0, 0, 0], [2, 0, 0], "cobblestone");
    world.fill([-1, 0, 0], [-1, 0, 0], "water");
    let mut m = world.load::<Moss>().unwrap();
    assert_eq!(world.run_abm(&mut m, "moss:grow").unwrap(), 1);
    assert_eq!(world.voxel([0, 0, 0]).as_deref(), Some("mossy_cobblestone"));
    assert_eq!(world.voxel([1, 0, 0]).as_deref(), Some("cobblestone"));

    world
        .place(&mut m, [0, 1, 0], "mushroom", Some("ann"))
        .unwrap();
    assert_eq!(world.pass(&mut m, 30.0).unwrap(), 1);
    assert_eq!(world.voxel([1, 1, 0]).as_deref(), Some("mushroom"));
    // The new one (placed by the mod) has its own timer: it spreads on.
    assert_eq!(world.pass(&mut m, 30.0).unwrap(), 1);
    assert_eq!(world.voxel([2, 1, 0]).as_deref(), Some("mushroom"));
}

/// An ABM, and its own closure on modules loaded.
#[derive(Default, Serialize, Deserialize)]
struct Sprout {
    loaded: Vec<String>,
}

impl Mod for Sprout {
    fn setup(m: &mut Setup<Self>) {
        m.on_start(|_, ctx| ctx.register_abm("test:sprout", &["dirt"], &[], 1.0, 1));
        m.on_abm("test:sprout", |_, _, _| Ok(()));
        m.on_event(|s, _, loaded: ModuleLoaded| {
            s.loaded.push(loaded.name);
            Ok(())
        });
    }
}

#[test]
fn abms_are_registered_again_when_the_active_module_is_loaded_after_the_mod() {
    // No active module yet: the registration is declined.
    let kit = TestHost::new();
    let mut m = kit.load::<Modkit<Sprout>>().unwrap();
    assert_eq!(kit.calls::<RegisterAbm>().len(), 1);
    kit.answer(|_: RegisterAbm| Ok(()));
    m.emit(&ModuleLoaded {
        name: "items".into(),
    })
    .unwrap();
    assert_eq!(
        kit.calls::<RegisterAbm>().len(),
        1,
        "not for another module"
    );
    m.emit(&ModuleLoaded {
        name: "active".into(),
    })
    .unwrap();
    let calls = kit.calls::<RegisterAbm>();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].abm.name, "test:sprout");
    assert_eq!(calls[1].abm.module, "test");
    // The mod's own closure still runs.
    assert_eq!(m.module().state().loaded, ["items", "active"]);
}

#[test]
fn a_timer_can_be_read_and_cancelled_and_an_abm_removed() {
    #[derive(Default, Serialize, Deserialize)]
    struct Keeper;
    impl Mod for Keeper {
        fn setup(m: &mut Setup<Self>) {
            m.on_start(|_, ctx| ctx.register_abm("test:keep", &["dirt"], &[], 1.0, 1));
            m.on_abm("test:keep", |_, _, _| Ok(()));
            m.on_timer("keep", |_, _, _| Ok(()));
            m.command("keep", "", None, |_, ctx, words| {
                let pos = [1, 2, 3];
                Ok(match words.first().map(String::as_str) {
                    Some("set") => ctx.set_timer(pos, 5.0, "keep")?.to_string(),
                    Some("left") => format!("{:?}", ctx.timer_left(pos)?),
                    Some("cancel") => ctx.cancel_timers(&[pos, [9, 9, 9]])?.to_string(),
                    _ => ctx.remove_abm("test:keep")?.to_string(),
                })
            });
        }
    }
    let world = TestWorld::new();
    world.fill([1, 2, 3], [1, 2, 3], "dirt");
    let mut m = world.load::<Keeper>().unwrap();
    assert_eq!(m.command("keep", &["set"], None).unwrap(), "true");
    assert_eq!(m.command("keep", &["left"], None).unwrap(), "Some(5.0)");
    assert_eq!(m.command("keep", &["cancel"], None).unwrap(), "1");
    assert_eq!(m.command("keep", &["left"], None).unwrap(), "None");
    assert!(world.timers("test").is_empty());
    assert_eq!(world.pass(&mut m, 10.0).unwrap(), 0, "cancelled");
    assert_eq!(world.abms().len(), 1);
    assert_eq!(m.command("keep", &["remove"], None).unwrap(), "true");
    assert!(world.abms().is_empty());
    assert_eq!(m.command("keep", &["remove"], None).unwrap(), "false");
    // A removed ABM is not registered again when active comes back.
    m.emit(&ModuleLoaded {
        name: "active".into(),
    })
    .unwrap();
    assert!(world.abms().is_empty());
}
