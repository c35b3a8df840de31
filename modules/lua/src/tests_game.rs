//! `game.rs` on real Lua: mods loaded by `LuaMod::load` from a folder, on
//! a test kit answering the native modules' calls (modkit's `TestWorld`
//! for voxelworld's values and settings). Checks what each binding records
//! or asks of a native module, the errors a modder sees, and `apply`.

use std::path::PathBuf;
use std::rc::Rc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use buildat_crafting_api::{Recipe, RecipeShape, SetRecipes};
use buildat_health_api::{Cause, Damage, GetHealth, Heal, Health};
use buildat_interface::testing::TestHost;
use buildat_inventory_api::{
    Change, GetInventory, Inventory, LIST_MAIN, Overflow, Owner, Transact, TxOutcome,
};
use buildat_items_api::{GetItems, ItemDef, ItemKind, ItemRegistry, ItemStack, RegisterItems};
use buildat_main_api::{DefinePrivilege, GetPrivileges, HasPrivilege};
use buildat_modkit::testing::TestWorld;
use mlua::{Function, Table, Value};

use crate::LuaSettings;
use crate::mods::{LuaMod, Registrations, Shared};

/// A mod's folder under the system's temp dir, removed when dropped.
pub(crate) struct ModDir(pub PathBuf);

impl ModDir {
    pub(crate) fn new(init: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "buildat-lua-game-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(dir.join("server_lua")).unwrap();
        std::fs::write(dir.join("server_lua/init.lua"), init).unwrap();
        Self(dir)
    }
}

impl Drop for ModDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the module's instance would share, on `kit`.
pub(crate) fn shared(kit: &TestHost) -> Rc<Shared> {
    let host = kit.host();
    Rc::new(Shared::new(host, LuaSettings::default()))
}

/// Loads mod `name` with `init` as its `init.lua`.
pub(crate) fn load(shared: &Rc<Shared>, name: &str, init: &str) -> Result<LuaMod, String> {
    let dir = ModDir::new(init);
    LuaMod::load(shared, name, &dir.0).map_err(|e| e.message)
}

/// Loads a mod that must load.
pub(crate) fn loaded(shared: &Rc<Shared>, init: &str) -> LuaMod {
    load(shared, "hello", init).unwrap_or_else(|e| panic!("the mod does not load: {e}"))
}

/// The error loading `init` gives.
fn load_error(init: &str) -> String {
    let kit = TestHost::new().name("lua");
    match load(&shared(&kit), "hello", init) {
        Ok(_) => panic!("{init} loads"),
        Err(message) => message,
    }
}

/// Runs `code` in the loaded mod's environment (after its load), as a
/// callback would: its results, or the failure's text.
pub(crate) fn eval<R: mlua::FromLuaMulti>(m: &LuaMod, code: &str) -> Result<R, String> {
    let lua = m.vm.lua();
    m.vm.enter(None, || {
        let env: Table = lua.named_registry_value("buildat.env")?;
        let f: Function = buildat_luau::load_text(lua, code.as_bytes(), "=test", env, false)?;
        f.call::<R>(())
    })
    .map_err(|f| f.to_string())
}

