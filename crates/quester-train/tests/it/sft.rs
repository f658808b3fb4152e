//! Supervised fine-tuning: the assistant-only loss mask on the default model's own chat
//! template and tokenizer, a run on quester-model's tiny random Llama (the loss falls), and
//! exact resume from a checkpoint.

use quester_model::ChatMessage;
use quester_train::config::{PolicyKind, TrainMode};
use quester_train::sft::encode::{encode, EncodeError};
use quester_train::TrainConfig;
use std::path::{Path, PathBuf};

fn msg(role: &str, content: &str) -> ChatMessage {
    ChatMessage::new(role, content)
}

/// The decoded runs of consecutive target tokens.
fn target_runs(ids: &[u32], trained: &[bool], tk: &quester_model::Tokenizer) -> Vec<String> {
    let mut runs: Vec<Vec<u32>> = Vec::new();
    let mut prev = false;
    for (&id, &t) in ids.iter().zip(trained) {
        if t && !prev {
            runs.push(Vec::new());
        }
        if t {
            runs.last_mut().unwrap().push(id);
        }
        prev = t;
    }
    runs.iter().map(|r| tk.decode(r).unwrap()).collect()
}

#[test]
fn the_loss_mask_covers_the_assistant_turns_of_smollm2_chats_and_nothing_else() {
    let m = quester_model::load_default().expect("the default model (quester model fetch)");
    let (tpl, tk) = (&m.chat_template, &m.tokenizer);

    // One turn, as our demonstrations are: the prompt part is exactly what generation
    // tokenises (template with the generation prompt, then encode).
    let one = [
        msg("user", "Board:\n X|O|.\nYour move?"),
        msg("assistant", "<action>b2</action>"),
    ];
    let e = encode(&one, tpl, tk).unwrap();
    let prompt = tk.encode(&tpl.render(&one[..1], true).unwrap()).unwrap();
    assert_eq!(&e.ids[..prompt.len()], prompt.as_slice());
    assert!(e.trained[..prompt.len()].iter().all(|&t| !t));
    assert!(e.trained[prompt.len()..].iter().all(|&t| t));
    let runs = target_runs(&e.ids, &e.trained, tk);
    assert_eq!(runs.len(), 1);
    assert!(
        runs[0].starts_with("<action>b2</action><|im_end|>"),
        "{:?}",
        runs[0]
    );
    // SmolLM2's template adds its default system prompt: it is context, never a target.
    assert!(tk.decode(&e.ids).unwrap().contains("<|im_start|>system"));

    // Several turns with a system message: every assistant turn (and its <|im_end|>) is a
    // target; the system, user and role-header tokens are not; nothing is lost at the seams.
    let multi = [
        msg("system", "You play games."),
        msg("user", "Start."),
        msg("assistant", "<action>up</action>"),
        msg("user", "Moved. Next?"),
        msg("assistant", "<action>left</action>"),
    ];
    let e = encode(&multi, tpl, tk).unwrap();
    let runs = target_runs(&e.ids, &e.trained, tk);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert!(
        runs[0].starts_with("<action>up</action><|im_end|>"),
        "{runs:?}"
    );
    assert!(
        runs[1].starts_with("<action>left</action><|im_end|>"),
        "{runs:?}"
    );
    for r in &runs {
        assert!(!r.contains("<|im_start|>") && !r.contains("user"), "{r:?}");
    }
    let whole = tk.encode(&tpl.render(&multi, false).unwrap()).unwrap();
    assert_eq!(e.ids.len(), whole.len());
    let im_end = tk.token_id("<|im_end|>").unwrap();
    let im_start = tk.token_id("<|im_start|>").unwrap();
    // Special tokens are single ids: 3 of the 5 <|im_end|> close non-assistant turns.
    let trained_ends = e
        .ids
        .iter()
        .zip(&e.trained)
        .filter(|(&id, &t)| id == im_end && t)
        .count();
    assert_eq!(trained_ends, 2);
    assert_eq!(e.ids.iter().filter(|&&id| id == im_end).count(), 5);
    assert!(e
        .ids
        .iter()
        .zip(&e.trained)
        .all(|(&id, &t)| id != im_start || !t));

    assert_eq!(
        encode(&[msg("user", "hi")], tpl, tk),
        Err(EncodeError::NoAssistant)
    );
    assert!(matches!(
        encode(&[msg("tool", "x"), msg("assistant", "y")], tpl, tk),
        Err(EncodeError::Role { index: 0, .. })
    ));
}

fn tiny_cfg(data: &Path) -> TrainConfig {
    let mut c = TrainConfig::default();
    c.model.kind = PolicyKind::Native;
    c.model.path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../quester-model/tests/fixtures/tiny-llama")
        .display()
        .to_string();
    c.model.train = TrainMode::Lora;
    c.model.lora.rank = 4;
    c.env.name = "bandit".into();
    c.training.optimizer.lr = 1e-2;
    c.training.checkpoint_every = 2;
    c.eval.at_end = false;
    c.output.progress = false;
    c.sft.data = data.display().to_string();
    c.sft.epochs = 3;
    c.sft.step_tokens = 120;
    c.sft.val_fraction = 0.2;
    c.sft.val_every = 2;
    c
}

