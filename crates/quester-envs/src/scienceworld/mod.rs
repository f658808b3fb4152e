//! ScienceWorld (Wang et al., 2022): 30 kinds of elementary-school science task in a text
//! simulation of a house, driven from Rust. The simulator is the Scala/Java `scienceworld.jar`
//! of the PyPI wheel `scienceworld==1.2.3`, run as a Java process per env and spoken to over
//! the py4j wire protocol (no Python at run time); idle processes wait in a process-wide pool
//! between envs. See `docs/envs/scienceworld.md`.

mod config;
mod env;
mod expert;
mod pool;
pub mod py4j;
pub mod server;
mod spec;
mod tasks;

pub use config::{ScienceWorldConfig, ScienceWorldPlan};
pub use env::{
    location_of, order_valid_actions, same_up_to_order, ScienceWorldEnv, MAX_ACTION_CHARS,
    UNKNOWN_ACTION,
};
pub use pool::{drain_pool, idle_server_pids, DEFAULT_POOL_IDLE_MAX};
pub use server::{Server, ServerError, ServerKey, ServerOptions, JAR};
pub use spec::SPEC;
pub use tasks::{is_electrical, task_name, ACTION_TEMPLATES, SIMPLIFICATIONS, TASKS};
