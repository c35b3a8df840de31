//! The default game's chat and inventory screens (the game's Lua in
//! `modules/main`, `modules/inventory` and `modules/health` on
//! `buildat.ui`'s widgets):
//!
//! - in the runtime, no network: the game's Lua as the server ships it,
//!   fed the server's packets and the frontend's messages: T and / open
//!   the chat line, a submitted line is said (`main:chat`), every
//!   `main:chat_line` is shown; the hotbar shows the inventory's first 8
//!   slots; I opens the inventory screen (`main` beside `craft` and its
//!   result); a drag asks the server (`inventory:act` move) and changes
//!   nothing until its `inventory:lists`; a click on the result crafts; a
//!   used chest's screen opens once the server lets it and closing it
//!   (Esc, or I) closes the chest; a used crafting table's screen shows
//!   its 3 x 3 grid and result, which a click or a drag crafts into the
//!   player's main list; the health bar follows `health:state`;
//! - through the real server and real window clients under Xvfb, driven
//!   by xdotool: a line typed into one window's chat (T, then typing, then
//!   Enter; and a command after /) reaches a second client (a headless
//!   bot); the inventory screen opens (I), a stack dragged with the mouse
//!   moves (the server's answer and `inventory:lists` show it in its new
//!   slot), wood dragged into the craft grid and a click on the result
//!   make planks, and after the window left, a bot of the same player
//!   finds both there; a chest a bot placed before the window's eyes,
//!   used with the middle button, opens its screen, a stack dragged into
//!   it moves (the server's answer and the chest's lists), Esc closes it,
//!   and a bot opening the chest then finds the stack.
//!
//! The window tests need a Vulkan driver (lavapipe on CI) and `Xvfb` and
//! `xdotool`: without them they fail on CI (`CI` set) and are skipped
//! elsewhere, saying so.

use std::process::Command;
use std::time::Duration;

use buildat_client::frontend::{Button, FromFrontend, Target};
use buildat_client::sandbox::{Runtime, Slots, Stack, WidgetKind};

use crate::common::game::{Running, Setup};
use crate::common::lua::{errors, game};
use crate::common::xvfb::{self, Xvfb, grid_layout, slot_centre};
use crate::common::{Server, copy_dir, repo_root};

fn put_s1(out: &mut Vec<u8>, s: &str) {
    out.push(u8::try_from(s.len()).expect("short"));
    out.extend(s.as_bytes());
}

fn put_s2(out: &mut Vec<u8>, s: &str) {
    out.extend(u16::try_from(s.len()).expect("short").to_le_bytes());
    out.extend(s.as_bytes());
}

/// An owner as `inventory:*` packets write it: a player by name, or a
/// voxel.
enum Owner<'a> {
    Player(&'a str),
    Voxel([i32; 3]),
}

fn put_owner(out: &mut Vec<u8>, owner: &Owner) {
    match owner {
        Owner::Player(name) => {
            out.push(0);
            put_s1(out, name);
        }
        Owner::Voxel(v) => {
            out.push(1);
            for c in v {
                out.extend(c.to_le_bytes());
            }
        }
    }
}

fn put_slot(out: &mut Vec<u8>, slot: Option<(&str, u16)>) {
    match slot {
        None => out.push(0),
        Some((name, count)) => {
            out.push(1);
            put_s2(out, name);
            out.extend(count.to_le_bytes());
            out.extend(0u16.to_le_bytes()); // wear
            out.extend(0u16.to_le_bytes()); // metadata entries
        }
    }
}

