//! reports operations.

use crate::op::ErasedOp;

pub fn register(_all: &mut Vec<Box<dyn ErasedOp>>) {}