/// 24 short conversations; a line every 7th is a multi-turn chat.
fn write_data(dir: &Path) -> PathBuf {
    let p = dir.join("demos.jsonl");
    let mut text = String::new();
    for i in 0..24 {
        let line = if i % 7 == 0 {
            serde_json::json!({"messages": [
                {"role": "user", "content": format!("pick {i}")},
                {"role": "assistant", "content": format!("<action>{}</action>", i % 3)},
                {"role": "user", "content": "again"},
                {"role": "assistant", "content": "<action>1</action>"},
            ]})
        } else {
            serde_json::json!({"messages": [
                {"role": "user", "content": format!("pick {i}")},
                {"role": "assistant", "content": format!("<action>{}</action>", i % 3)},
            ], "env": "bandit", "seed": i, "episode": i, "turn": 0})
        };
        text.push_str(&line.to_string());
        text.push('\n');
    }
    std::fs::write(&p, text).unwrap();
    p
}

/// metrics.jsonl rows without the wall-clock fields.
fn rows(run: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(run.join("metrics.jsonl"))
        .unwrap()
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).unwrap();
            let o = v.as_object_mut().unwrap();
            o.remove("time_step_s");
            o.remove("tokens_per_s");
            v
        })
        .collect()
}

#[test]
fn sft_lowers_the_loss_and_a_resumed_run_ends_exactly_where_an_uninterrupted_one_does() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_data(dir.path());
    let cfg = tiny_cfg(&data);
    let a = dir.path().join("a");
    let sa = quester_train::sft::sft(&cfg, &a, false).unwrap();
    assert!(sa.steps >= 4, "{}", sa.steps);
    assert!(sa.val_examples > 0 && sa.train_examples > 0);
    let ra = rows(&a);
    assert_eq!(ra.len(), sa.steps);
    let loss = |r: &serde_json::Value| r["loss"].as_f64().unwrap();
    let first = loss(&ra[0]);
    let last = loss(&ra[ra.len() - 1]);
    assert!(last < 0.8 * first, "loss {first} -> {last}");
    let vals: Vec<f64> = ra.iter().filter_map(|r| r["val_loss"].as_f64()).collect();
    assert!(
        vals.len() >= 2 && vals[vals.len() - 1] < vals[0],
        "{vals:?}"
    );

    // Interrupted after its second-to-last checkpoint: copy the run, drop the newest
    // checkpoint and point `latest` at the one before (the logs still hold the later rows).
    let b = dir.path().join("b");
    copy_dir(&a, &b);
    let ckpts = b.join("checkpoints");
    let mut names: Vec<String> = std::fs::read_dir(&ckpts)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("step_"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    std::fs::remove_dir_all(ckpts.join(&names[1])).unwrap();
    std::fs::write(ckpts.join("latest"), &names[0]).unwrap();
    let sb = quester_train::sft::resume_sft(&b).unwrap();
    assert_eq!(sb.steps, sa.steps);
    assert_eq!(rows(&b), ra);
    let w = |run: &Path| {
        std::fs::read(
            run.join("checkpoints")
                .join(&names[1])
                .join("policy.safetensors"),
        )
        .unwrap()
    };
    assert_eq!(w(&a), w(&b), "the resumed run's final weights differ");

    // The checkpoint is a starting point for any config: model.init loads it.
    let mut init = tiny_cfg(&data);
    init.model.init = a.display().to_string();
    let p = quester_train::api::build_policy(&init).unwrap();
    drop(p);
    init.model.lora.rank = 2;
    let e = quester_train::api::build_policy(&init)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("model.init"), "{e}");
}

#[test]
fn a_bad_line_or_an_overlong_example_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let data = write_data(dir.path());
    let mut text = std::fs::read_to_string(&data).unwrap();
    text.push_str("{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}]}\n");
    std::fs::write(&data, text).unwrap();
    let e = quester_train::sft::sft(&tiny_cfg(&data), &dir.path().join("r"), false)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("demos.jsonl:25: no assistant message"), "{e}");

    let data = write_data(dir.path());
    let mut cfg = tiny_cfg(&data);
    cfg.sft.max_tokens = 20;
    let e = quester_train::sft::sft(&cfg, &dir.path().join("r2"), false)
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("demos.jsonl:1: the example is") && e.contains("sft.overlong"),
        "{e}"
    );
    cfg.sft.overlong = quester_train::config::Overlong::Skip;
    cfg.sft.max_tokens = 1024;
    cfg.sft.epochs = 1;
    let s = quester_train::sft::sft(&cfg, &dir.path().join("r3"), false).unwrap();
    assert_eq!(s.skipped_overlong, 0);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), t).unwrap();
        }
    }
}
