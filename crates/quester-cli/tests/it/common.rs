//! Running the `quester` binary from the integration tests.

use std::process::{Command, Output};

/// Runs the binary with `args` and collects its output.
pub fn quester(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_quester"))
        .args(args)
        .output()
        .expect("run quester")
}

/// The stdout of a run that must succeed (its stderr in the failure message).
pub fn ok(out: Output) -> String {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The stderr of a run that must fail.
pub fn fails(out: Output) -> String {
    assert!(!out.status.success(), "unexpected success");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// quester-model's tiny random Llama (a Hugging Face directory) for runs through the binary.
pub fn tiny_llama() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama")
}
