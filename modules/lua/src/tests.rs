//! The lua module on modkit's test world: real Luau, real mod folders
//! (the examples, and mods written by the tests into temp folders), the
//! world's calls answered in memory.

use buildat_interface::events::Tick;
use buildat_interface::log;
use buildat_interface::testing::TestModule;
use buildat_modkit::testing::TestWorld;

use crate::LuaHost;
use crate::testing::{TempMod, examples, world_with};

fn tick(module: &mut TestModule<LuaHost>, times: usize) {
    for _ in 0..times {
        module.emit(&Tick { dtime: 0.05 }).expect("tick");
    }
}

fn logged(world: &TestWorld, level: log::Level, part: &str) -> Option<String> {
    world
        .kit()
        .logs()
        .into_iter()
        .find(|(at, text)| *at == level && text.contains(part))
        .map(|(_, text)| text)
}

#[test]
fn the_bouncer_example_puts_a_torch_on_itself_and_says_who_used_it() {
    let world = world_with(&[("bouncer", examples().join("bouncer"))], &[]);
    world.fill([-2, 0, -2], [2, 0, 2], "stone");
    world.join("ann", 7);
    let mut m = world.load_module::<LuaHost>().expect("load");
    world
        .place(&mut m, [0, 1, 0], "lua_bouncer", Some("ann"))
        .expect("place");
    assert_eq!(world.voxel([0, 2, 0]).as_deref(), Some("torch"));
    world.use_block(&mut m, [0, 1, 0], "ann").expect("use");
    world.dig(&mut m, [0, 1, 0], Some("ann")).expect("dig");
    let told: Vec<String> =
        buildat_network_api::receive::testing::sent::<buildat_main_api::ChatLine>(world.kit())
            .into_iter()
            .map(|(_, line)| line.text)
            .collect();
    assert_eq!(
        told,
        ["ann bounces (1)", "the bouncer at 0,1,0 is gone"],
        "its torch touched it once"
    );
}

#[test]
fn the_circler_example_circles_two_voxels_above_spawn() {
    let world = world_with(&[("circler", examples().join("circler"))], &[]);
    world.set_spawn(Some([0.5, 10.0, 0.5]));
    let mut m = world.load_module::<LuaHost>().expect("load");
    tick(&mut m, 40);
    let nodes = world.nodes();
    assert_eq!(nodes.len(), 1, "one kept");
    let [x, y, z] = nodes[0].position;
    assert_eq!(y, 12.0);
    let radius = ((x - 0.5).powi(2) + (z - 0.5).powi(2)).sqrt();
    assert!((radius - 4.0).abs() < 1e-9, "{radius}");
}

const COUNTER: &str = r#"
local said = "one"
buildat.register_chatcommand("say", {func = function(name) return true, said end})
"#;

