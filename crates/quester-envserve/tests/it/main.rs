//! The server on loopback, spoken to as OpenEnv's clients do: real sockets, real envs.

mod bad_input;
mod capacity;
mod common;
mod episodes;
mod http;
mod mcp;
mod trial;
