//! The module on the test kit: the clock from storage or the start time,
//! ticks, dusk and dawn, `/time` and its privilege, what players are told,
//! saving, and a reload.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use buildat_daytime_api::{GetTime, NightChanged, SetTime, TimePacket};
use buildat_interface::UnloadKind;
use buildat_interface::events::Tick;
use buildat_interface::testing::{TestHost, TestModule};
use buildat_main_api::{ChatLine, DefinePrivilege, GetPlayers, HasPrivilege, PlayerJoined};
use buildat_network_api::PeerId;
use buildat_network_api::receive::testing::sent;
use buildat_voxelworld_api::{GetValue, PutValues};

use super::Daytime;
use super::clock::{Clock, VALUE_KEY, VALUE_SPACE};

/// The world's values and the privileged players, shared with the kit.
#[derive(Clone, Default)]
struct World {
    clock: Arc<Mutex<Option<Vec<u8>>>>,
    privileged: Arc<Mutex<BTreeSet<String>>>,
}

fn kit(world: &World, settings: &[(&str, &str)]) -> TestHost {
    let mut kit = TestHost::new().name("daytime");
    for (key, value) in settings {
        kit = kit.config(key, value);
    }
    let stored = Arc::clone(&world.clock);
    kit.answer::<GetValue>(move |get| {
        assert_eq!(
            (get.space.as_str(), get.key.as_str()),
            (VALUE_SPACE, VALUE_KEY)
        );
        Ok(stored.lock().unwrap().clone())
    });
    let stored = Arc::clone(&world.clock);
    kit.answer::<PutValues>(move |put| {
        for write in put.writes {
            *stored.lock().unwrap() = write.value;
        }
        Ok(true)
    });
    let privileged = Arc::clone(&world.privileged);
    kit.answer::<HasPrivilege>(move |has| {
        Ok(has.privilege == "settime" && privileged.lock().unwrap().contains(&has.player))
    });
    kit.answer::<DefinePrivilege>(|_| Ok(()));
    kit.answer::<GetPlayers>(|_| Ok(Vec::new()));
    kit
}

fn load(world: &World, settings: &[(&str, &str)]) -> TestModule<Daytime> {
    kit(world, settings).load::<Daytime>().expect("loads")
}

fn join(day: &mut TestModule<Daytime>, name: &str, peer: PeerId) {
    day.emit(&PlayerJoined {
        name: name.into(),
        peer,
    })
    .expect("joins");
}

fn tick(day: &mut TestModule<Daytime>, seconds: f64) {
    day.emit(&Tick { dtime: seconds }).expect("ticks");
}

fn stored(world: &World) -> Option<Clock> {
    let bytes = world.clock.lock().unwrap().clone()?;
    Some(Clock::decode(&bytes).expect("a stored clock"))
}

/// The chat lines the module sent: (peer, text).
fn chat(day: &TestModule<Daytime>) -> Vec<(PeerId, String)> {
    sent::<ChatLine>(day.kit())
        .into_iter()
        .map(|(peer, line)| (peer, line.text))
        .collect()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-6
}

#[test]
fn a_new_world_starts_at_the_start_time_and_a_joining_player_is_told() {
    let world = World::default();
    let mut day = load(&world, &[]);
    assert_eq!(
        day.kit().calls::<DefinePrivilege>()[0].name,
        "settime",
        "the privilege is defined"
    );
    let now = day.call(&GetTime {}).expect("answers");
    assert!(close(now.time, 0.3));
    assert_eq!((now.day, now.day_seconds, now.night), (0, 1200.0, false));
    join(&mut day, "ann", 4);
    let told = sent::<TimePacket>(day.kit());
    assert_eq!(told.len(), 1);
    assert_eq!(told[0].0, 4);
    assert!(close(f64::from(told[0].1.time), 0.3));
    assert_eq!(told[0].1.day_seconds, 1200.0);
}

#[test]
fn ticks_advance_the_clock_and_dusk_and_dawn_are_events() {
    let world = World::default();
    let settings = [("daytime.day_minutes", "1"), ("daytime.start_time", "0.7")];
    let mut day = load(&world, &settings);
    // 6 s of a 60 s day: 0.7 -> 0.8, past 19:00.
    for _ in 0..6 {
        tick(&mut day, 1.0);
    }
    let now = day.call(&GetTime {}).expect("answers");
    assert!(close(now.time, 0.8), "{}", now.time);
    assert!(now.night);
    assert_eq!(
        day.kit().emitted::<NightChanged>(),
        [NightChanged { night: true }]
    );
    // 27 s more: 0.8 + 0.45 = 1.25, the next day's dawn.
    for _ in 0..27 {
        tick(&mut day, 1.0);
    }
    let now = day.call(&GetTime {}).expect("answers");
    assert_eq!(now.day, 1);
    assert!(!now.night, "{}", now.time);
    assert_eq!(
        day.kit().emitted::<NightChanged>(),
        [NightChanged { night: true }, NightChanged { night: false }]
    );
}

#[test]
fn players_are_told_every_send_interval_and_the_clock_saved_every_save_interval() {
    let world = World::default();
    let settings = [
        ("daytime.send_seconds", "10"),
        ("daytime.save_seconds", "30"),
    ];
    let mut day = load(&world, &settings);
    join(&mut day, "ann", 1);
    join(&mut day, "bob", 2);
    day.kit().clear();
    for _ in 0..9 {
        tick(&mut day, 1.0);
    }
    assert!(sent::<TimePacket>(day.kit()).is_empty(), "not yet");
    tick(&mut day, 1.0);
    let told: Vec<PeerId> = sent::<TimePacket>(day.kit())
        .iter()
        .map(|(p, _)| *p)
        .collect();
    assert_eq!(told, [1, 2]);
    assert_eq!(stored(&world), None, "nothing saved before 30 s");
    for _ in 0..20 {
        tick(&mut day, 1.0);
    }
    let saved = stored(&world).expect("saved after 30 s");
    assert!(close(saved.time, 0.3 + 30.0 / 1200.0), "{}", saved.time);
}