#[test]
fn items_tools_and_recipes_are_recorded_from_luantis_forms() {
    let kit = TestHost::new().name("lua");
    let m = loaded(
        &shared(&kit),
        r#"
        buildat.register_craftitem("seed", {description = "Seed", inventory_image = "seed.png",
            stack_max = 50, groups = {food = 1}})
        core.register_craftitem(":flour", {})
        buildat.register_tool("trowel", {description = "Trowel", tool_capabilities = {
            full_punch_interval = 1.0,
            groupcaps = {crumbly = {times = {[1] = 1.5, [3] = 0.5}, uses = 30, maxlevel = 2}}}})
        buildat.register_craft({output = "seed 4", recipe = {{"grass"}}})
        buildat.register_craft({output = "trowel", recipe = {{"stick", ""}, {"stick", "group:stone"}, {"seed"}}})
        buildat.register_craft({type = "shapeless", output = "flour", recipe = {"seed", "group:food"},
            replacements = {{"group:food", "seed 2"}}})
        buildat.register_privilege("gardener", {description = "May garden"})
        buildat.register_privilege("weeder", "May weed")
        "#,
    );
    let reg = m.data.reg.borrow();
    let seed = &reg.items[0];
    assert_eq!(
        (
            seed.name.as_str(),
            seed.description.as_str(),
            seed.texture.as_str()
        ),
        ("seed", "Seed", "seed.png")
    );
    assert_eq!((seed.stack_max, seed.group("food")), (50, 1));
    assert_eq!(
        (seed.kind.clone(), seed.module.as_str()),
        (ItemKind::Craft, "hello")
    );
    let flour = &reg.items[1];
    assert_eq!(
        (
            flour.name.as_str(),
            flour.description.as_str(),
            flour.texture.as_str()
        ),
        ("flour", "Flour", "flour.png")
    );
    let caps = reg.items[2].tool_caps().expect("a tool");
    let crumbly = &caps.groups["crumbly"];
    assert_eq!(crumbly.times, vec![1.5, -1.0, 0.5]);
    assert_eq!((crumbly.uses, crumbly.max_level), (30, 2));
    assert_eq!(reg.items[2].stack_max, 1);
    assert_eq!(
        reg.recipes,
        vec![
            Recipe::shaped("seed", 4, 1, &["grass"]),
            Recipe::shaped(
                "trowel",
                1,
                2,
                &["stick", "", "stick", "group:stone", "seed", ""]
            ),
            Recipe::shapeless("flour", 1, &["seed", "group:food"])
                .with_replacement("group:food", ItemStack::new("seed", 2)),
        ]
    );
    assert_eq!(
        reg.privileges,
        vec![
            ("gardener".to_string(), "May garden".to_string()),
            ("weeder".to_string(), "May weed".to_string())
        ]
    );
}

#[test]
fn bad_definitions_are_lua_errors_naming_the_function_and_the_field() {
    for (init, expected) in [
        (
            r#"buildat.register_craft({output = "seed x", recipe = {{"dirt"}}})"#,
            "register_craft: output 'seed x' is not 'NAME [COUNT]'",
        ),
        (
            r#"buildat.register_craft({output = "seed 0", recipe = {{"dirt"}}})"#,
            "register_craft: output 'seed 0' is not 'NAME [COUNT]'",
        ),
        (
            r#"buildat.register_craft({recipe = {{"dirt"}}})"#,
            "register_craft: output is missing",
        ),
        (
            r#"buildat.register_craft({type = "cooking", output = "seed", recipe = "dirt"})"#,
            "register_craft: type 'cooking' is not supported",
        ),
        (
            r#"buildat.register_craft({output = "seed", recipe = {"dirt", "dirt"}})"#,
            "register_craft: a shaped recipe is 1 to 3 rows",
        ),
        (
            r#"buildat.register_craft({output = "seed", recipe = {{"a"}, {"b"}, {"c"}, {"d"}}})"#,
            "register_craft: a shaped recipe is 1 to 3 rows",
        ),
        (
            r#"buildat.register_craft({output = "seed", recipe = {{"", ""}}})"#,
            "register_craft: the recipe has no ingredient",
        ),
        (
            r#"buildat.register_craft({type = "shapeless", output = "seed", recipe = {"Dirt"}})"#,
            "register_craft: item name \"Dirt\"",
        ),
        (
            r#"buildat.register_craft({type = "shapeless", output = "seed", recipe = {"group:"}})"#,
            "register_craft: ingredient 'group:' names no group",
        ),
        (
            r#"buildat.register_craftitem("Seed", {})"#,
            "register_craftitem: item name \"Seed\"",
        ),
        (
            r#"buildat.register_craftitem("seed", {stack_max = 0})"#,
            "register_craftitem: stack_max is 1 to 65535, not 0",
        ),
        (
            r#"buildat.register_craftitem("seed", {description = {}})"#,
            "register_craftitem: field 'description'",
        ),
        (
            r#"buildat.register_craftitem("seed", {}) buildat.register_craftitem("seed", {})"#,
            "register_craftitem: the mod defines item 'seed' twice",
        ),
        (
            r#"buildat.register_tool("hoe", {tool_capabilities = {groupcaps = {crumbly = {uses = 3}}}})"#,
            "register_tool: groupcaps.crumbly.times is a table {[RATING] = SECONDS}",
        ),
        (
            r#"buildat.register_tool("hoe", {tool_capabilities = {groupcaps = {crumbly = {times = {[0] = 1}}}}})"#,
            "register_tool: groupcaps.crumbly.times: rating 0",
        ),
        (
            r#"buildat.register_privilege("Fly", {})"#,
            "register_privilege: privilege name 'Fly' is not",
        ),
        (
            r#"buildat.setting("a b", "x")"#,
            "setting: key 'a b' is not",
        ),
        (
            r#"buildat.setting("a", {})"#,
            "setting: the default is a string, number or boolean, not table",
        ),
        (
            r#"buildat.give_item({}, "seed")"#,
            "give_item: bad arguments:",
        ),
    ] {
        let error = load_error(init);
        // The place first, as for any Lua error: the modder's file and line.
        let expected = format!("hello/server_lua/init.lua:1: {expected}");
        assert!(error.starts_with(&expected), "{init}\n  gave: {error}");
    }
}

