//! Rollouts on a real vLLM server (the pinned CPU build, float32, on loopback), started and
//! stopped by these tests. They are ignored by a plain `cargo test`: `scripts/vllm-test.sh`
//! installs vLLM into a venv, writes the default model as a Hugging Face folder
//! (`quester model export-hf`) and runs them with `QUESTER_VLLM_PYTHON` (the venv's python) and
//! `QUESTER_VLLM_MODEL` (that folder) set. One server serves every check of a test, since it
//! takes about a minute to start.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use quester_train::policy::remote::{RemoteRolloutPolicy, RolloutSampler};
use quester_train::policy::{GenRequest, Generation, Policy, TrainSeq, TrainablePolicy};
use quester_train::TrainError;
use serde_json::Value;

fn required_path(var: &str) -> PathBuf {
    let value = std::env::var(var).unwrap_or_else(|_| {
        panic!("{var} is not set: run these tests with scripts/vllm-test.sh, which installs vLLM")
    });
    let path = PathBuf::from(value);
    assert!(path.exists(), "{var}={} does not exist", path.display());
    path
}

/// A vLLM OpenAI server on a free loopback port, killed (its whole process group) on drop.
struct Vllm {
    child: Option<Child>,
    base_url: String,
    log: PathBuf,
}

impl Vllm {
    fn start(model: &Path, log_dir: &Path) -> Vllm {
        use std::os::unix::process::CommandExt;
        let python = required_path("QUESTER_VLLM_PYTHON");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let log = log_dir.join(format!("vllm-{port}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(python)
            .args(["-m", "vllm.entrypoints.openai.api_server", "--model"])
            .arg(model)
            .args([
                "--served-model-name",
                "base",
                "--dtype",
                "float32",
                "--enable-lora",
                "--max-lora-rank",
                "16",
                "--max-model-len",
                "4096",
                // Log-probs of the distribution sampled from (temperature, top-k, top-p
                // applied), as the trainer records its own; vLLM's default is the raw model's.
                "--logprobs-mode",
                "processed_logprobs",
                "--host",
                "127.0.0.1",
                "--port",
                &port.to_string(),
            ])
            .env("VLLM_ALLOW_RUNTIME_LORA_UPDATING", "True")
            .env("VLLM_CPU_KVCACHE_SPACE", "2")
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .process_group(0)
            .spawn()
            .expect("starting vLLM");
        let mut server = Vllm {
            child: Some(child),
            base_url: format!("http://127.0.0.1:{port}/v1"),
            log,
        };
        server.wait_ready(Duration::from_secs(600));
        server
    }

    fn wait_ready(&mut self, limit: Duration) {
        let started = Instant::now();
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(Duration::from_secs(5)))
            .build()
            .into();
        loop {
            if let Some(status) = self.child.as_mut().and_then(|c| c.try_wait().unwrap()) {
                panic!(
                    "vLLM exited ({status}) before serving:\n{}",
                    self.log_tail()
                );
            }
            let url = format!("{}/models", self.base_url);
            if matches!(agent.get(&url).call(), Ok(r) if r.status() == 200) {
                eprintln!(
                    "vLLM ready at {} after {:.0} s",
                    self.base_url,
                    started.elapsed().as_secs_f64()
                );
                return;
            }
            assert!(
                started.elapsed() < limit,
                "vLLM not ready after {limit:?}:\n{}",
                self.log_tail()
            );
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    fn models(&self) -> String {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .timeout_global(Some(Duration::from_secs(30)))
            .build()
            .into();
        agent
            .get(format!("{}/models", self.base_url))
            .call()
            .unwrap()
            .body_mut()
            .read_to_string()
            .unwrap()
    }

    fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            // The API server starts an engine process: end the whole group.
            let _ = Command::new("kill")
                .args(["-s", "KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Vllm {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Forwards to a sampler and records what it sampled: the prompt ids sent and the token ids and
/// log-probs that came back.
struct Recorder {
    inner: Box<dyn RolloutSampler>,
    seen: Arc<Mutex<Vec<Generation>>>,
}

impl RolloutSampler for Recorder {
    fn generate(&mut self, requests: &[GenRequest]) -> Result<Vec<Generation>, TrainError> {
        let out = self.inner.generate(requests)?;
        self.seen.lock().unwrap().extend(out.iter().cloned());
        Ok(out)
    }

    fn load_adapter(&mut self, dir: &Path, name: &str) -> Result<(), TrainError> {
        self.inner.load_adapter(dir, name)
    }
}

/// A bandit preset on `model`, sampled untempered from the full distribution on
/// `servers`.
fn bandit_config(
    preset: &str,
    model: &Path,
    servers: &[String],
    extra: &[&str],
) -> quester_train::TrainConfig {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let list: Vec<String> = servers.iter().map(|s| format!("\"{s}\"")).collect();
    let mut overrides: Vec<String> = vec![
        format!("model.path={}", model.display()),
        "rollout.engine=\"openai\"".into(),
        format!("rollout.servers=[{}]", list.join(", ")),
        "rollout.temperature=1.0".into(),
        "rollout.top_p=1.0".into(),
        "rollout.top_k=0".into(),
        "eval.temperature=1.0".into(),
        "eval.top_p=1.0".into(),
        "eval.top_k=0".into(),
        "eval.at_end=false".into(),
    ];
    overrides.extend(extra.iter().map(ToString::to_string));
    quester_train::TrainConfig::load(&root.join("configs").join(preset), &overrides).unwrap()
}

/// Generations as the sequences the trainer scores and trains.
fn train_seqs(gens: &[Generation]) -> Vec<TrainSeq<'_>> {
    gens.iter()
        .map(|g| TrainSeq {
            prompt_ids: &g.prompt_ids,
            response_ids: &g.response_ids,
            current_logprobs: None,
        })
        .collect()
}

/// The largest |d log p| between what the sampler recorded and the trainer's own scoring of
/// the same ids.
fn max_gap(trainer: &mut dyn TrainablePolicy, gens: &[Generation]) -> f64 {
    let seqs = train_seqs(gens);
    let scored = trainer.score(&seqs).unwrap();
    gens.iter()
        .zip(&scored)
        .flat_map(|(g, s)| {
            g.logprobs
                .iter()
                .zip(s)
                .map(|(&a, &b)| (f64::from(a) - b).abs())
        })
        .fold(0.0, f64::max)
}

/// A LaMer trial (three attempts, reflections between them) and a weight sync on a real vLLM:
/// every trained sample's prompt and response ids are exactly what was sent and what vLLM
/// returned; the log-probs vLLM recorded are the trainer's for the same ids within float32
/// rounding, before an update (the zero adapter) and after one (a non-zero adapter, which so
/// checks that vLLM reads our PEFT export as we apply it); the versions advance on the server.
#[test]
#[ignore = "needs vLLM: scripts/vllm-test.sh"]
fn vllm_samples_are_trained_token_for_token_and_follow_the_adapter() {
    let model = required_path("QUESTER_VLLM_MODEL");
    let tmp = tempfile::tempdir().unwrap();
    let server = Vllm::start(&model, tmp.path());
    let cfg = bandit_config(
        "lamer_bandit_cpu.toml",
        &model,
        std::slice::from_ref(&server.base_url),
        &[
            "training.optimizer.lr=0.02",
            "eval.tasks=2",
            "algorithm.do_reflection=true",
            "algorithm.reflection_type=\"history_and_reflection\"",
        ],
    );
    let trainer = quester_train::api::build_policy(&cfg).unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sampler = Recorder {
        inner: quester_serve::openai::rollout_sampler(&cfg, trainer.text_codec().unwrap()).unwrap(),
        seen: Arc::clone(&seen),
    };
    let mut policy = RemoteRolloutPolicy::new(trainer, Box::new(sampler), &tmp.path().join("a"));
    let templates = quester_train::prompts::PromptTemplates::from_config(&cfg).unwrap();
    let method = quester_train::method::build(&cfg, &templates).unwrap();
    let factory = quester_train::api::env_factory(&cfg);
    let t0 = Instant::now();
    let trials = quester_train::rollout::run_trials(
        &mut policy,
        &*factory,
        &method.eval_requests(),
        &method.eval_spec(),
        None,
    )
    .unwrap();
    eprintln!(
        "2 LaMer trials on vLLM: {:.1} s",
        t0.elapsed().as_secs_f64()
    );
    assert_eq!(policy.version(), 1);
    let seen = seen.lock().unwrap().clone();
    let samples: Vec<_> = trials.iter().flat_map(|t| t.samples.iter()).collect();
    assert!(samples
        .iter()
        .any(|s| s.kind == quester_train::sample::SampleKind::Reflect));
    assert!(samples.iter().all(|s| !s.response_ids.is_empty()));
    for s in &samples {
        let sampled = seen
            .iter()
            .any(|g| g.prompt_ids == s.prompt_ids && g.response_ids == s.response_ids);
        assert!(
            sampled,
            "a trained sample is not what vLLM sampled: {:?}",
            s.response
        );
        let g = seen
            .iter()
            .find(|g| g.prompt_ids == s.prompt_ids && g.response_ids == s.response_ids)
            .unwrap();
        assert_eq!(g.logprobs, s.logprobs);
    }
    let before = max_gap(policy.trainer_mut(), &seen);
    eprintln!("max |d log p| vLLM against the trainer, zero adapter: {before:.2e}");
    assert!(before < 5e-3, "{before}");

    // SGE's rules on vLLM: a strategy closed by the scaffold within 4 tokens, then the action
    // at the switched temperature; the forced tokens are a run at temperature 0.
    let (marker, after) = ("</strategy>", "\n<action>");
    let sge: Vec<GenRequest> = (0..2u64)
        .map(|i| GenRequest {
            messages: vec![quester_train::policy::ChatMessage::user(
                "Pick an arm from 1 to 4. Plan first.",
            )],
            response_prefix: "<strategy>".into(),
            prompt_ids: None,
            params: quester_train::policy::SamplingParams {
                temperature: 1.0,
                max_new_tokens: 24,
                seed: 50 + i,
                scaffold: Some(quester_train::policy::Scaffold {
                    marker: marker.into(),
                    text: after.into(),
                    max_tokens: 4,
                }),
                temperature_switch: Some(quester_train::policy::TemperatureSwitch {
                    marker: marker.into(),
                    temperature: 0.7,
                }),
                ..Default::default()
            },
        })
        .collect();
    let out = Policy::generate(&mut policy, &sge).unwrap();
    for g in &out {
        let first = g
            .temperatures
            .iter()
            .position(|&t| t == 0.0)
            .expect("forced tokens");
        let last = g.temperatures.iter().rposition(|&t| t == 0.0).unwrap();
        assert!(first <= 4, "{:?}", g.temperatures);
        assert!(g.temperatures[..first].iter().all(|&t| t == 1.0));
        assert!(g.temperatures[first..=last].iter().all(|&t| t == 0.0));
        assert!(g.temperatures[last + 1..].iter().all(|&t| t == 0.7f32));
        assert!(
            g.text.contains(marker) && g.text.contains(after),
            "{}",
            g.text
        );
        eprintln!("SGE on vLLM: {:?}", g.text);
    }

    // One update that raises the sampled tokens' log-probs: a non-zero adapter, version 2.
    crate::serve_native::raise_every_token(&mut policy, &seen);
    let requests: Vec<GenRequest> = seen
        .iter()
        .take(4)
        .enumerate()
        .map(|(i, g)| GenRequest {
            messages: Vec::new(),
            response_prefix: String::new(),
            prompt_ids: Some(g.prompt_ids.clone()),
            params: quester_train::policy::SamplingParams {
                temperature: 1.0,
                max_new_tokens: 24,
                seed: 900 + i as u64,
                ..Default::default()
            },
        })
        .collect();
    let after = Policy::generate(&mut policy, &requests).unwrap();
    assert_eq!(policy.version(), 2);
    let models = server.models();
    assert!(models.contains("\"policy-v2\""), "{models}");
    let moved = {
        let seqs = train_seqs(&after);
        let base = quester_train::api::build_policy(&cfg)
            .unwrap()
            .score(&seqs)
            .unwrap();
        after
            .iter()
            .zip(&base)
            .flat_map(|(g, b)| {
                g.logprobs
                    .iter()
                    .zip(b)
                    .map(|(&a, &b)| (f64::from(a) - b).abs())
            })
            .fold(0.0, f64::max)
    };
    let gap = max_gap(policy.trainer_mut(), &after);
    eprintln!(
        "after one update: vLLM against the trainer {gap:.2e}; against the base model {moved:.2e}"
    );
    assert!(gap < 5e-3, "{gap}");
    assert!(
        moved > 10.0 * gap.max(1e-4),
        "the adapter changed nothing: {moved}"
    );
}

/// `quester train`'s path end to end on a real vLLM: a LaMer step and a GRPO step with TIS,
/// each loading its adapter versions, then the server killed: the next step fails naming it
/// instead of hanging.
#[test]
#[ignore = "needs vLLM: scripts/vllm-test.sh"]
fn training_steps_on_vllm_and_a_killed_server() {
    let model = required_path("QUESTER_VLLM_MODEL");
    let tmp = tempfile::tempdir().unwrap();
    let mut server = Vllm::start(&model, tmp.path());
    let servers = [server.base_url.clone()];
    // LaMer on-policy; GRPO with its step 1 sampled ahead, with the start's weights, while step
    // 0 updates.
    for (preset, staleness) in [("lamer_bandit_cpu.toml", 0), ("grpo_bandit_cpu.toml", 1)] {
        let ahead = format!("rollout.max_staleness={staleness}");
        let cfg = bandit_config(
            preset,
            &model,
            &servers,
            &[
                "training.steps=2",
                "rollout.tasks_per_step=2",
                "rollout.group_size=2",
                "algorithm.loss.rollout_correction=\"tis\"",
                &ahead,
            ],
        );
        let run = tmp.path().join(preset);
        let t0 = Instant::now();
        quester_train::train_with(
            &cfg,
            &run,
            false,
            Some(&quester_serve::openai::rollout_sampler),
        )
        .unwrap();
        let rows = quester_train::run_dir::RunDir::new(&run)
            .read_metrics()
            .unwrap();
        assert_eq!(rows.len(), 2);
        for row in &rows {
            let gap = row["sampler_logp_gap"].as_f64().expect("a gap logged");
            let kl = row["sampler_kl"].as_f64().expect("a KL logged");
            let w = row["tis_weight_mean"].as_f64().expect("TIS weights logged");
            eprintln!(
                "{preset} step {}: gap {gap:.2e}, KL {kl:.2e}, TIS mean {w:.5}",
                row["step"]
            );
            if row.get("rollout_staleness").and_then(Value::as_u64) == Some(1) {
                // Sampled with the weights before the update: the gap is the update's too.
                assert!(
                    gap.is_finite() && kl.is_finite() && w > 0.0 && w <= 2.0,
                    "{row:?}"
                );
            } else {
                assert!(gap < 1e-3 && kl < 1e-5 && (w - 1.0).abs() < 1e-2, "{row:?}");
            }
        }
        if staleness == 0 {
            assert!(run.join("adapters/policy-v2/adapter_config.json").is_file());
        } else {
            let lag: Vec<Option<u64>> = rows
                .iter()
                .map(|r| r.get("rollout_staleness").and_then(Value::as_u64))
                .collect();
            assert_eq!(lag, [Some(0), Some(1)]);
            assert!(server.models().contains("\"ahead-w0\""));
        }
        eprintln!(
            "{preset}: 2 steps on vLLM in {:.1} s",
            t0.elapsed().as_secs_f64()
        );
    }
    assert!(server.models().contains("\"policy-v"));

    server.kill();
    let cfg = bandit_config(
        "grpo_bandit_cpu.toml",
        &model,
        &servers,
        &[
            "training.steps=1",
            "rollout.tasks_per_step=2",
            "rollout.group_size=2",
        ],
    );
    let t0 = Instant::now();
    let e = quester_train::train_with(
        &cfg,
        &tmp.path().join("dead"),
        false,
        Some(&quester_serve::openai::rollout_sampler),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(&servers[0]), "{e}");
    assert!(
        t0.elapsed() < Duration::from_secs(120),
        "{:?}",
        t0.elapsed()
    );
}