#[test]
fn a_saved_file_is_live_at_the_next_tick_and_a_broken_one_keeps_the_old_version() {
    let temp = TempMod::new("say", COUNTER);
    let world = world_with(&[("say", temp.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    assert_eq!(m.command("say", &[], None).expect("say"), "one");
    temp.write(&COUNTER.replace("\"one\"", "\"two\""));
    tick(&mut m, 1);
    assert_eq!(m.command("say", &[], None).expect("say"), "two");
    assert!(logged(&world, log::Level::Info, "lua mod say reloaded").is_some());

    temp.write("local x = \n\nbuildat.register_chatcommand(\"say\", {func = function() return true, 'three' end})\nthis is not lua\n");
    tick(&mut m, 2);
    assert_eq!(
        m.command("say", &[], None).expect("say"),
        "two",
        "the old version runs on"
    );
    let error = logged(&world, log::Level::Error, "previous version keeps running")
        .expect("the error is logged");
    assert!(error.contains("say/server_lua/init.lua:4"), "{error}");
    let errors = world
        .kit()
        .logs()
        .iter()
        .filter(|(level, _)| *level == log::Level::Error)
        .count();
    tick(&mut m, 3);
    let again = world
        .kit()
        .logs()
        .iter()
        .filter(|(level, _)| *level == log::Level::Error)
        .count();
    assert_eq!(errors, again, "a broken version is tried once");
}

#[test]
fn a_mod_that_loops_eats_memory_or_errors_every_tick_is_stopped_and_named_and_the_others_go_on() {
    let looping = TempMod::new(
        "looping",
        "buildat.register_entity('spinner', {keep = 1, on_step = function(self)\n  while true do end\nend})\n",
    );
    let bomb = TempMod::new(
        "bomb",
        "local t = {}\nbuildat.register_chatcommand('grow', {func = function()\n  while true do t[#t + 1] = string.rep('x', 65536) .. #t end\nend})\n",
    );
    let failing = TempMod::new(
        "failing",
        "buildat.register_entity('failer', {keep = 1, on_step = function(self)\n  error('every tick')\nend})\n",
    );
    let calm = TempMod::new("calm", COUNTER);
    let world = world_with(
        &[
            ("looping", looping.dir.clone()),
            ("bomb", bomb.dir.clone()),
            ("failing", failing.dir.clone()),
            ("calm", calm.dir.clone()),
        ],
        &[
            ("lua.call_ms", "20"),
            ("lua.memory_mb", "8"),
            ("lua.max_errors", "5"),
        ],
    );
    world.set_spawn(Some([0.5, 1.0, 0.5]));
    let mut m = world.load_module::<LuaHost>().expect("load");
    tick(&mut m, 10);
    let stopped = logged(&world, log::Level::Warn, "lua mod looping stopped").expect("looping");
    assert!(
        stopped.contains("looping/server_lua/init.lua:2"),
        "{stopped}"
    );
    assert!(stopped.contains("time limit"), "{stopped}");
    let stopped = logged(&world, log::Level::Warn, "lua mod failing stopped").expect("failing");
    assert!(
        stopped.contains("failing/server_lua/init.lua:2"),
        "{stopped}"
    );

    let grown = m
        .command("grow", &[], None)
        .expect_err("the bomb is stopped");
    assert!(grown.to_string().contains("memory"), "{grown}");
    let stopped = logged(&world, log::Level::Warn, "lua mod bomb stopped").expect("bomb");
    assert!(stopped.contains("bomb/server_lua/init.lua:3"), "{stopped}");
    assert_eq!(m.command("say", &[], None).expect("say"), "one");
    let again = m.command("grow", &[], None).expect_err("stopped");
    assert!(again.to_string().contains("is stopped"), "{again}");

    // Saved again, it runs again.
    looping.write(
        "buildat.register_chatcommand('spin', {func = function() return true, 'fixed' end})\n",
    );
    tick(&mut m, 1);
    assert_eq!(m.command("spin", &[], None).expect("spin"), "fixed");
}

#[test]
fn the_hello_example_answers_in_its_setting_s_words_and_counts_across_a_reload() {
    let world = world_with(
        &[("hello", examples().join("hello"))],
        &[("hello.text", "hi")],
    );
    let mut m = world.load_module::<LuaHost>().expect("load");
    assert_eq!(
        world.kit().commands()[0].privilege.as_deref(),
        Some("interact")
    );
    assert_eq!(
        m.command("hello", &[], Some("ann")).expect("hello"),
        "hi #1"
    );
    let mut m = m.reload::<LuaHost>().expect("reload");
    assert_eq!(m.command("hello", &[], None).expect("hello"), "hi #2");
}

#[test]
fn the_garden_example_s_abm_turns_dirt_in_the_open_into_grass() {
    let world = world_with(&[("garden", examples().join("garden"))], &[]);
    world.fill([0, 0, 0], [0, 0, 0], "grass");
    world.fill([1, 0, 0], [2, 0, 0], "dirt");
    world.fill([2, 1, 0], [2, 1, 0], "stone");
    let mut m = world.load_module::<LuaHost>().expect("load");
    let abm = world.abms();
    assert_eq!(abm.len(), 1);
    assert_eq!(abm[0].name, "garden/grass grows");
    assert_eq!(abm[0].module, "lua");
    world.run_abm(&mut m, "garden/grass grows").expect("run");
    assert_eq!(world.voxel([1, 0, 0]).as_deref(), Some("grass"));
    assert_eq!(
        world.voxel([2, 0, 0]).as_deref(),
        Some("dirt"),
        "covered by stone"
    );
}

const KEEPER: &str = r#"
buildat.register_entity("walker", {keep = 1, on_reload = "keep",
  on_activate = function(self, staticdata) self.steps = tonumber(staticdata) or 0 end,
  on_step = function(self) self.steps += 1; local p = self.object:get_pos(); self.object:set_pos({x = p.x + 1, y = p.y, z = p.z}) end,
  get_staticdata = function(self) return tostring(self.steps) end})
buildat.register_chatcommand("steps", {func = function() return true, "VERSION" end})
"#;

#[test]
fn a_reload_keeps_entities_with_their_staticdata_or_rebuilds_them_as_the_mod_says() {
    let temp = TempMod::new("keeper", &KEEPER.replace("VERSION", "one"));
    let world = world_with(&[("keeper", temp.dir.clone())], &[]);
    world.set_spawn(Some([0.5, 1.0, 0.5]));
    let mut m = world.load_module::<LuaHost>().expect("load");
    tick(&mut m, 5);
    let nodes = world.nodes();
    assert_eq!(nodes.len(), 1);
    let (id, x) = (nodes[0].id, nodes[0].position[0]);
    assert!(x > 3.0, "it walked: {x}");

    // Kept: the same node goes on from where it was, its count handed over.
    temp.write(&KEEPER.replace("VERSION", "two").replace(
        "get_staticdata = function(self) return tostring(self.steps) end",
        "get_staticdata = function(self) return tostring(self.steps) end, on_step2 = 1",
    ));
    tick(&mut m, 1);
    assert_eq!(m.command("steps", &[], None).expect("steps"), "two");
    let nodes = world.nodes();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].id, id, "the same entity");
    assert!(nodes[0].position[0] > x, "it goes on from where it was");

    // Across a reload of the lua module itself too, with its count.
    let mut m = m.reload::<LuaHost>().expect("reload the module");
    tick(&mut m, 1);
    let nodes = world.nodes();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].id, id, "the same entity after the module's reload");

    // Rebuilt: the old one goes, a new one is made at the spawn.
    temp.write(&KEEPER.replace("on_reload = \"keep\"", "on_reload = \"rebuild\""));
    tick(&mut m, 1);
    tick(&mut m, 30);
    let nodes = world.nodes();
    assert_eq!(nodes.len(), 1);
    assert_ne!(nodes[0].id, id, "made again");
}

