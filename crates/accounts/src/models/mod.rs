pub mod avatar;
pub mod heartbeat;
pub mod state;
pub mod work;
