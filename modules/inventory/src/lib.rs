//! `inventory`: named lists of item slots owned by players, voxels,
//! modules and drops (work in progress).

use buildat_interface::{Host, Module, ModuleError, export_module};

struct Inventories {
    _host: Host,
}

impl Module for Inventories {
    fn create(host: Host) -> Result<Self, ModuleError> {
        Ok(Self { _host: host })
    }
}

export_module!(Inventories);