#[test]
fn after_jobs_run_when_due_and_a_cancelled_one_does_not() {
    let temp = TempMod::new(
        "timer",
        r#"
local said = {}
buildat.after(0.12, function(word) said[#said + 1] = word end, "late")
buildat.after(0, function() said[#said + 1] = "soon" end)
local job = buildat.after(0.05, function() said[#said + 1] = "cancelled" end)
job:cancel()
buildat.register_chatcommand("said", {func = function() return true, table.concat(said, ",") end})
"#,
    );
    let world = world_with(&[("timer", temp.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    tick(&mut m, 1);
    assert_eq!(m.command("said", &[], None).expect("said"), "soon");
    tick(&mut m, 2);
    assert_eq!(m.command("said", &[], None).expect("said"), "soon,late");
}

#[test]
fn a_mod_calls_another_s_published_functions_with_copied_values() {
    let lib = TempMod::new(
        "lib",
        r#"
local calls = 0
buildat.publish({
  double = function(t) calls += 1; return {n = t.n * 2, calls = calls} end,
  name = "the lib",
})
"#,
    );
    let user = TempMod::new(
        "user",
        r#"
buildat.register_chatcommand("use", {func = function()
  local lib = buildat.get_mod("lib")
  local answer = lib.double({n = 21})
  local ok, err = pcall(lib.double, {n = function() end})
  return true, lib.name .. " " .. answer.n .. " " .. answer.calls .. " " .. tostring(ok) .. " " .. tostring(buildat.get_mod("nobody"))
end})
"#,
    );
    let world = world_with(&[("lib", lib.dir.clone()), ("user", user.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    assert_eq!(
        m.command("use", &[], None).expect("use"),
        "the lib 42 1 false nil",
        "a function does not cross"
    );
}

#[test]
fn add_entity_makes_one_now_and_include_runs_another_file_of_the_mod() {
    let temp = TempMod::new(
        "adder",
        r#"
local offset = buildat.include("offset.lua")
buildat.register_entity("box", {})
buildat.register_chatcommand("add", {func = function()
  local self = buildat.add_entity({x = offset, y = 5, z = 0}, "box")
  local ok = pcall(buildat.include, "../../secret.lua")
  return true, self.name .. " " .. self.object:get_pos().x .. " " .. tostring(ok)
end})
"#,
    );
    std::fs::write(temp.dir.join("server_lua/offset.lua"), "return 7\n").expect("write");
    let world = world_with(&[("adder", temp.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    assert_eq!(m.command("add", &[], None).expect("add"), "box 7 false");
    assert_eq!(world.nodes().len(), 1);
    assert_eq!(world.nodes()[0].position, [7.0, 5.0, 0.0]);
}

#[test]
fn an_abm_batch_larger_than_the_mod_s_time_runs_on_over_the_next_ticks_not_the_mod_stopped() {
    let temp = TempMod::new(
        "slow",
        r#"
buildat.register_abm({label = "slow", nodenames = {"dirt"}, interval = 1, action = function(pos)
  local started = os.clock()
  while os.clock() - started < 0.002 do end
  buildat.set_node(pos, {name = "grass"})
end})
buildat.register_chatcommand("alive", {func = function() return true, "yes" end})
"#,
    );
    let world = world_with(
        &[("slow", temp.dir.clone())],
        &[("lua.call_ms", "20"), ("lua.tick_ms", "60")],
    );
    world.fill([0, 0, 0], [99, 0, 4], "dirt");
    let mut m = world.load_module::<LuaHost>().expect("load");
    assert_eq!(world.run_abm(&mut m, "slow/slow").expect("run"), 500);
    let grown = (0..100)
        .flat_map(|x| (0..5).map(move |z| [x, 0, z]))
        .filter(|&pos| world.voxel(pos).as_deref() == Some("grass"))
        .count();
    assert!(
        grown > 0 && grown < 100,
        "{grown} of 500 in one tick's time"
    );
    // A batch that cannot be finished is shuffled: what its first tick
    // reaches is not the first rows in any order (x first: only small x;
    // z first: only z = 0). Five voxels or more tell (a loaded machine
    // may reach fewer in the tick's time).
    let reached: Vec<[i32; 3]> = (0..100)
        .flat_map(|x| (0..5).map(move |z| [x, 0, z]))
        .filter(|&pos| world.voxel(pos).as_deref() == Some("grass"))
        .collect();
    if reached.len() >= 5 {
        let rows = reached.len() as i32 / 5 + 1;
        assert!(
            reached.iter().any(|p| p[0] > rows) && reached.iter().any(|p| p[2] != 0),
            "{reached:?}"
        );
    }
    assert_eq!(m.command("alive", &[], None).expect("alive"), "yes");
    // The rest runs on over the next ticks, each within the mod's time.
    tick(&mut m, 60);
    let grown = (0..100)
        .flat_map(|x| (0..5).map(move |z| [x, 0, z]))
        .filter(|&pos| world.voxel(pos).as_deref() == Some("grass"))
        .count();
    assert_eq!(grown, 500, "the whole batch over the next ticks");
    assert!(logged(&world, log::Level::Warn, "stopped").is_none());
}

#[test]
fn a_world_binding_s_error_names_the_lua_line_that_called_it() {
    let temp = TempMod::new(
        "typo",
        "buildat.register_chatcommand('typo', {func = function()\n  return true, buildat.get_node({x = 1, y = 'two', z = 3}).name\nend})\n",
    );
    let world = world_with(&[("typo", temp.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    let error = m.command("typo", &[], None).expect_err("a bad position");
    let error = error.to_string();
    assert!(
        error.contains("typo/server_lua/init.lua:2: ") && error.contains("y is string"),
        "{error}"
    );
}

#[test]
fn globalsteps_run_every_tick_and_join_and_leave_callbacks_get_the_player() {
    let temp = TempMod::new(
        "greeter",
        r#"
local seen, time = {}, 0
buildat.register_globalstep(function(dtime) time += dtime end)
buildat.register_on_joinplayer(function(name) seen[#seen + 1] = "+" .. name end)
buildat.register_on_leaveplayer(function(name) seen[#seen + 1] = "-" .. name end)
buildat.register_chatcommand("seen", {func = function()
  return true, table.concat(seen, " ") .. " " .. string.format("%.2f", time)
end})
"#,
    );
    let world = world_with(&[("greeter", temp.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    tick(&mut m, 3);
    m.emit(&buildat_main_api::PlayerJoined {
        name: "ann".into(),
        peer: 7,
    })
    .expect("joined");
    m.emit(&buildat_main_api::PlayerLeft {
        name: "ann".into(),
        peer: 7,
    })
    .expect("left");
    assert_eq!(
        m.command("seen", &[], None).expect("seen"),
        "+ann -ann 0.15"
    );
}

#[test]
fn find_nodes_in_area_player_positions_and_the_time_of_day() {
    let temp = TempMod::new(
        "finder",
        r#"
buildat.register_chatcommand("find", {func = function()
  local found = buildat.find_nodes_in_area({x = 0, y = 0, z = 0}, {x = 3, y = 1, z = 3}, {"dirt", "grass"})
  local first = found[1]
  local ann = buildat.get_player_pos("ann")
  local ok = pcall(buildat.find_nodes_in_area, {x = 0, y = 0, z = 0}, {x = 1000, y = 1000, z = 0}, "dirt")
  return true, #found .. " " .. first.x .. "," .. first.y .. "," .. first.z .. " " .. ann.y
    .. " " .. tostring(buildat.get_player_pos("bob")) .. " " .. tostring(buildat.get_timeofday()) .. " " .. tostring(ok)
end})
"#,
    );
    let world = world_with(&[("finder", temp.dir.clone())], &[]);
    world.fill([0, 0, 0], [3, 0, 3], "stone");
    world.fill([1, 0, 1], [2, 0, 1], "dirt");
    world.fill([3, 1, 3], [3, 1, 3], "grass");
    world.kit().answer(|_: buildat_main_api::GetPlayers| {
        Ok(vec![buildat_main_api::PlayerState {
            name: "ann".into(),
            peer: 7,
            position: [0.5, 9.0, 0.5],
            wield: 0,
        }])
    });
    let mut m = world.load_module::<LuaHost>().expect("load");
    assert_eq!(
        m.command("find", &[], None).expect("find"),
        "3 1,0,1 9 nil nil false"
    );
}

#[test]
fn a_save_caught_between_truncation_and_write_is_not_loaded_as_an_empty_mod() {
    let temp = TempMod::new("half", COUNTER);
    let world = world_with(&[("half", temp.dir.clone())], &[]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    temp.write("");
    tick(&mut m, 1);
    assert_eq!(
        m.command("say", &[], None)
            .expect("the old version answers"),
        "one"
    );
    temp.write(&COUNTER.replace("\"one\"", "\"two\""));
    tick(&mut m, 1);
    assert_eq!(m.command("say", &[], None).expect("say"), "two");
}

/// `set lua.tick_ms` and `set lua.max_errors` on the console: applied to
/// the running mods at once; a value that is not one keeps the old.
#[test]
fn the_tick_time_and_error_limits_are_applied_live() {
    use buildat_interface::core_api::ApplySettings;
    let world = world_with(&[], &[("lua.tick_ms", "60")]);
    let mut m = world.load_module::<LuaHost>().expect("load");
    let apply = ApplySettings {
        namespace: "lua".into(),
        keys: vec!["lua.tick_ms".into()],
    };
    world.kit().set_config("lua.tick_ms", "7");
    world.kit().set_config("lua.max_errors", "3");
    world.kit().set_config("lua.memory_mb", "1");
    let reply = m.call(&apply).expect("applied");
    assert_eq!(
        reply,
        "every mod's Lua may run 7 ms a tick and raise 3 errors in 10 s"
    );
    let held = m.module().shared.settings.borrow().clone();
    assert_eq!((held.tick_ms, held.max_errors), (7, 3));
    assert_eq!(held.memory_mb, 64, "not live: the next reload");
    world.kit().set_config("lua.tick_ms", "soon");
    let error = m.call(&apply).unwrap_err();
    assert!(error.to_string().contains("lua.tick_ms"), "{error}");
    assert_eq!(m.module().shared.settings.borrow().tick_ms, 7);
}
