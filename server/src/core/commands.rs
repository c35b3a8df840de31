//! Console commands that modules register (`register_command`): who owns
//! each, its usage and help line.
//!
//! Owns: the table, checking names, forgetting a module's commands when it
//! unloads. Does not own: parsing console lines (`crate::console`) or
//! running a command (the owning module answers `run_command`).

use std::collections::BTreeMap;
use std::sync::Mutex;

use buildat_interface::core_api::RegisterCommand;

use super::slot::lock;

/// The console's own commands, which no module may take.
pub const BUILT_IN: &[&str] = &[
    "help", "modules", "load", "unload", "reload", "emit", "stop",
];

/// A module's console command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModuleCommand {
    pub module: String,
    pub usage: String,
    pub help: String,
    /// Players holding it may run the command in chat.
    pub privilege: Option<String>,
}

#[derive(Default)]
pub struct CommandTable {
    commands: Mutex<BTreeMap<String, ModuleCommand>>,
}

impl CommandTable {
    /// Registers `request` for `module`; refuses built-in names, bad names
    /// and names another module holds.
    pub fn check_register(&self, module: &str, request: RegisterCommand) -> Result<(), String> {
        let name = request.name;
        let valid = !name.is_empty()
            && name.len() <= 32
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !valid {
            return Err(format!(
                "command name {name:?}: 1 to 32 letters, digits, '_' or '-'"
            ));
        }
        if BUILT_IN.contains(&name.as_str()) {
            return Err(format!("'{name}' is a console command of the server"));
        }
        let mut commands = lock(&self.commands);
        if let Some(owner) = commands.get(&name)
            && owner.module != module
        {
            return Err(format!("'{name}' is already a command of {}", owner.module));
        }
        commands.insert(
            name,
            ModuleCommand {
                module: module.to_string(),
                usage: request.usage,
                help: request.help,
                privilege: request.privilege,
            },
        );
        Ok(())
    }

    pub fn get(&self, name: &str) -> Option<ModuleCommand> {
        lock(&self.commands).get(name).cloned()
    }

    pub fn list(&self) -> Vec<(String, ModuleCommand)> {
        lock(&self.commands)
            .iter()
            .map(|(name, command)| (name.clone(), command.clone()))
            .collect()
    }

    /// Forgets the commands of a module that unloaded.
    pub fn forget_module(&self, module: &str) {
        lock(&self.commands).retain(|_, command| command.module != module);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(name: &str) -> RegisterCommand {
        RegisterCommand {
            name: name.into(),
            usage: String::new(),
            help: "does things".into(),
            privilege: None,
        }
    }

    #[test]
    fn names_are_checked_and_owned() {
        let table = CommandTable::default();
        assert!(table.check_register("world", request("pregen")).is_ok());
        assert!(
            table.check_register("world", request("pregen")).is_ok(),
            "re-registering"
        );
        assert!(table.check_register("other", request("pregen")).is_err());
        assert!(table.check_register("other", request("stop")).is_err());
        assert!(table.check_register("other", request("two words")).is_err());
        assert_eq!(table.get("pregen").map(|c| c.module), Some("world".into()));
        table.forget_module("world");
        assert_eq!(table.get("pregen"), None);
    }
}