#[test]
fn the_time_command_shows_anyone_the_time_and_sets_it_with_the_privilege() {
    let world = World::default();
    let mut day = load(&world, &[]);
    join(&mut day, "ann", 1);
    assert_eq!(
        day.command("time", &[], Some("ann")).expect("shows"),
        "07:12, day 0"
    );

    // A player's set is judged on the next tick (main waits for the
    // command's answer, so it cannot be asked then), answered in chat.
    day.kit().clear();
    let asked = day.command("time", &["23:00"], Some("ann")).expect("asked");
    assert_eq!(asked, "setting the time to 23:00 (privilege 'settime')...");
    assert!(
        day.kit().calls::<HasPrivilege>().is_empty(),
        "main is not asked inside its own call"
    );
    tick(&mut day, 0.05);
    assert_eq!(
        chat(&day),
        [(
            1,
            "setting the time needs the 'settime' privilege".to_string()
        )]
    );
    assert!(close(
        day.call(&GetTime {}).expect("answers").time,
        0.3 + 0.05 / 1200.0
    ));
    assert!(sent::<TimePacket>(day.kit()).is_empty());

    world.privileged.lock().unwrap().insert("ann".into());
    day.kit().clear();
    day.command("time", &["23:00"], Some("ann")).expect("asked");
    tick(&mut day, 0.05);
    assert_eq!(
        chat(&day),
        [(1, "time set: 23:00, day 0, night".to_string())]
    );
    let now = day.call(&GetTime {}).expect("answers");
    assert!(close(now.time, 23.0 / 24.0 + 0.05 / 1200.0) && now.night);
    assert_eq!(
        day.kit().emitted::<NightChanged>(),
        [NightChanged { night: true }]
    );
    let told = sent::<TimePacket>(day.kit());
    assert_eq!(told.len(), 1, "the set is told at once");
    assert!(close(f64::from(told[0].1.time), 23.0 / 24.0));
    assert!(close(stored(&world).expect("saved").time, 23.0 / 24.0));

    assert_eq!(
        day.kit().calls::<HasPrivilege>().len(),
        1,
        "one ask for one set"
    );
    // The console may always; a clock that is not one is a usage error.
    day.command("time", &["6:30"], None)
        .expect("the console sets");
    assert_eq!(
        day.command("time", &[], None).expect("shows"),
        "06:30, day 0"
    );
    for bad in ["25:00", "noon", "12:5"] {
        let error = day.command("time", &[bad], None).expect_err(bad);
        assert!(error.to_string().contains("HH:MM"), "{error}");
    }
    assert!(day.call(&SetTime { time: 1.0 }).is_err());
    assert!(day.call(&SetTime { time: f64::NAN }).is_err());
    assert!(close(
        day.call(&GetTime {}).expect("answers").time,
        390.0 / 1440.0
    ));
}

#[test]
fn the_clock_is_read_back_from_the_world_and_saved_when_unloading() {
    let world = World::default();
    *world.clock.lock().unwrap() = Some(Clock { time: 0.9, day: 12 }.encode().unwrap());
    let mut day = load(&world, &[("daytime.day_minutes", "1")]);
    let now = day.call(&GetTime {}).expect("answers");
    assert!(close(now.time, 0.9) && now.day == 12 && now.night);
    tick(&mut day, 6.0);
    day.unload(UnloadKind::Stop).expect("unloads");
    let saved = stored(&world).expect("saved on unload");
    assert!(
        close(saved.time, 0.0) || close(saved.time, 1.0),
        "{}",
        saved.time
    );
    assert_eq!(saved.day, 13);

    // A corrupt clock: a warning and the start time, not a failed start.
    *world.clock.lock().unwrap() = Some(vec![1, 2]);
    let mut day = load(&world, &[]);
    assert!(close(day.call(&GetTime {}).expect("answers").time, 0.3));
}

#[test]
fn a_reload_keeps_the_clock_and_the_players_without_reading_storage() {
    let world = World::default();
    let mut day = load(&world, &[("daytime.day_minutes", "1")]);
    join(&mut day, "ann", 3);
    tick(&mut day, 3.0);
    // What is stored is older than memory: the stash wins.
    *world.clock.lock().unwrap() = Some(Clock { time: 0.1, day: 0 }.encode().unwrap());
    day.kit().clear();
    let mut day = day.reload::<Daytime>().expect("reloads");
    let now = day.call(&GetTime {}).expect("answers");
    assert!(close(now.time, 0.35), "{}", now.time);
    let told = sent::<TimePacket>(day.kit());
    assert_eq!(told.len(), 1, "the player is told again after the reload");
    assert_eq!(told[0].0, 3);
}

#[test]
fn settings_out_of_bounds_refuse_to_start() {
    let world = World::default();
    for (key, value) in [
        ("daytime.day_minutes", "-1"),
        ("daytime.start_time", "1.5"),
        ("daytime.send_seconds", "0"),
    ] {
        let error = kit(&world, &[(key, value)])
            .load::<Daytime>()
            .err()
            .expect("refused");
        assert!(error.to_string().contains(key), "{error}");
    }
}
