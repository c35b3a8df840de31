//! Lua mods' entities: voxelworld's transient nodes that a mod's
//! `on_step` moves, each with its `self` table in the mod's VM.
//!
//! Owns: [`LiveEntity`] and the object Lua moves it through
//! (`self.object`: `get_pos`, `set_pos`, `get_yaw`, `set_yaw`, `remove`,
//! `get_id`), making a node for an entity, making its `self` and calling
//! `on_activate`. Does not own: when steps run and what is done with moves
//! (`lib.rs`, one `MoveNodes` a tick), the nodes (`voxelworld`), drawing
//! (the client's game draws a node's `colour`/`size` box or its `model`).

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;

use buildat_interface::ModuleError;
use buildat_modkit::{VAR_COLOUR, VAR_ENTITY, VAR_SIZE};
use buildat_voxelworld_api::{CreateNode, CreateNodes};
use mlua::{Lua, Table, UserData, UserDataMethods, Value};

use crate::api::{fpos_from_lua, fpos_to_lua};
use crate::mods::{EntityDef, Shared};

/// Node variable: the glTF model the client draws the entity with.
pub const VAR_MODEL: &str = "model";

/// What `self.object` changes: where the entity is and whether it goes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ObjectState {
    pub id: u64,
    pub position: [f64; 3],
    pub yaw: f32,
    pub removed: bool,
}

/// `self.object` in Lua.
struct ObjectRef(Rc<RefCell<ObjectState>>);

impl UserData for ObjectRef {
    fn add_methods<M: UserDataMethods<Self>>(methods: &mut M) {
        methods.add_method("get_pos", |lua, this, ()| {
            fpos_to_lua(lua, this.0.borrow().position)
        });
        methods.add_method("set_pos", |_, this, pos: Value| {
            let position = fpos_from_lua(&pos)?;
            this.0.borrow_mut().position = position;
            Ok(())
        });
        methods.add_method("get_yaw", |_, this, ()| Ok(this.0.borrow().yaw));
        methods.add_method("set_yaw", |_, this, yaw: f32| {
            if yaw.is_finite() {
                this.0.borrow_mut().yaw = yaw;
            }
            Ok(())
        });
        methods.add_method("remove", |_, this, ()| {
            this.0.borrow_mut().removed = true;
            Ok(())
        });
        methods.add_method("get_id", |_, this, ()| Ok(this.0.borrow().id));
    }
}

/// One entity of a mod.
pub(crate) struct LiveEntity {
    pub mod_name: String,
    pub kind: String,
    pub home: [f64; 3],
    pub age: f64,
    pub object: Rc<RefCell<ObjectState>>,
    /// Its `self` in the mod's VM (`None` when its mod is gone).
    pub this: Option<Table>,
    /// Where and how turned clients were last told it is.
    pub sent: ([f64; 3], f32),
}

impl LiveEntity {
    pub fn id(&self) -> u64 {
        self.object.borrow().id
    }
}

/// The node variables clients draw a kind with.
fn vars(def: &EntityDef) -> BTreeMap<String, Vec<u8>> {
    let mut vars = BTreeMap::from([
        (VAR_ENTITY.to_string(), def.name.as_bytes().to_vec()),
        (VAR_COLOUR.to_string(), def.colour.to_vec()),
        (
            VAR_SIZE.to_string(),
            def.size.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    ]);
    if let Some(model) = &def.model {
        vars.insert(VAR_MODEL.to_string(), model.as_bytes().to_vec());
    }
    vars
}

/// Makes nodes for entities of `kinds` at the places given, in one call;
/// the entities made (not activated yet), in order (`None`: not made, the
/// world there is not loaded).
pub(crate) fn create(
    shared: &Shared,
    mod_name: &str,
    made: &[(&EntityDef, [f64; 3])],
) -> Result<Vec<Option<LiveEntity>>, ModuleError> {
    if made.is_empty() {
        return Ok(Vec::new());
    }
    let nodes = made
        .iter()
        .map(|(def, at)| CreateNode {
            position: *at,
            save_enabled: false,
            vars: vars(def),
        })
        .collect();
    let ids = shared.host.call(&CreateNodes { nodes })?;
    Ok(made
        .iter()
        .zip(ids)
        .map(|((def, at), id)| {
            id.map(|id| LiveEntity {
                mod_name: mod_name.to_string(),
                kind: def.name.clone(),
                home: *at,
                age: 0.0,
                object: Rc::new(RefCell::new(ObjectState {
                    id,
                    position: *at,
                    yaw: 0.0,
                    removed: false,
                })),
                this: None,
                sent: (*at, 0.0),
            })
        })
        .collect())
}

/// Makes the entity's `self` (its definition's fields through `__index`,
/// `name`, `home`, `age`, `object`) and runs `on_activate(self,
/// staticdata)`.
pub(crate) fn activate(
    lua: &Lua,
    entity: &mut LiveEntity,
    def: &EntityDef,
    staticdata: &str,
) -> mlua::Result<()> {
    let this = lua.create_table()?;
    let meta = lua.create_table()?;
    meta.raw_set("__index", &def.table)?;
    this.set_metatable(Some(meta))?;
    this.raw_set("name", def.name.as_str())?;
    this.raw_set("home", fpos_to_lua(lua, entity.home)?)?;
    this.raw_set("age", entity.age)?;
    this.raw_set("object", ObjectRef(Rc::clone(&entity.object)))?;
    entity.this = Some(this.clone());
    if let Some(on_activate) = &def.on_activate {
        on_activate.call::<()>((this, staticdata))?;
    }
    Ok(())
}

/// What `get_staticdata(self)` answers ("" without one).
pub(crate) fn staticdata(entity: &LiveEntity, def: &EntityDef) -> mlua::Result<String> {
    match (&def.get_staticdata, &entity.this) {
        (Some(get), Some(this)) => Ok(get
            .call::<Option<String>>(this.clone())?
            .unwrap_or_default()),
        _ => Ok(String::new()),
    }
}
