//! Fetching files that ship inside PyPI wheels (skeleton; being written).
