pub mod add;
pub mod avatar;
pub mod decision;
pub mod heartbeat;
pub mod lookup;
pub mod publishing;
pub mod state;
pub mod work;