/// Filled slots of a list: 0-based index, item name, count.
type Filled<'a> = &'a [(u16, &'a str, u16)];

/// `inventory:lists`: each list its name, size and filled slots.
fn lists(owner: &Owner, lists: &[(&str, u16, Filled)]) -> Vec<u8> {
    let mut out = Vec::new();
    put_owner(&mut out, owner);
    out.push(u8::try_from(lists.len()).expect("few"));
    for (name, size, filled) in lists {
        put_s1(&mut out, name);
        out.extend(size.to_le_bytes());
        for i in 0..*size {
            let slot = filled
                .iter()
                .find(|(at, _, _)| *at == i)
                .map(|(_, item, count)| (*item, *count));
            put_slot(&mut out, slot);
        }
    }
    out
}

/// A slot reference as `inventory:act` writes it.
fn slot_ref(owner: &Owner, list: &str, index: u16) -> Vec<u8> {
    let mut out = Vec::new();
    put_owner(&mut out, owner);
    put_s1(&mut out, list);
    out.extend(index.to_le_bytes());
    out
}

/// The `inventory:act` packets sent, without their sequence numbers.
fn acts(rt: &Runtime) -> Vec<Vec<u8>> {
    rt.take_outgoing()
        .into_iter()
        .filter(|(name, _)| name == "inventory:act")
        .map(|(_, data)| data[4..].to_vec())
        .collect()
}

fn stack(name: &str, count: u32) -> Option<Stack> {
    Some(Stack {
        name: name.into(),
        count,
        wear: 0,
    })
}

/// The slots of grid `id` on the screen drawn (the last opened).
fn grid(rt: &Runtime, id: &str) -> Slots {
    let state = rt.ui_state();
    let screen = state.screens.last().expect("a screen is open");
    screen
        .widgets
        .iter()
        .find_map(|w| match &w.kind {
            WidgetKind::Slots {
                id: grid, slots, ..
            } if grid == id => Some(slots.clone()),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no grid {id} on {screen:?}"))
}

/// The screen drawn (the last opened): its id and its grids' ids, columns
/// and slot counts.
fn top_screen_grids(rt: &Runtime) -> (String, Vec<(String, u32, usize)>) {
    let state = rt.ui_state();
    let screen = state.screens.last().expect("a screen is open");
    let grids = screen
        .widgets
        .iter()
        .filter_map(|w| match &w.kind {
            WidgetKind::Slots {
                id, columns, slots, ..
            } => Some((id.clone(), *columns, slots.len())),
            _ => None,
        })
        .collect();
    (screen.id.clone(), grids)
}

fn slot_move(from: (&str, usize), to: (&str, usize), screen: &str) -> FromFrontend {
    FromFrontend::SlotMove {
        from: (from.0.into(), from.1),
        to: (to.0.into(), to.1),
        count: None,
        screen: screen.into(),
    }
}

#[test]
fn the_game_s_chat_opens_with_t_and_slash_says_lines_and_shows_every_chat_line() {
    let (rt, log) = game(&["main"]);
    assert!(rt.dispatch_key("T", true).is_empty());
    let opened = rt.ui_state().chat_open.expect("T opens the chat line");
    assert_eq!(opened.1, "");
    assert!(rt.dispatch_key("Slash", true).is_empty());
    let again = rt.ui_state().chat_open.expect("/ opens the chat line");
    assert_eq!(again.1, "/");
    assert!(again.0 > opened.0, "opened again");
    assert!(
        rt.dispatch_ui(&FromFrontend::ChatSubmit("hello there".into()))
            .is_empty()
    );
    assert!(
        rt.dispatch_ui(&FromFrontend::ChatSubmit("   ".into()))
            .is_empty()
    );
    let said: Vec<(String, Vec<u8>)> = rt
        .take_outgoing()
        .into_iter()
        .filter(|(name, _)| name == "main:chat")
        .collect();
    assert_eq!(
        said,
        [("main:chat".to_string(), b"hello there".to_vec())],
        "a line is said, a blank one is not"
    );
    assert!(
        rt.dispatch_packet("main:chat_line", b"<bob> hi all")
            .is_empty()
    );
    let lines = rt.ui_state().chat_lines;
    assert_eq!(lines.last().map(|l| l.text.as_str()), Some("<bob> hi all"));
    assert!(errors(&log).is_empty(), "{:?}", errors(&log));
}

#[test]
fn the_health_bar_follows_the_server_s_health_state() {
    let (rt, log) = game(&["health"]);
    assert_eq!(rt.ui_state().health, None, "no bar before the state");
    let state: Vec<u8> = [17u16, 20, 10, 10]
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    assert!(rt.dispatch_packet("health:state", &state).is_empty());
    assert_eq!(rt.ui_state().health, Some((17, 20)));
    assert!(errors(&log).is_empty(), "{:?}", errors(&log));
}

#[test]
fn the_inventory_screen_asks_the_server_for_each_move_and_shows_only_its_answer() {
    let (rt, log) = game(&["inventory", "main"]);
    let me = Owner::Player("tester");
    let main_dirt: Filled = &[(0, "dirt", 5), (1, "stick", 2)];
    let packet = lists(&me, &[("main", 32, main_dirt), ("craft", 4, &[])]);
    assert!(rt.dispatch_packet("inventory:lists", &packet).is_empty());
    // The hotbar: the first 8 slots as items.
    let hotbar = rt.ui_state().hotbar_slots.expect("the hotbar shows items");
    assert_eq!(hotbar.len(), 8);
    assert_eq!(hotbar[0], stack("dirt", 5));
    assert_eq!(hotbar[1], stack("stick", 2));
    assert_eq!(hotbar[2], None);

    // I opens main (4 x 8) beside craft (2 x 2) and its result.
    assert!(rt.dispatch_key("I", true).is_empty());
    assert!(rt.dispatch_key("I", false).is_empty());
    let (screen, columns) = top_screen_grids(&rt);
    assert_eq!(screen, "inventory", "I opens a screen");
    assert_eq!(
        columns,
        [
            ("me/main".to_string(), 8, 32),
            ("me/craft".to_string(), 2, 4),
            ("me/=>".to_string(), 1, 1)
        ]
    );
    assert_eq!(grid(&rt, "me/main")[0], stack("dirt", 5));

    // A drag asks the server; nothing moves until its lists come.
    let moved = slot_move(("me/main", 0), ("me/main", 9), "inventory");
    assert!(rt.dispatch_ui(&moved).is_empty());
    let mut expected = vec![0u8]; // move
    expected.extend(slot_ref(&me, "main", 0));
    expected.extend(slot_ref(&me, "main", 9));
    expected.extend(5u16.to_le_bytes());
    assert_eq!(acts(&rt), [expected]);
    assert_eq!(
        grid(&rt, "me/main")[0],
        stack("dirt", 5),
        "not before the server says"
    );
    let after: Filled = &[(9, "dirt", 5), (1, "stick", 2)];
    let packet = lists(&me, &[("main", 32, after), ("craft", 4, &[])]);
    assert!(rt.dispatch_packet("inventory:lists", &packet).is_empty());
    let main = grid(&rt, "me/main");
    assert_eq!((main[0].clone(), main[9].clone()), (None, stack("dirt", 5)));
    assert_eq!(rt.ui_state().hotbar_slots.expect("hotbar")[0], None);

    // From the hotbar into the craft grid.
    let to_craft = slot_move(("hotbar", 1), ("me/craft", 0), "inventory");
    assert!(rt.dispatch_ui(&to_craft).is_empty());
    let mut expected = vec![0u8];
    expected.extend(slot_ref(&me, "main", 1));
    expected.extend(slot_ref(&me, "craft", 0));
    expected.extend(2u16.to_le_bytes());
    assert_eq!(acts(&rt), [expected]);

    // The preview shows in the result slot; a click on it crafts into the
    // first empty slot of main.
    let mut preview = Vec::new();
    put_owner(&mut preview, &me);
    put_slot(&mut preview, Some(("torch", 4)));
    assert!(rt.dispatch_packet("inventory:preview", &preview).is_empty());
    assert_eq!(grid(&rt, "me/=>"), [stack("torch", 4)]);
    let click = FromFrontend::SlotClick {
        grid: "me/=>".into(),
        index: 0,
        button: Button::Left,
        screen: "inventory".into(),
    };
    assert!(rt.dispatch_ui(&click).is_empty());
    let mut expected = vec![2u8]; // craft
    put_owner(&mut expected, &me);
    expected.extend(slot_ref(&me, "main", 0));
    assert_eq!(acts(&rt), [expected]);

    // Esc closes it; I opens it again.
    assert!(
        rt.dispatch_ui(&FromFrontend::ScreenClosed("inventory".into()))
            .is_empty()
    );
    assert!(rt.ui_state().screens.is_empty());
    assert!(rt.dispatch_key("I", true).is_empty());
    assert_eq!(grid(&rt, "me/main")[9], stack("dirt", 5));
    assert!(errors(&log).is_empty(), "{:?}", errors(&log));
}

#[test]
fn a_used_chest_opens_its_screen_once_the_server_lets_it_and_closing_closes_it() {
    let (rt, log) = game(&["inventory", "main"]);
    let me = Owner::Player("tester");
    let chest = Owner::Voxel([3, -4, 5]);
    let packet = lists(&me, &[("main", 32, &[(0, "dirt", 5)]), ("craft", 4, &[])]);
    assert!(rt.dispatch_packet("inventory:lists", &packet).is_empty());
    let target = Some(Target {
        voxel: [3, -4, 5],
        before: [3, -3, 5],
    });
    assert!(rt.dispatch_click(Button::Middle, target).is_empty());
    let sent = rt.take_outgoing();
    let names: Vec<&str> = sent.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["main:use", "inventory:act"]);
    let open = &sent[1].1;
    let seq = open[..4].to_vec();
    let mut expected = vec![3u8]; // open
    for c in [3i32, -4, 5] {
        expected.extend(c.to_le_bytes());
    }
    assert_eq!(open[4..], expected[..]);
    assert!(rt.ui_state().screens.is_empty(), "not before the answer");
    // The chest's lists, then the answer.
    let packet = lists(&chest, &[("main", 32, &[(3, "stone", 7)])]);
    assert!(rt.dispatch_packet("inventory:lists", &packet).is_empty());
    let mut answer = seq.clone();
    answer.push(1);
    assert!(rt.dispatch_packet("inventory:answer", &answer).is_empty());
    let state = rt.ui_state();
    let screen = state.screens.last().expect("the chest's screen");
    assert_eq!(screen.id, "voxel:3,-4,5");
    assert_eq!(grid(&rt, "voxel:3,-4,5/main")[3], stack("stone", 7));
    assert_eq!(grid(&rt, "me/main")[0], stack("dirt", 5));
    // From the chest into my main list.
    let take = slot_move(("voxel:3,-4,5/main", 3), ("me/main", 1), "voxel:3,-4,5");
    assert!(rt.dispatch_ui(&take).is_empty());
    let mut expected = vec![0u8];
    expected.extend(slot_ref(&chest, "main", 3));
    expected.extend(slot_ref(&me, "main", 1));
    expected.extend(7u16.to_le_bytes());
    assert_eq!(acts(&rt), [expected]);
    // Esc: the chest is closed.
    let closed = FromFrontend::ScreenClosed("voxel:3,-4,5".into());
    assert!(rt.dispatch_ui(&closed).is_empty());
    let mut expected = vec![4u8]; // close
    for c in [3i32, -4, 5] {
        expected.extend(c.to_le_bytes());
    }
    assert_eq!(acts(&rt), [expected.clone()]);
    // Opened again, I closes it.
    assert!(rt.dispatch_click(Button::Middle, target).is_empty());
    let sent = rt.take_outgoing();
    let mut answer = sent[1].1[..4].to_vec();
    answer.push(1);
    assert!(rt.dispatch_packet("inventory:answer", &answer).is_empty());
    assert_eq!(rt.ui_state().screens.len(), 1);
    assert!(rt.dispatch_key("I", true).is_empty());
    assert!(
        rt.ui_state().screens.is_empty(),
        "I closes the chest's screen"
    );
    assert_eq!(acts(&rt), [expected]);
    // A refused open opens nothing.
    assert!(rt.dispatch_click(Button::Middle, target).is_empty());
    let sent = rt.take_outgoing();
    let mut answer = sent[1].1[..4].to_vec();
    answer.push(0);
    answer.extend(b"too far");
    assert!(rt.dispatch_packet("inventory:answer", &answer).is_empty());
    assert!(rt.ui_state().screens.is_empty());
    assert!(errors(&log).is_empty(), "{:?}", errors(&log));
}

#[test]
fn a_used_crafting_table_shows_its_3_by_3_grid_and_its_result_crafts_into_main() {
    let (rt, log) = game(&["inventory", "main"]);
    let me = Owner::Player("tester");
    let table = Owner::Voxel([-2, 7, 1]);
    let packet = lists(&me, &[("main", 32, &[(0, "dirt", 5)]), ("craft", 4, &[])]);
    assert!(rt.dispatch_packet("inventory:lists", &packet).is_empty());
    let target = Some(Target {
        voxel: [-2, 7, 1],
        before: [-2, 8, 1],
    });
    assert!(rt.dispatch_key("E", true).is_empty());
    assert!(rt.dispatch_click(Button::Left, target).is_empty());
    assert!(rt.dispatch_key("E", false).is_empty());
    let sent = rt.take_outgoing();
    let names: Vec<&str> = sent.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["main:use", "inventory:act"], "E + click uses");
    let table_lists: Filled = &[(0, "planks", 1), (4, "planks", 1)];
    let packet = lists(&table, &[("craft", 9, table_lists)]);
    assert!(rt.dispatch_packet("inventory:lists", &packet).is_empty());
    let mut preview = Vec::new();
    put_owner(&mut preview, &table);
    put_slot(&mut preview, Some(("stick", 4)));
    assert!(rt.dispatch_packet("inventory:preview", &preview).is_empty());
    let mut answer = sent[1].1[..4].to_vec();
    answer.push(1);
    assert!(rt.dispatch_packet("inventory:answer", &answer).is_empty());
    let (screen, grids) = top_screen_grids(&rt);
    assert_eq!(screen, "voxel:-2,7,1", "the table's screen");
    assert_eq!(
        grids,
        [
            ("voxel:-2,7,1/craft".to_string(), 3, 9),
            ("voxel:-2,7,1/=>".to_string(), 1, 1),
            ("me/main".to_string(), 8, 32)
        ]
    );
    assert_eq!(grid(&rt, "voxel:-2,7,1/=>"), [stack("stick", 4)]);
    // Its result dragged onto slot 3 of main crafts into that slot.
    let take = slot_move(("voxel:-2,7,1/=>", 0), ("me/main", 2), "voxel:-2,7,1");
    assert!(rt.dispatch_ui(&take).is_empty());
    let mut expected = vec![2u8]; // craft
    put_owner(&mut expected, &table);
    expected.extend(slot_ref(&me, "main", 2));
    assert_eq!(acts(&rt), [expected]);
    // A click on it crafts into the first empty slot of main.
    let click = FromFrontend::SlotClick {
        grid: "voxel:-2,7,1/=>".into(),
        index: 0,
        button: Button::Left,
        screen: "voxel:-2,7,1".into(),
    };
    assert!(rt.dispatch_ui(&click).is_empty());
    let mut expected = vec![2u8];
    put_owner(&mut expected, &table);
    expected.extend(slot_ref(&me, "main", 1));
    assert_eq!(acts(&rt), [expected]);
    assert!(errors(&log).is_empty(), "{:?}", errors(&log));
}

/// A window client under `xvfb` named `name`, logging at -v.
fn window(setup: &Setup, address: &str, xvfb: &Xvfb, name: &str) -> Running {
    Running::spawn(xvfb.client(
        setup,
        address,
        &["--name", name, "--quit-after", "90", "-v"],
    ))
}

/// Waits for the window client to spawn and its window to show; the
/// window's id, focused.
fn window_ready(client: &mut Running, xvfb: &Xvfb) -> String {
    assert!(
        client
            .wait_for("spawned at", Duration::from_secs(90))
            .is_some(),
        "the windowed client never spawned"
    );
    let id = xvfb
        .window("Buildat", Duration::from_secs(30))
        .expect("the client's window");
    xvfb.xdotool(&["windowfocus", &id]);
    // Let a few frames pass (the first ones load the world).
    std::thread::sleep(Duration::from_secs(2));
    id
}

/// Waits for `needle` among the client's lines; panics with what it
/// said (killing it).
fn expect(client: &mut Running, needle: &str, what: &str) -> String {
    if let Some(line) = client.wait_for(needle, Duration::from_secs(60)) {
        return line;
    }
    let said = std::mem::replace(client, Running::spawn(Command::new("true")))
        .finish(Duration::from_secs(1))
        .1;
    panic!("{what}: no line with {needle:?}; the client said:\n{said}")
}

/// `expect` on `client`, showing what `other` said too when it fails.
fn expect_seeing(client: &mut Running, other: &mut Running, needle: &str, what: &str) -> String {
    if let Some(line) = client.wait_for(needle, Duration::from_secs(60)) {
        return line;
    }
    let said = std::mem::replace(other, Running::spawn(Command::new("true")))
        .finish(Duration::from_secs(1))
        .1;
    eprintln!("--- the other client said:\n{said}");
    expect(client, needle, what)
}

/// Waits for the headless reader's chat line, or panics with its output.
const READER: &str = r#"
local main = require("buildat/module/main")
local log = buildat.Logger("reader")
main.on_spawn(function()
    log:info("ready")
end)
main.on_chat(function(line)
    log:info("heard [" .. line .. "]")
end)
"#;

#[test]
fn a_line_typed_in_a_window_s_chat_reaches_another_client() {
    let Some((_turn, setup, _server, address, xvfb)) = xvfb::window_game(Setup::new) else {
        return;
    };
    let reader_script = setup.script("reader.lua", READER);
    let mut reader = Running::spawn(setup.command(&address, "reader", &reader_script, &[]));
    expect(&mut reader, "reader: ready", "the reader spawns");

    let mut writer = window(&setup, &address, &xvfb, "writer");
    let id = window_ready(&mut writer, &xvfb);
    // T opens the line; what is typed then is said on Enter.
    xvfb.xdotool(&["key", "t"]);
    std::thread::sleep(Duration::from_millis(500));
    xvfb.xdotool(&["type", "--delay", "60", "hello from the window"]);
    xvfb.xdotool(&["key", "Return"]);
    let heard = expect_seeing(
        &mut reader,
        &mut writer,
        "reader: heard [",
        "the typed line arrives",
    );
    assert!(
        heard.ends_with("heard [<writer> hello from the window]"),
        "{heard}"
    );
    // / opens it starting with "/": a command (/me tells everyone).
    std::thread::sleep(Duration::from_millis(500));
    xvfb.xdotool(&["windowfocus", &id]);
    xvfb.xdotool(&["key", "slash"]);
    std::thread::sleep(Duration::from_millis(500));
    xvfb.xdotool(&["type", "--delay", "60", "me waves"]);
    xvfb.xdotool(&["key", "Return"]);
    let heard = expect_seeing(
        &mut reader,
        &mut writer,
        "reader: heard [*",
        "the command's line arrives",
    );
    assert!(heard.ends_with("heard [* writer waves]"), "{heard}");
    // The writer shows it too.
    expect(&mut writer, "chat: * writer waves", "the writer's own chat");
    assert!(writer.running(), "the window closed");
    let (_, stderr) = writer.finish(Duration::from_secs(1));
    assert!(!stderr.contains("ERROR"), "{stderr}");
}

/// The default game's Setup with the survival modules (items, crafting,
/// inventory, survival).
fn survival_setup() -> Setup {
    let setup = Setup::new();
    for module in ["items", "crafting", "inventory", "survival"] {
        copy_dir(
            &repo_root().join("modules").join(module),
            &setup.modules.join(module),
        );
    }
    setup
}

/// A window client "player" of the survival game whose inventory came and
/// then got 5 dirt (given on the server's console) in slot 1; its
/// window's id, focused.
fn player_with_dirt(
    setup: &Setup,
    address: &str,
    server: &mut Server,
    xvfb: &Xvfb,
) -> (Running, String) {
    let mut player = window(setup, address, xvfb, "player");
    expect(
        &mut player,
        "lists of me main:",
        "the player's inventory comes",
    );
    server
        .command(
            "give player dirt 5",
            &["gave 5 dirt"],
            Duration::from_secs(30),
        )
        .expect("the console gives dirt");
    expect(
        &mut player,
        "lists of me main: 1=dirt*5",
        "the dirt arrives",
    );
    let id = window_ready(&mut player, xvfb);
    (player, id)
}

/// Where the window laid out grid `grid` of the open screen `screen`
/// (it logs it at -v when the screen is first drawn).
fn screen_grid(player: &mut Running, screen: &str, grid: &str) -> (f64, f64, f64) {
    grid_layout(&expect(
        player,
        &format!("ui: screen {screen} grid {grid} at "),
        "the window lays the screen out",
    ))
}

/// Drags with the left button from one window pixel to another, in
/// steps as a hand does.
fn drag(xvfb: &Xvfb, window: &str, from: (String, String), to: (String, String)) {
    let step = |a: &str, b: &str| {
        let (a, b): (f64, f64) = (a.parse().expect("x"), b.parse().expect("x"));
        format!("{}", ((a + b) / 2.0).round())
    };
    let middle = (step(&from.0, &to.0), step(&from.1, &to.1));
    xvfb.xdotool(&["mousemove", "--window", window, &from.0, &from.1]);
    std::thread::sleep(Duration::from_millis(300));
    xvfb.xdotool(&["mousedown", "1"]);
    std::thread::sleep(Duration::from_millis(300));
    xvfb.xdotool(&["mousemove", "--window", window, &middle.0, &middle.1]);
    std::thread::sleep(Duration::from_millis(200));
    xvfb.xdotool(&["mousemove", "--window", window, &to.0, &to.1]);
    std::thread::sleep(Duration::from_millis(300));
    xvfb.xdotool(&["mouseup", "1"]);
    std::thread::sleep(Duration::from_millis(300));
}

/// Reads slots 1 and 10 of the main list of `player`, as a bot of that
/// player.
const CHECKER: &str = r#"
local inv = require("buildat/module/inventory")
local log = buildat.Logger("checker")
inv.on_change(function(owner, list)
    if owner == "me" and list == "main" then
        local slots = inv.list("me", "main")
        local function show(i)
            local s = slots[i]
            return s and (s.name .. "*" .. s.count) or "empty"
        end
        log:info("slot 1 " .. show(1) .. ", slot 10 " .. show(10))
        buildat.disconnect()
    end
end)
"#;

#[test]
fn the_inventory_screen_opens_a_dragged_stack_moves_and_a_click_on_the_result_crafts() {
    let Some((_turn, setup, mut server, address, xvfb)) = xvfb::window_game(survival_setup) else {
        return;
    };
    let (mut player, id) = player_with_dirt(&setup, &address, &mut server, &xvfb);

    // I opens the screen; the window logs where its grids are.
    xvfb.xdotool(&["key", "i"]);
    expect(&mut player, "screen inventory opened", "I opens the screen");
    let main = screen_grid(&mut player, "inventory", "me/main");
    let craft = screen_grid(&mut player, "inventory", "me/craft");
    let result = screen_grid(&mut player, "inventory", "me/=>");
    std::thread::sleep(Duration::from_millis(500));
    // Slot 1 (row 0, column 0) to slot 10 (row 1, column 1).
    drag(
        &xvfb,
        &id,
        slot_centre(main, 0.0, 0.0),
        slot_centre(main, 1.0, 1.0),
    );

    // The server's answer: the move done, and its lists with the dirt in
    // slot 10.
    expect(
        &mut player,
        "move me main 1 -> me main 10 (5): done",
        "the server accepts the move",
    );
    expect(
        &mut player,
        "lists of me main: 10=dirt*5",
        "the server's lists show the stack moved",
    );

    // Crafting: wood dragged into the craft grid, a click on the result
    // (4 planks) puts them into the first empty slot of main.
    server
        .command(
            "give player wood 1",
            &["gave 1 wood"],
            Duration::from_secs(30),
        )
        .expect("the console gives wood");
    expect(
        &mut player,
        "lists of me main: 1=wood*1 10=dirt*5",
        "the wood arrives",
    );
    drag(
        &xvfb,
        &id,
        slot_centre(main, 0.0, 0.0),
        slot_centre(craft, 1.0, 0.0),
    );
    expect(
        &mut player,
        "lists of me craft: 2=wood*1",
        "the wood moves into the craft grid",
    );
    // The preview follows the lists.
    std::thread::sleep(Duration::from_secs(1));
    xvfb.click_at(&id, &slot_centre(result, 0.0, 0.0));
    expect(
        &mut player,
        "craft me into me main 1: done",
        "the server crafts",
    );
    expect(
        &mut player,
        "lists of me main: 1=planks*4 10=dirt*5",
        "the planks arrive",
    );
    assert!(player.running(), "the window closed");
    let (_, stderr) = player.finish(Duration::from_secs(1));
    assert!(!stderr.contains("ERROR"), "{stderr}");

    // What the server stored: a bot of the same player finds it there.
    let checker = setup.script("checker.lua", CHECKER);
    let out = setup
        .command(&address, "player", &checker, &[])
        .output()
        .expect("run the checker");
    let said = crate::common::game::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("checker: slot 1 planks*4, slot 10 dirt*5"),
        "{said}"
    );
}

/// Places the chest it was given at the spawn point's eye height, two
/// voxels along +x (where a player who just spawned looks), and prints
/// where.
const PLACER: &str = r#"
local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local log = buildat.Logger("placer")
main.on_refused(function(reason)
    log:error("refused: " .. tostring(reason))
end)
main.on_spawn(function(_, x, y, z)
    local tx, ty, tz = math.floor(x) + 2, math.floor(y + 1.62), math.floor(z)
    local function try()
        local slot = inv.find("chest")
        local here = buildat.world.get_voxel(tx, ty, tz)
        if slot == nil or here == nil then
            buildat.set_timeout(0.2, try)
            return
        end
        if here ~= "air" or buildat.world.get_voxel(tx - 1, ty, tz) ~= "air" then
            log:error("no air before the spawn point's eyes: " .. here)
            buildat.disconnect()
            return
        end
        main.on_edit(function(_, ex, ey, ez, name)
            if ex == tx and ey == ty and ez == tz and string.find(name, "^chest") then
                log:info("chest at " .. tx .. "," .. ty .. "," .. tz)
                buildat.set_timeout(0.5, buildat.disconnect)
            end
        end)
        main.wield(slot - 1)
        main.place(tx, ty, tz, "chest")
    end
    try()
end)
"#;

#[test]
fn a_chest_used_in_the_window_opens_its_screen_and_takes_a_dragged_stack() {
    let Some((_turn, setup, mut server, address, xvfb)) = xvfb::window_game(survival_setup) else {
        return;
    };
    server
        .command(
            "give placer chest 1",
            &["gave 1 chest"],
            Duration::from_secs(30),
        )
        .expect("the console gives a chest");
    let placer = setup.script("placer.lua", PLACER);
    let out = setup
        .command(&address, "placer", &placer, &[])
        .output()
        .expect("run the placer");
    let said = crate::common::game::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let chest = said
        .lines()
        .find_map(|l| l.split("placer: chest at ").nth(1))
        .unwrap_or_else(|| panic!("no chest placed:\n{said}"))
        .trim()
        .to_string();
    let owner = format!("voxel:{chest}");

    let (mut player, id) = player_with_dirt(&setup, &address, &mut server, &xvfb);
    // The middle button uses the chest in front of the eyes (the first
    // click may only capture the mouse).
    let opened = format!("screen {owner} opened");
    let mut open = None;
    for _ in 0..5 {
        xvfb.xdotool(&["click", "2"]);
        open = player.wait_for(&opened, Duration::from_secs(3));
        if open.is_some() {
            break;
        }
    }
    if open.is_none() {
        expect(&mut player, &opened, "using the chest opens its screen");
    }
    let chest_grid = screen_grid(&mut player, &owner, &format!("{owner}/main"));
    let main = screen_grid(&mut player, &owner, "me/main");
    std::thread::sleep(Duration::from_millis(500));
    drag(
        &xvfb,
        &id,
        slot_centre(main, 0.0, 0.0),
        slot_centre(chest_grid, 2.0, 0.0),
    );
    expect(
        &mut player,
        &format!("move me main 1 -> {owner} main 3 (5): done"),
        "the server accepts the move into the chest",
    );
    expect(
        &mut player,
        &format!("lists of {owner} main: 3=dirt*5"),
        "the chest's lists show the stack",
    );
    // Esc closes the screen, and the chest.
    xvfb.xdotool(&["key", "Escape"]);
    expect(
        &mut player,
        &format!("screen {owner} closed"),
        "Esc closes the chest's screen",
    );
    assert!(player.running(), "the window closed");
    let (_, stderr) = player.finish(Duration::from_secs(1));
    assert!(!stderr.contains("ERROR"), "{stderr}");

    // What the server stored: a bot opening the chest finds the dirt.
    let checker = setup.script("chest-checker.lua", &CHEST_CHECKER.replace("@POS@", &chest));
    let out = setup
        .command(&address, "checker", &checker, &[])
        .output()
        .expect("run the checker");
    let said = crate::common::game::text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("checker: open true, slot 3 dirt*5"), "{said}");
}

/// Opens the chest at `@POS@` and prints its third slot.
const CHEST_CHECKER: &str = r#"
local main = require("buildat/module/main")
local inv = require("buildat/module/inventory")
local log = buildat.Logger("checker")
local X, Y, Z = @POS@
-- The server knows where a player is once it moved: a step in place
-- first, then the chest, again until the server knows.
main.on_spawn(function(_, x, y, z)
    local tries = 0
    local function try()
        tries += 1
        main.move(x, y, z)
        inv.open(X, Y, Z, function(ok, reason)
            if not ok and tries < 20 then
                buildat.set_timeout(0.25, try)
                return
            end
            local slots = inv.list(string.format("voxel:%d,%d,%d", X, Y, Z), "main")
            local s = slots and slots[3]
            log:info("open " .. tostring(ok) .. ", slot 3 " .. (s and (s.name .. "*" .. s.count) or "empty"))
            buildat.disconnect()
        end)
    end
    try()
end)
"#;
