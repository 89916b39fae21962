//! The accounts part of the interface (feature `wire`): each operation's handle with its
//! description, and the request and response types the server parses and a client sends.

use crate::ports::CodeRef;
use fleetdesk_kernel::Platform;
use fleetdesk_kernel::wire::fields::CodePath;

/// The account a `{code}` path names, with the `platform` that tells a legacy code's accounts
/// apart.
pub trait CodePathRef {
    fn code_ref(&self, platform: Option<Platform>) -> CodeRef;
}

impl CodePathRef for CodePath {
    fn code_ref(&self, platform: Option<Platform>) -> CodeRef {
        CodeRef {
            code: self.code.0.clone(),
            platform,
        }
    }
}
