//! Mod storage on modkit's `TestWorld` (voxelworld's values by their
//! rules): what a mod writes is in the world's values at once, a new VM
//! of the mod (a reload) reads it back, bad keys are Lua errors.

use buildat_interface::testing::TestHost;
use buildat_modkit::testing::TestWorld;
use buildat_voxelworld_api::{PutValues, ValueWrite};

use crate::api::game::tests::{eval, load, loaded, shared};

fn world() -> TestWorld {
    TestWorld::on(TestHost::new().name("lua"))
}

#[test]
fn storage_is_written_through_to_the_worlds_values_and_read_after_a_reload() {
    let world = world();
    let shared = shared(world.kit());
    let m = loaded(
        &shared,
        r#"local s = buildat.get_mod_storage()
           assert(s == buildat.get_mod_storage())
           assert(s:get_string("greeting") == "" and s:get("greeting") == nil)
           assert(not s:contains("count") and s:get_int("count") == 0)
           s:set_string("greeting", "hi")
           s:set_int("count", s:get_int("count") + 3)
           s:set_float("ratio", 0.25)"#,
    );
    let value = |key: &str| world.value("lua/hello", key);
    assert_eq!(value("greeting").as_deref(), Some(&b"hi"[..]));
    assert_eq!(value("count").as_deref(), Some(&b"3"[..]));
    assert_eq!(value("ratio").as_deref(), Some(&b"0.25"[..]));
    drop(m);
    // The mod loaded again (a saved file): a new VM reads what was kept.
    let m = loaded(
        &shared,
        r#"local s = buildat.get_mod_storage()
           s:set_int("count", s:get_int("count") + 1)"#,
    );
    assert_eq!(value("count").as_deref(), Some(&b"4"[..]));
    let (count, ratio, greeting, has): (i64, f64, String, bool) = eval(
        &m,
        r#"local s = buildat.get_mod_storage()
           return s:get_int("count"), s:get_float("ratio"), s:get_string("greeting"), s:contains("ratio")"#,
    )
    .unwrap();
    assert_eq!(
        (count, ratio, greeting.as_str(), has),
        (4, 0.25, "hi", true)
    );
    // Luanti's table form and the keys.
    let listed: String = eval(
        &m,
        r#"local s = buildat.get_mod_storage()
           local t = s:to_table().fields
           return table.concat(s:get_keys(), ",") .. " " .. t.greeting .. " " .. t.count"#,
    )
    .unwrap();
    assert_eq!(listed, "count,greeting,ratio hi 4");
    // An empty string removes a key.
    eval::<()>(&m, "buildat.get_mod_storage():set_string('greeting', '')").unwrap();
    assert_eq!(value("greeting"), None);
    assert!(!eval::<bool>(&m, "return buildat.get_mod_storage():contains('greeting')").unwrap());
    // Another mod has its own space.
    let other = load(&shared, "other", "").unwrap();
    assert_eq!(
        eval::<i64>(&other, "return buildat.get_mod_storage():get_int('count')").unwrap(),
        0
    );
}

#[test]
fn a_storage_read_sees_values_kept_before_and_pages_through_many() {
    let world = world();
    let writes = (0..1500)
        .map(|i| ValueWrite {
            space: "lua/hello".into(),
            key: format!("k{i:04}"),
            value: Some(i.to_string().into_bytes()),
            only_if_absent: false,
        })
        .collect();
    assert!(world.kit().host().call(&PutValues { writes }).unwrap());
    let shared = shared(world.kit());
    let m = loaded(&shared, "");
    let (count, last): (usize, i64) = eval(
        &m,
        r#"local s = buildat.get_mod_storage()
           return #s:get_keys(), s:get_int("k1499")"#,
    )
    .unwrap();
    assert_eq!((count, last), (1500, 1499));
}

#[test]
fn bad_keys_and_values_are_lua_errors() {
    let world = world();
    let shared = shared(world.kit());
    let m = loaded(&shared, "");
    let long = "k".repeat(600);
    let error = eval::<()>(
        &m,
        &format!("buildat.get_mod_storage():set_string('{long}', 'x')"),
    )
    .unwrap_err();
    assert!(
        error.contains("storage:set_string: a value's key must be 1 to 512 bytes"),
        "{error}"
    );
    let error = eval::<()>(&m, "buildat.get_mod_storage():set_int('n', 0/0)").unwrap_err();
    assert!(error.contains("storage:set_int"), "{error}");
    let error = eval::<()>(&m, "buildat.get_mod_storage():set_float('n', math.huge)").unwrap_err();
    assert!(error.contains("storage:set_float"), "{error}");
}