#[test]
fn registering_is_only_while_the_mod_loads() {
    let kit = TestHost::new().name("lua");
    let m = loaded(
        &shared(&kit),
        "function later() buildat.register_craftitem('late', {}) end",
    );
    let error = eval::<()>(&m, "later()").unwrap_err();
    assert!(
        error.contains("register_craftitem may only be called while the mod loads"),
        "{error}"
    );
    assert!(m.data.reg.borrow().items.is_empty());
}

/// A kit answering the items and crafting calls: items kept by name in a
/// registry, every `SetRecipes` recorded.
struct Game {
    world: TestWorld,
    items: Arc<Mutex<ItemRegistry>>,
    sets: Arc<Mutex<Vec<SetRecipes>>>,
    privileges: Arc<Mutex<Vec<DefinePrivilege>>>,
}

fn game() -> Game {
    let world = TestWorld::on(TestHost::new().name("lua").config("hello.text", "hi"));
    let items = Arc::new(Mutex::new(ItemRegistry::default()));
    for name in ["dirt", "grass", "stone"] {
        let def = ItemDef::block(name);
        items.lock().unwrap().items.insert(name.into(), def);
    }
    let kept = Arc::clone(&items);
    world.kit().answer(move |register: RegisterItems| {
        let mut items = kept.lock().unwrap();
        if let Some(bad) = register.items.iter().find(|d| d.name == "refused") {
            return Err(buildat_interface::ModuleError::msg(format!(
                "item {}: refused",
                bad.name
            )));
        }
        for def in register.items {
            items.items.insert(def.name.clone(), def);
        }
        Ok(())
    });
    let kept = Arc::clone(&items);
    world
        .kit()
        .answer(move |_: GetItems| Ok(kept.lock().unwrap().clone()));
    let sets = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&sets);
    world.kit().answer(move |set: SetRecipes| {
        kept.lock().unwrap().push(set);
        Ok(())
    });
    let privileges = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&privileges);
    world.kit().answer(move |define: DefinePrivilege| {
        if define.name == "refused" {
            return Err(buildat_interface::ModuleError::msg("privilege refused"));
        }
        kept.lock().unwrap().push(define);
        Ok(())
    });
    Game {
        world,
        items,
        sets,
        privileges,
    }
}

fn apply_all(shared: &Shared, mods: &[&LuaMod]) {
    let regs: Vec<_> = mods.iter().map(|m| m.data.reg.borrow()).collect();
    let all: Vec<&Registrations> = regs.iter().map(|r| &**r).collect();
    super::apply(shared, &all).unwrap();
}

