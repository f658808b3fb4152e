//! The warm start through the binary: `quester demos` on Tic-Tac-Toe, `quester sft` on them
//! (quester-model's tiny random Llama), then the run read back as every checkpoint is: the
//! report, `evaluate --checkpoint`, `export`, and a preset's `model.init`.

use crate::common::{fails, ok, quester, tiny_llama};
use std::path::{Path, PathBuf};

fn configs(name: &str) -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../configs")
        .join(name)
        .display()
        .to_string()
}

#[test]
fn demos_then_sft_give_a_checkpoint_every_command_reads() {
    let dir = tempfile::tempdir().unwrap();
    let d = |n: &str| -> PathBuf { dir.path().join(n) };
    let demos = d("ttt.jsonl");
    let cfg = configs("sft_tictactoe_cpu.toml");
    let summary = ok(quester(&[
        "demos",
        "tictactoe",
        "--config",
        &cfg,
        "--episodes",
        "6",
        "--epsilon",
        "0.2",
        "--set",
        "output.progress=false",
        "--out",
        demos.to_str().unwrap(),
    ]));
    let s: serde_json::Value = serde_json::from_str(&summary).unwrap();
    let examples = s["examples"].as_u64().unwrap();
    assert!(examples >= 6, "{summary}");
    assert_eq!(
        std::fs::read_to_string(&demos).unwrap().lines().count() as u64,
        examples
    );
    let e = fails(quester(&[
        "demos",
        "tictactoe",
        "--config",
        &cfg,
        "--split",
        "test",
        "--out",
        d("x.jsonl").to_str().unwrap(),
    ]));
    assert!(
        e.contains("demonstrations come only from training tasks"),
        "{e}"
    );

    let run = d("sft");
    let tiny = tiny_llama().display().to_string();
    let sets = [
        format!("model.path={tiny:?}"),
        "model.lora.rank=4".to_string(),
        format!("sft.data={:?}", demos.display().to_string()),
        "sft.val_fraction=0".to_string(),
        "sft.step_tokens=1500".to_string(),
        "eval.at_end=false".to_string(),
        "output.progress=false".to_string(),
    ];
    let mut args: Vec<&str> = vec!["sft", "--config", &cfg, "--run-dir", run.to_str().unwrap()];
    for s in &sets {
        args.extend(["--set", s.as_str()]);
    }
    let out = ok(quester(&args));
    let s: serde_json::Value = serde_json::from_str(out.split("report:").next().unwrap()).unwrap();
    assert!(s["steps"].as_u64().unwrap() >= 1, "{out}");
    assert!(run.join("report.html").is_file());
    assert!(run.join("plots/loss.png").is_file());

    // evaluate --checkpoint, export and model.init read the run as any other.
    let mut ev: Vec<&str> = vec!["evaluate", "--config", &cfg];
    let ev_sets = [
        format!("model.path={tiny:?}"),
        "model.lora.rank=4".to_string(),
        "eval.tasks=2".to_string(),
        "eval.num_attempts=1".to_string(),
    ];
    for s in &ev_sets {
        ev.extend(["--set", s.as_str()]);
    }
    let latest = run.join("checkpoints/latest");
    let mut with_ckpt = ev.clone();
    with_ckpt.extend(["--checkpoint", latest.to_str().unwrap()]);
    let report: serde_json::Value = serde_json::from_str(&ok(quester(&with_ckpt))).unwrap();
    assert_eq!(report["tasks"], 2);
    let init = format!("model.init={:?}", run.display().to_string());
    let mut with_init = ev.clone();
    with_init.extend(["--set", init.as_str()]);
    ok(quester(&with_init));
    ok(quester(&[
        "export",
        run.to_str().unwrap(),
        "--format",
        "peft",
        "--out",
        d("peft").to_str().unwrap(),
    ]));
    assert!(d("peft").join("adapter_model.safetensors").is_file());
}
