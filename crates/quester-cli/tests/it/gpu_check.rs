//! `quester gpu-check --device cpu`: the whole device check on the CPU, where the "device" is the
//! portable path a GPU takes (candle's ops, device-resident AdamW moments, unpacked decoding)
//! checked against the CPU's fused kernels, and the throughput part runs at a small shape.

use crate::common::quester;

#[test]
fn the_device_check_passes_on_the_portable_path_and_writes_json() {
    let dir = std::env::temp_dir().join(format!("quester-gpu-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out_path = dir.join("check.json");
    let out = quester(&[
        "gpu-check",
        "--device",
        "cpu",
        "--size",
        "small",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(v["passed"], true, "{v:#}");
    assert_eq!(v["device"]["device"], "cpu");
    assert!(v["errors"].as_array().unwrap().is_empty(), "{v:#}");
    let parity = v["parity"].as_array().unwrap();
    // Per model: log-probs, full and LoRA gradients, an AdamW step, decoding, bf16.
    assert_eq!(parity.len(), 2 * 6, "{parity:#?}");
    for m in parity {
        assert_eq!(m["passed"], true, "{m}");
        assert!(m["value"].as_f64().unwrap().is_finite(), "{m}");
    }
    // The portable f32 path computes what the fused kernels compute, to rounding.
    let value = |name: &str| {
        parity
            .iter()
            .find(|m| m["name"] == name)
            .and_then(|m| m["value"].as_f64())
            .unwrap_or_else(|| panic!("no {name}"))
    };
    assert!(value("qwen3.logprob_max_abs_diff") < 1e-3);
    assert!(value("llama.full_grad_worst_rel_err") < 1e-4);
    let perf = v["perf"].as_array().unwrap();
    let names: Vec<&str> = perf.iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["decode", "lora_step", "full_step"]);
    for p in perf {
        assert!(p["tokens_per_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["tflops"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["peak_memory_bytes"].as_u64().unwrap() > 0, "{p}");
    }
    assert!(perf[1]["loss"].as_f64().unwrap().is_finite());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_sizes_and_shapes_name_the_flag() {
    for (args, want) in [
        (
            vec!["--size", "huge"],
            "--size \"huge\": allowed qwen3-4b, small",
        ),
        (
            vec!["--lora", "8by1024"],
            "--lora \"8by1024\": expected two positive integers",
        ),
        (
            vec!["--precision", "fp16"],
            "--precision \"fp16\": allowed bf16, f32",
        ),
    ] {
        let mut argv = vec!["gpu-check", "--device", "cpu"];
        argv.extend(args);
        let out = quester(&argv);
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(want), "{stderr}");
    }
}
