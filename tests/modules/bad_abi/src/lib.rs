//! `bad_abi`: a test fixture exporting a descriptor that claims module ABI
//! version 999, as a library built by a future server would. Owns nothing else.

use buildat_interface::abi::ModuleDescriptor;
use buildat_interface::{Host, Module, ModuleError};

struct Stale;

impl Module for Stale {
    fn create(_host: Host) -> Result<Self, ModuleError> {
        Ok(Self)
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn buildat_module_descriptor() -> *const ModuleDescriptor {
    static DESCRIPTOR: ModuleDescriptor = ModuleDescriptor {
        abi_version: 999,
        ..ModuleDescriptor::for_module::<Stale>("bad_abi")
    };
    &DESCRIPTOR
}
