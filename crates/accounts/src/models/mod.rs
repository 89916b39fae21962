pub mod avatar;
pub mod heartbeat;
pub mod lookup;
pub mod state;
pub mod work;
