//! (tests added below)