const GARDEN: &str = r#"
    buildat.register_craftitem("seed", {description = "Seed"})
    buildat.register_craft({output = "seed 4", recipe = {{"grass"}}})
    buildat.register_craft({output = "seed", recipe = {{"marble"}}})
    buildat.register_privilege("gardener", {description = "May garden"})
    local text = buildat.setting("text", "hello", "What /hello answers")
    assert(text == "hi", text)
"#;

#[test]
fn apply_registers_every_mods_game_and_a_reload_replaces_a_mods_recipes() {
    let game = game();
    let shared = shared(game.world.kit());
    let garden = loaded(&shared, GARDEN);
    let other = load(
        &shared,
        "other",
        r#"buildat.register_craft({type = "shapeless", output = "dirt", recipe = {"seed", "seed"}})"#,
    )
    .unwrap();
    apply_all(&shared, &[&garden, &other]);
    let seed = game.items.lock().unwrap().items["seed"].clone();
    assert_eq!(
        (seed.description.as_str(), seed.module.as_str()),
        ("Seed", "hello")
    );
    let sets = game.sets.lock().unwrap().clone();
    assert_eq!(sets.len(), 1);
    assert_eq!(sets[0].owner, "lua");
    // The recipe naming an unknown item is left out, named in the log.
    assert_eq!(
        sets[0].recipes,
        vec![
            Recipe::shaped("seed", 4, 1, &["grass"]),
            Recipe::shapeless("dirt", 1, &["seed", "seed"]),
        ]
    );
    assert!(
        game.world
            .kit()
            .logs()
            .iter()
            .any(|(_, line)| line.contains("recipe left out") && line.contains("marble")),
        "{:?}",
        game.world.kit().logs()
    );
    assert_eq!(
        game.privileges.lock().unwrap()[0],
        DefinePrivilege {
            name: "gardener".into(),
            description: "May garden".into()
        }
    );
    let declared = game.world.declared();
    assert_eq!(declared.len(), 1);
    assert_eq!(declared[0].namespace, "hello");
    assert_eq!(declared[0].settings[0].key, "hello.text");
    assert_eq!(declared[0].settings[0].default, "hello");
    assert_eq!(declared[0].settings[0].help, "What /hello answers");

    // The garden saved with another recipe: the whole set is sent again,
    // with the new recipe instead of the old one (crafting replaces the
    // owner's set: its own test), the other mod's kept.
    let garden = loaded(
        &shared,
        &GARDEN.replace(r#"output = "seed 4""#, r#"output = "seed 2""#),
    );
    apply_all(&shared, &[&garden, &other]);
    apply_all(&shared, &[&garden, &other]);
    let sets = game.sets.lock().unwrap().clone();
    assert_eq!(sets.len(), 3);
    assert_eq!(sets[1], sets[2], "apply is idempotent");
    assert_eq!(
        sets[2].recipes,
        vec![
            Recipe::shaped("seed", 2, 1, &["grass"]),
            Recipe::shapeless("dirt", 1, &["seed", "seed"]),
        ]
    );
    // The other mod gone: its recipe goes with it.
    apply_all(&shared, &[&garden]);
    let last = game.sets.lock().unwrap().last().cloned().unwrap();
    assert_eq!(last.recipes, vec![Recipe::shaped("seed", 2, 1, &["grass"])]);
}

#[test]
fn apply_leaves_out_a_refused_item_or_privilege_and_registers_the_rest() {
    let game = game();
    let shared = shared(game.world.kit());
    let m = loaded(
        &shared,
        r#"buildat.register_craftitem("refused", {}) buildat.register_craftitem("seed", {})
           buildat.register_privilege("refused") buildat.register_privilege("gardener")"#,
    );
    apply_all(&shared, &[&m]);
    assert!(game.items.lock().unwrap().items.contains_key("seed"));
    let defined: Vec<_> = game
        .privileges
        .lock()
        .unwrap()
        .iter()
        .map(|d| d.name.clone())
        .collect();
    assert_eq!(defined, vec!["gardener"]);
    assert!(
        game.world
            .kit()
            .logs()
            .iter()
            .any(|(_, line)| line.contains("item refused left out")),
        "{:?}",
        game.world.kit().logs()
    );
}

#[test]
fn apply_without_the_optional_modules_registers_the_rest() {
    // Only main (privileges) answers: no items, no crafting.
    let kit = TestHost::new().name("lua");
    let defined = Arc::new(Mutex::new(0));
    let count = Arc::clone(&defined);
    kit.answer(move |_: DefinePrivilege| {
        *count.lock().unwrap() += 1;
        Ok(())
    });
    let shared = shared(&kit);
    let m = loaded(
        &shared,
        GARDEN.replace("assert(text == \"hi\", text)", "").as_str(),
    );
    apply_all(&shared, &[&m]);
    assert_eq!(*defined.lock().unwrap(), 1);
    let logs = kit.logs();
    assert!(
        logs.iter()
            .any(|(_, line)| line.contains("no items module is loaded")),
        "{logs:?}"
    );
}

#[test]
fn a_mod_node_becomes_a_block_item_with_its_groups() {
    let game = game();
    let shared = shared(game.world.kit());
    let m = loaded(
        &shared,
        r#"buildat.register_node("bouncer", {description = "Bouncer", groups = {cracky = 2}})
           buildat.register_craft({output = "bouncer", recipe = {{"stone"}}})"#,
    );
    // As lib.rs does before applying: the node's block registered.
    let block = m.data.reg.borrow().nodes[0].definition.clone();
    game.world
        .kit()
        .host()
        .call(&buildat_voxelworld_api::RegisterBlock { block })
        .unwrap();
    apply_all(&shared, &[&m]);
    let item = game.items.lock().unwrap().items["bouncer"].clone();
    assert_eq!(item.voxel(), Some("bouncer"));
    assert_eq!(
        (item.description.as_str(), item.group("cracky")),
        ("Bouncer", 2)
    );
    let sets = game.sets.lock().unwrap().clone();
    assert_eq!(
        sets[0].recipes,
        vec![Recipe::shaped("bouncer", 1, 1, &["stone"])]
    );
}

#[test]
fn settings_are_read_as_the_defaults_type() {
    let kit = TestHost::new()
        .name("lua")
        .config("hello.radius", "7.5")
        .config("hello.on", "false")
        .config("hello.bad", "many");
    let shared = shared(&kit);
    let m = loaded(
        &shared,
        r#"radius = buildat.setting("radius", 5, "How far")
           on = buildat.setting("on", true)
           unset = buildat.setting("unset", "x")"#,
    );
    assert_eq!(eval::<f64>(&m, "return radius").unwrap(), 7.5);
    assert!(!eval::<bool>(&m, "return on").unwrap());
    assert_eq!(eval::<String>(&m, "return unset").unwrap(), "x");
    let error = eval::<Value>(&m, "return buildat.setting('bad', 1)").unwrap_err();
    assert!(
        error.contains("setting: hello.bad is set to 'many', not a number"),
        "{error}"
    );
    let reg = m.data.reg.borrow();
    let keys: Vec<_> = reg
        .settings
        .iter()
        .map(|s| (s.key.as_str(), s.type_name.as_str()))
        .collect();
    assert_eq!(
        keys,
        vec![
            ("hello.radius", "number"),
            ("hello.on", "bool"),
            ("hello.unset", "string")
        ]
    );
}

#[test]
fn privileges_are_asked_of_main() {
    let kit = TestHost::new().name("lua");
    kit.answer(|ask: HasPrivilege| Ok(ask.player == "ann" && ask.privilege != "fly"));
    kit.answer(|ask: GetPrivileges| {
        Ok((ask.player == "ann").then(|| vec!["interact".to_string(), "shout".to_string()]))
    });
    let shared = shared(&kit);
    let m = loaded(&shared, "");
    assert!(
        eval::<bool>(
            &m,
            "return buildat.check_player_privs('ann', {interact = true})"
        )
        .unwrap()
    );
    assert!(
        eval::<bool>(
            &m,
            "return buildat.check_player_privs('ann', 'interact', 'shout')"
        )
        .unwrap()
    );
    let (ok, missing): (bool, Vec<String>) = eval(
        &m,
        "return buildat.check_player_privs('ann', {interact = true, fly = true, noclip = false})",
    )
    .unwrap();
    assert!(!ok);
    assert_eq!(missing, vec!["fly"]);
    let (ok, missing): (bool, Vec<String>) = eval(
        &m,
        "return buildat.check_player_privs('bob', {'interact', 'fly'})",
    )
    .unwrap();
    assert!(!ok);
    assert_eq!(missing, vec!["fly", "interact"]);
    assert!(
        eval::<bool>(
            &m,
            "local p = buildat.get_player_privs('ann') return p.interact and p.shout and not p.fly"
        )
        .unwrap()
    );
    assert!(eval::<bool>(&m, "return next(buildat.get_player_privs('bob')) == nil").unwrap());
}

/// A player's main list of 4 slots, answering `GetInventory` and
/// `Transact` (gives and takes), every transaction recorded.
fn inventory(kit: &TestHost, slots: Vec<Option<ItemStack>>) -> Arc<Mutex<Vec<Transact>>> {
    let main = Arc::new(Mutex::new(slots));
    let seen = Arc::new(Mutex::new(Vec::new()));
    let list = Arc::clone(&main);
    kit.answer(move |get: GetInventory| {
        Ok(
            (get.owner == Owner::Player("ann".into())).then(|| Inventory {
                lists: [(LIST_MAIN.to_string(), list.lock().unwrap().clone())].into(),
            }),
        )
    });
    let list = Arc::clone(&main);
    let record = Arc::clone(&seen);
    kit.answer(move |transact: Transact| {
        record.lock().unwrap().push(transact.clone());
        let mut slots = list.lock().unwrap();
        for change in transact.tx.changes {
            match change {
                Change::Give { stack, .. } => match slots.iter_mut().find(|s| s.is_none()) {
                    Some(slot) => *slot = Some(stack),
                    None => return Ok(TxOutcome::Refused("no room".into())),
                },
                Change::Take { slot, count, .. } => {
                    let held = slots[usize::from(slot.index)].as_mut().unwrap();
                    held.count -= count;
                    if held.count == 0 {
                        slots[usize::from(slot.index)] = None;
                    }
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        Ok(TxOutcome::Done)
    });
    seen
}

#[test]
fn items_are_given_and_taken_through_inventory_transactions() {
    let kit = TestHost::new().name("lua");
    let seen = inventory(
        &kit,
        vec![
            Some(ItemStack::new("seed", 2)),
            None,
            Some(ItemStack::new("dirt", 9)),
            Some(ItemStack::new("seed", 5)),
        ],
    );
    let shared = shared(&kit);
    let m = loaded(&shared, "");
    assert_eq!(
        eval::<u16>(&m, "return buildat.give_item('ann', 'flour', 3)").unwrap(),
        3
    );
    let tx = seen.lock().unwrap()[0].tx.clone();
    assert_eq!(
        tx.changes,
        vec![Change::Give {
            owner: Owner::Player("ann".into()),
            list: LIST_MAIN.into(),
            stack: ItemStack::new("flour", 3),
            overflow: Overflow::Refuse,
        }]
    );
    assert_eq!(
        tx.by.as_deref(),
        Some("hello (module)"),
        "the rollback log names the mod"
    );
    // Full now: refused, with why.
    let (given, why): (u16, String) = eval(&m, "return buildat.give_item('ann', 'flour')").unwrap();
    assert_eq!((given, why.as_str()), (0, "no room"));
    // Takes across slots, at most what there is.
    assert_eq!(
        eval::<u16>(&m, "return buildat.take_item('ann', 'seed', 4)").unwrap(),
        4
    );
    assert_eq!(
        eval::<u16>(&m, "return buildat.take_item('ann', 'seed', 10)").unwrap(),
        3
    );
    let (taken, why): (u16, String) = eval(&m, "return buildat.take_item('ann', 'seed')").unwrap();
    assert_eq!((taken, why.as_str()), (0, "ann has no seed"));
    let listed: String = eval(
        &m,
        r#"local out = {}
           for i, slot in ipairs(buildat.get_inventory("ann")) do
             out[i] = slot and (slot.name .. "=" .. slot.count) or "-"
           end
           return table.concat(out, " ")"#,
    )
    .unwrap();
    assert_eq!(listed, "- flour=3 dirt=9 -");
    assert!(eval::<bool>(&m, "return buildat.get_inventory('bob') == nil").unwrap());
    let error = eval::<()>(&m, "buildat.give_item('ann', 'seed', 0)").unwrap_err();
    assert!(
        error.contains("give_item: the count is 1 to 65535, not 0"),
        "{error}"
    );
}

#[test]
fn a_call_to_a_module_that_is_not_loaded_says_so() {
    let kit = TestHost::new().name("lua");
    let shared = shared(&kit);
    let m = loaded(&shared, "");
    for (code, expected) in [
        (
            "buildat.give_item('ann', 'seed')",
            "give_item: no inventory module is loaded",
        ),
        (
            "buildat.get_inventory('ann')",
            "get_inventory: no inventory module is loaded",
        ),
        (
            "buildat.get_hp('ann')",
            "get_hp: no health module is loaded",
        ),
        ("buildat.heal('ann', 1)", "heal: no health module is loaded"),
    ] {
        let error = eval::<()>(&m, code).unwrap_err();
        assert!(error.contains(expected), "{code}: {error}");
    }
}

#[test]
fn health_goes_through_the_health_module() {
    let kit = TestHost::new().name("lua");
    let damages = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&damages);
    kit.answer(move |damage: Damage| {
        kept.lock().unwrap().push(damage.clone());
        Ok((damage.player == "ann").then_some(20 - damage.amount))
    });
    kit.answer(|heal: Heal| Ok((heal.player == "ann").then_some(15 + heal.amount)));
    kit.answer(|get: GetHealth| {
        Ok((get.player == "ann").then_some(Health {
            hp: 17,
            breath: 10,
            dead: false,
        }))
    });
    let shared = shared(&kit);
    let m = loaded(&shared, "");
    assert_eq!(eval::<u16>(&m, "return buildat.get_hp('ann')").unwrap(), 17);
    assert!(eval::<bool>(&m, "return buildat.get_hp('bob') == nil").unwrap());
    assert_eq!(
        eval::<u16>(&m, "return buildat.damage('ann', 3, 'spikes')").unwrap(),
        17
    );
    assert!(eval::<bool>(&m, "return buildat.damage('bob', 3) == nil").unwrap());
    assert_eq!(
        eval::<u16>(&m, "return buildat.heal('ann', 2)").unwrap(),
        17
    );
    let damages = damages.lock().unwrap().clone();
    assert_eq!(damages[0].cause, Cause::Module("hello:spikes".into()));
    assert_eq!(damages[1].cause, Cause::Module("hello".into()));
    let error = eval::<()>(&m, "buildat.damage('ann', -1)").unwrap_err();
    assert!(
        error.contains("damage: the amount is 0 to 65535, not -1"),
        "{error}"
    );
}

#[test]
fn a_shaped_recipes_rows_are_padded_to_its_widest() {
    let kit = TestHost::new().name("lua");
    let m = loaded(
        &shared(&kit),
        r#"buildat.register_craft({output = "seed", recipe = {{"dirt"}, {"dirt", "grass", "dirt"}}})"#,
    );
    let reg = m.data.reg.borrow();
    assert_eq!(
        reg.recipes[0].shape,
        RecipeShape::Shaped {
            width: 3,
            items: ["dirt", "", "", "dirt", "grass", "dirt"]
                .map(String::from)
                .to_vec(),
        }
    );
}
