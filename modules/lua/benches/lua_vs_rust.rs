//! The cost of Lua: the same block rule and the same entity step written
//! as a Lua mod (run by the `lua` module) and as a Rust mod (modkit), run
//! side by side on modkit's test world in one process, so both pay the
//! same host: events encoded, the world's calls answered in memory.
//!
//! `cargo bench -p buildat-module-lua --bench lua_vs_rust` prints, for
//! each case, the time per call of each, and Lua's as a ratio of Rust's
//! (median of interleaved rounds).

use std::time::Instant;

use buildat_interface::events::Tick;
use buildat_modkit::prelude::*;
use buildat_module_lua::LuaHost;
use buildat_module_lua::testing::{TempMod, world_with};

/// Placed this many times a round (each puts a torch on itself).
const PLACES: i32 = 2000;
/// Entities stepped, and ticks a round.
const ENTITIES: usize = 100;
const TICKS: usize = 100;
const ROUNDS: usize = 7;

#[derive(Default, Serialize, Deserialize)]
struct RustRule;

impl Mod for RustRule {
    fn setup(m: &mut Setup<Self>) {
        m.block(BlockDefinition::simple("rust_rule", "rust_rule.png"))
            .on_place(|_, ctx, [x, y, z]| ctx.set_voxel([x, y + 1, z], "torch"));
        m.entity("rust_circler", |_, _, e, _| {
            let angle = e.age * 0.8;
            let [x, y, z] = e.home;
            e.position = [x + 4.0 * angle.cos(), y + 2.0, z + 4.0 * angle.sin()];
            e.yaw = -angle as f32;
            Ok(())
        })
        .keep(ENTITIES);
    }
}

const LUA_RULE: &str = r#"
buildat.register_node("lua_rule", {
  on_place = function(pos) buildat.set_node({x = pos.x, y = pos.y + 1, z = pos.z}, {name = "torch"}) end,
})
buildat.register_entity("lua_circler", {keep = KEEP, on_step = function(self)
  local angle, home = self.age * 0.8, self.home
  self.object:set_pos({x = home.x + 4 * math.cos(angle), y = home.y + 2, z = home.z + 4 * math.sin(angle)})
  self.object:set_yaw(-angle)
end})
"#;

fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn main() {
    let source = LUA_RULE.replace("KEEP", &ENTITIES.to_string());
    let lua_mod = TempMod::new("bench", &source);
    let lua_world = world_with(&[("bench", lua_mod.dir.clone())], &[]);
    let rust_world = world_with(&[], &[]);
    for world in [&lua_world, &rust_world] {
        world.set_spawn(Some([0.5, 1.0, 0.5]));
    }
    let mut lua = lua_world
        .load_module::<LuaHost>()
        .expect("the Lua mod loads");
    let mut rust = rust_world.load::<RustRule>().expect("the Rust mod loads");
    let tick = Tick { dtime: 0.05 };
    // Entities are made on the first tick.
    lua.emit(&tick).expect("tick");
    rust.emit(&tick).expect("tick");
    assert_eq!(lua_world.nodes().len(), ENTITIES);
    assert_eq!(rust_world.nodes().len(), ENTITIES);

    let (mut rule, mut step) = ([Vec::new(), Vec::new()], [Vec::new(), Vec::new()]);
    for round in 0..ROUNDS {
        let y = 10 + 2 * round as i32;
        let started = Instant::now();
        for x in 0..PLACES {
            lua_world
                .place(&mut lua, [x, y, 0], "lua_rule", None)
                .expect("place");
        }
        rule[0].push(started.elapsed().as_secs_f64() / PLACES as f64);
        let started = Instant::now();
        for x in 0..PLACES {
            rust_world
                .place(&mut rust, [x, y, 0], "rust_rule", None)
                .expect("place");
        }
        rule[1].push(started.elapsed().as_secs_f64() / PLACES as f64);
        assert_eq!(lua_world.voxel([7, y + 1, 0]).as_deref(), Some("torch"));
        assert_eq!(rust_world.voxel([7, y + 1, 0]).as_deref(), Some("torch"));

        let started = Instant::now();
        for _ in 0..TICKS {
            lua.emit(&tick).expect("tick");
        }
        step[0].push(started.elapsed().as_secs_f64() / (TICKS * ENTITIES) as f64);
        let started = Instant::now();
        for _ in 0..TICKS {
            rust.emit(&tick).expect("tick");
        }
        step[1].push(started.elapsed().as_secs_f64() / (TICKS * ENTITIES) as f64);
    }
    let lua_nodes = lua_world.nodes();
    let moved = lua_nodes.iter().filter(|n| n.position[1] == 3.0).count();
    assert_eq!(moved, ENTITIES, "every Lua entity circles 2 above its home");

    println!("| case (median of {ROUNDS} interleaved rounds) | Lua mod | Rust mod | Lua / Rust |");
    println!("|---|---|---|---|");
    for (name, [lua_times, rust_times]) in [
        (
            format!(
                "block rule: a placed block puts a torch on itself (µs a place, {PLACES} a round)"
            ),
            rule,
        ),
        (
            format!("entity step: circle home ({ENTITIES} entities × {TICKS} ticks, µs a step)"),
            step,
        ),
    ] {
        let (l, r) = (median(lua_times) * 1e6, median(rust_times) * 1e6);
        println!("| {name} | {l:.2} | {r:.2} | {:.2}× |", l / r);
    }
}
