//! Sandboxed Python subprocesses (skeleton; being written).
