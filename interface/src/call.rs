//! Typed calls between modules: one definition per call (module, function,
//! argument type, reply type), in the crate that owns the callee's API.
//!
//! Owns: the [`Call`] trait, [`answer`] (decode the argument, run the
//! handler, encode the reply) and the [`answer_calls!`](crate::answer_calls)
//! and [`calls!`](crate::calls) macros. Does not own: transport (the host's
//! call table, [`crate::Host::call`]).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::ModuleError;

/// A call's definition, implemented by its argument type: the module that
/// answers it, the function's name and the reply's type.
pub trait Call: Serialize + DeserializeOwned {
    /// The module answering the call (a call addressed to a module chosen at
    /// run time, such as the world generator, names it with
    /// [`crate::Host::call_module`]).
    const MODULE: &'static str;
    const FUNCTION: &'static str;
    type Reply: Serialize + DeserializeOwned;
}

/// Decodes `payload` as `C`, runs `handler` and encodes its reply.
pub fn answer<C: Call>(
    payload: &[u8],
    handler: impl FnOnce(C) -> Result<C::Reply, ModuleError>,
) -> Result<Vec<u8>, ModuleError> {
    let args: C = crate::decode(payload)?;
    Ok(crate::encode(&handler(args)?)?)
}

/// Declares calls of one module: `calls! { module "voxelworld"; GetSizes =
/// "get_sizes" -> Sizes; }` implements [`Call`] for each argument type.
#[macro_export]
macro_rules! calls {
    (module $module:expr; $($args:ty = $function:literal -> $reply:ty;)+) => {
        $(
            impl $crate::Call for $args {
                const MODULE: &'static str = $module;
                const FUNCTION: &'static str = $function;
                type Reply = $reply;
            }
        )+
    };
}

/// Answers a call in [`crate::Module::call`] by its typed definition:
///
/// ```ignore
/// fn call(&mut self, function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
///     buildat_interface::answer_calls!(function, payload, {
///         GetSizes => |_| Ok(self.sizes()),
///         SetVoxel => |args| self.set_voxel(args),
///     })
/// }
/// ```
/// An unknown function is [`crate::ModuleError::UnknownFunction`].
#[macro_export]
macro_rules! answer_calls {
    ($function:expr, $payload:expr, { $($args:ty => $handler:expr),+ $(,)? }) => {{
        let function: &str = $function;
        $(
            if function == <$args as $crate::Call>::FUNCTION {
                return $crate::call::answer::<$args>($payload, $handler);
            }
        )+
        Err($crate::ModuleError::UnknownFunction(function.to_string()))
    }};
}

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use crate::{Call, ModuleError};

    #[derive(Serialize, Deserialize)]
    struct Add {
        a: u32,
        b: u32,
    }
    #[derive(Serialize, Deserialize)]
    struct Fail {}
    crate::calls! { module "adder"; Add = "add" -> u32; Fail = "fail" -> (); }

    fn call(function: &str, payload: &[u8]) -> Result<Vec<u8>, ModuleError> {
        crate::answer_calls!(function, payload, {
            Add => |args| Ok(args.a + args.b),
            Fail => |_| Err(ModuleError::msg("no")),
        })
    }

    #[test]
    fn answers_by_definition() {
        assert_eq!((Add::MODULE, Add::FUNCTION), ("adder", "add"));
        let reply = call("add", &crate::encode(&Add { a: 2, b: 3 }).unwrap()).unwrap();
        assert_eq!(crate::decode::<u32>(&reply).unwrap(), 5);
        assert!(matches!(call("fail", &[]), Err(ModuleError::Message(_))));
        assert!(matches!(call("add", &[1]), Err(ModuleError::Payload(_))));
        assert!(matches!(
            call("nope", &[]),
            Err(ModuleError::UnknownFunction(name)) if name == "nope"
        ));
    }
}
