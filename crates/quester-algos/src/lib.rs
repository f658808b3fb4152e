//! The RL math of quester: returns, advantages and policy losses as pure functions over plain
//! data. No tensors, no I/O; every function is unit-tested on hand-computed cases.
