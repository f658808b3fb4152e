//! Continuous batching (`generate::scheduler`): the same responses as `generate`, whenever a
//! sequence joins and whatever else runs; cancelling frees a row; bad requests are errors.

use quester_model::generate::scheduler::{Scheduler, SchedulerConfig, SequenceId};
use quester_model::generate::{
    generate_with, GenerationOutput, GenerationRequest, SamplingParams, Scaffold,
};
use quester_model::{load_hf_dir, DecodeWeights, LoadedModel};
use std::collections::BTreeMap;
use std::path::PathBuf;

fn tiny() -> LoadedModel {
    load_hf_dir(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tiny-llama"))
        .unwrap()
}

fn request(m: &LoadedModel, text: &str, params: SamplingParams) -> GenerationRequest {
    GenerationRequest {
        prompt_ids: m.tokenizer.encode(text).unwrap(),
        params,
    }
}

/// Greedy and sampled rows of several lengths, a stop string and a scaffold among them.
fn requests(m: &LoadedModel) -> Vec<GenerationRequest> {
    let sampled = |seed: u64, max_new_tokens: usize| SamplingParams {
        temperature: 1.2,
        max_new_tokens,
        seed,
        ..Default::default()
    };
    vec![
        request(m, "go left", sampled(0, 10)),
        request(m, "a longer prompt for the second row", sampled(1, 14)),
        request(m, "x", SamplingParams::greedy(8)),
        request(
            m,
            "a longer prompt for the fourth row, greedy",
            SamplingParams::greedy(12),
        ),
        request(
            m,
            "stop me",
            SamplingParams {
                stop: vec!["e".into()],
                ..sampled(4, 16)
            },
        ),
        request(
            m,
            "scaffolded",
            SamplingParams {
                scaffold: Some(Scaffold {
                    marker: "<".into(),
                    text: "act".into(),
                    max_tokens: 4,
                }),
                ..sampled(5, 12)
            },
        ),
    ]
}

/// Steps until idle; the outputs by id.
fn drain(s: &mut Scheduler<'_>) -> BTreeMap<SequenceId, GenerationOutput> {
    let mut out = BTreeMap::new();
    let mut steps = 0;
    while !s.is_idle() {
        for (id, o) in s.step().unwrap() {
            assert!(out.insert(id, o).is_none(), "sequence {id} reported twice");
        }
        steps += 1;
        assert!(steps < 1000, "the scheduler never went idle");
    }
    out
}

/// Equal tokens, log-probs within float rounding (batch shapes differ).
fn assert_same(a: &GenerationOutput, b: &GenerationOutput, what: &str) {
    assert_eq!(a.token_ids, b.token_ids, "{what}");
    assert_eq!(a.finish_reason, b.finish_reason, "{what}");
    assert_eq!(a.temperatures, b.temperatures, "{what}");
    for (p, q) in a.logprobs.iter().zip(&b.logprobs) {
        assert!((p - q).abs() < 1e-4, "{what}: {p} vs {q}");
    }
}

/// Log-probs of an untempered response (greedy, or sampled at temperature 1) equal the
/// training forward's scores of it: a reference that shares no code with the scheduler.
fn assert_scored(m: &LoadedModel, r: &GenerationRequest, o: &GenerationOutput, what: &str) {
    let scored = quester_model::score::score_ids(&m.model, &r.prompt_ids, &o.token_ids).unwrap();
    assert_eq!(scored.len(), o.logprobs.len(), "{what}");
    for (p, q) in o.logprobs.iter().zip(&scored) {
        assert!((p - q).abs() < 1e-3, "{what}: {p} vs scored {q}");
    }
}

#[test]
fn scheduled_outputs_equal_generates() {
    let m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    let reqs = requests(&m);
    let want = generate_with(&m.model, &packed, &m.tokenizer, &reqs).unwrap();
    // All at once, then a few rows at a time under a small prefill budget (staggered joins).
    let configs = [
        SchedulerConfig::default(),
        SchedulerConfig {
            max_rows: 2,
            prefill_tokens: 4,
            prefix_cache_bytes: 0,
        },
    ];
    for config in configs {
        let mut s = Scheduler::new(&m.model, Some(&packed), &m.tokenizer, config.clone()).unwrap();
        let ids: Vec<SequenceId> = reqs.iter().map(|r| s.submit(r.clone()).unwrap()).collect();
        let got = drain(&mut s);
        assert_eq!(got.len(), reqs.len());
        for (i, id) in ids.iter().enumerate() {
            let what = format!("{config:?} request {i}");
            assert_same(&got[id], &want[i], &what);
            if reqs[i].params.temperature == 0.0 {
                assert_scored(&m, &reqs[i], &got[id], &what);
            }
        }
    }
}

#[test]
fn a_sequences_tokens_do_not_depend_on_when_it_joins() {
    let m = tiny();
    let sampled = |seed: u64, max_new_tokens: usize| SamplingParams {
        temperature: 1.0,
        max_new_tokens,
        seed,
        ignore_eos: true,
        ..Default::default()
    };
    let b = request(&m, "a prompt that runs first", sampled(11, 6));
    let c = request(&m, "and another one", sampled(12, 20));
    // One prompt longer than the running cache when it joins, one shorter.
    let long = request(
        &m,
        "a much longer prompt than the running ones have, so they get padding in front",
        sampled(3, 12),
    );
    let short = request(&m, "hi", sampled(4, 12));
    for a in [long, short] {
        let mut alone = Scheduler::new(&m.model, None, &m.tokenizer, Default::default()).unwrap();
        let id = alone.submit(a.clone()).unwrap();
        let want = drain(&mut alone).remove(&id).unwrap();
        let mut s = Scheduler::new(&m.model, None, &m.tokenizer, Default::default()).unwrap();
        s.submit(b.clone()).unwrap();
        s.submit(c.clone()).unwrap();
        for _ in 0..3 {
            assert!(s.step().unwrap().is_empty());
        }
        let id = s.submit(a.clone()).unwrap();
        // B leaves while A runs, then C: the time axis is compacted under A.
        let got = drain(&mut s).remove(&id).unwrap();
        assert_same(&got, &want, "joined mid-decode");
        assert_scored(&m, &a, &got, "joined mid-decode");
    }
}

#[test]
fn cancel_frees_the_row() {
    let m = tiny();
    let long = SamplingParams {
        max_new_tokens: 50,
        ignore_eos: true,
        ..SamplingParams::greedy(50)
    };
    let config = SchedulerConfig {
        max_rows: 1,
        ..Default::default()
    };
    let mut s = Scheduler::new(&m.model, None, &m.tokenizer, config).unwrap();
    let x = s.submit(request(&m, "first", long.clone())).unwrap();
    let y = s.submit(request(&m, "second", long.clone())).unwrap();
    let z = s.submit(request(&m, "third", long)).unwrap();
    s.step().unwrap();
    assert_eq!((s.running(), s.waiting()), (1, 2));
    assert!(s.cancel(z).unwrap(), "a waiting sequence is cancelled");
    assert!(s.cancel(x).unwrap(), "a running sequence is cancelled");
    assert_eq!((s.running(), s.waiting()), (0, 1));
    assert!(!s.cancel(x).unwrap(), "cancelled already");
    assert!(!s.cancel(999).unwrap(), "never submitted");
    s.step().unwrap();
    assert_eq!(
        (s.running(), s.waiting()),
        (1, 0),
        "the freed row takes the next"
    );
    let out = drain(&mut s);
    assert_eq!(out.keys().copied().collect::<Vec<_>>(), vec![y]);
    assert_eq!(out[&y].token_ids.len(), 50);
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let m = tiny();
    let mut s = Scheduler::new(&m.model, None, &m.tokenizer, Default::default()).unwrap();
    let ok = request(&m, "fine", SamplingParams::greedy(3));
    let empty = GenerationRequest {
        prompt_ids: Vec::new(),
        ..ok.clone()
    };
    let nan = GenerationRequest {
        params: SamplingParams {
            temperature: f64::NAN,
            ..ok.params.clone()
        },
        ..ok.clone()
    };
    let out_of_vocab = GenerationRequest {
        prompt_ids: vec![m.model.config.vocab_size as u32],
        ..ok.clone()
    };
    for bad in [empty, nan, out_of_vocab] {
        assert!(s.submit(bad.clone()).is_err(), "{bad:?}");
        assert!(generate_with(
            &m.model,
            &DecodeWeights::new(&m.model).unwrap(),
            &m.tokenizer,
            &[bad]
        )
        .is_err());
    }
    assert!(s.is_idle(), "nothing was queued");
    let zero_rows = SchedulerConfig {
        max_rows: 0,
        ..Default::default()
    };
    assert!(Scheduler::new(&m.model, None, &m.tokenizer, zero_rows).is_err());
    // Nothing to generate: reported by the next step without a row.
    let id = s
        .submit(request(&m, "none", SamplingParams::greedy(0)))
        .unwrap();
    let out = s.step().unwrap();
    assert_eq!(out.len(), 1);
    assert_eq!(out[0].0, id);
    assert!(out[0].1.token_ids.is_empty());
    assert!(s.is_idle());
}

#[test]
fn a_group_sharing_a_prefix_joins_as_it_would_run_alone() {
    let m = tiny();
    let sampled = |seed: u64| SamplingParams {
        temperature: 1.0,
        max_new_tokens: 10,
        seed,
        ignore_eos: true,
        ..Default::default()
    };
    let task = "the same long task text that every trial of the group starts with: ";
    let group: Vec<GenerationRequest> = ["first", "second try"]
        .iter()
        .enumerate()
        .map(|(i, t)| request(&m, &format!("{task}{t}"), sampled(20 + i as u64)))
        .collect();
    let mut s = Scheduler::new(&m.model, None, &m.tokenizer, Default::default()).unwrap();
    s.submit(request(&m, "running already", sampled(1)))
        .unwrap();
    for _ in 0..4 {
        s.step().unwrap();
    }
    // Submitted together, admitted in one step: their common prefix runs once.
    let ids: Vec<SequenceId> = group.iter().map(|r| s.submit(r.clone()).unwrap()).collect();
    let got = drain(&mut s);
    for (r, id) in group.iter().zip(&ids) {
        let mut alone = Scheduler::new(&m.model, None, &m.tokenizer, Default::default()).unwrap();
        let a = alone.submit(r.clone()).unwrap();
        let want = drain(&mut alone).remove(&a).unwrap();
        assert_same(&got[id], &want, "group member");
        assert_scored(&m, r, &got[id], "group member");
    }
}

/// `generate_continuous` driven as a rollout drives it: each answer submits a follow-up
/// (its response appended to its prompt) at the step it ends, one request is cancelled, and
/// every response equals the one `generate` gives the same request alone.
#[test]
fn caller_driven_generation_gives_each_request_its_own_response() {
    use quester_model::generate::{generate_continuous, Orders};
    let m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    let reqs = requests(&m);
    let n = reqs.len() as u64;
    let mut follow_ups: BTreeMap<u64, GenerationRequest> = BTreeMap::new();
    let mut got: BTreeMap<u64, GenerationOutput> = BTreeMap::new();
    let mut steps = 0;
    // Request 1 is dropped at the first step: never reported.
    let mut cancel = vec![1u64];
    generate_continuous::<quester_model::ModelError>(
        &m.model,
        Some(&packed),
        &m.tokenizer,
        SchedulerConfig {
            max_rows: 3,
            prefill_tokens: usize::MAX,
            prefix_cache_bytes: 0,
        },
        (0..n).zip(reqs.iter().cloned()).collect(),
        &mut |done| {
            steps += 1;
            assert!(steps < 1000, "never went idle");
            let mut orders = Orders {
                cancel: std::mem::take(&mut cancel),
                ..Orders::default()
            };
            for (key, out) in done {
                if key < n {
                    let mut prompt = reqs[key as usize].prompt_ids.clone();
                    prompt.extend_from_slice(&out.token_ids);
                    let follow = GenerationRequest {
                        prompt_ids: prompt,
                        params: SamplingParams {
                            seed: 100 + key,
                            temperature: 0.9,
                            ..SamplingParams::greedy(6)
                        },
                    };
                    follow_ups.insert(key + n, follow.clone());
                    orders.submit.push((key + n, follow));
                }
                assert!(got.insert(key, out).is_none(), "key {key} reported twice");
            }
            Ok(orders)
        },
    )
    .unwrap();
    assert!(!got.contains_key(&1), "a cancelled request was reported");
    assert_eq!(got.len(), 2 * (reqs.len() - 1));
    let alone = |r: &GenerationRequest| {
        generate_with(&m.model, &packed, &m.tokenizer, std::slice::from_ref(r))
            .unwrap()
            .remove(0)
    };
    for (key, out) in &got {
        let r = if *key < n {
            &reqs[*key as usize]
        } else {
            &follow_ups[key]
        };
        assert_same(out, &alone(r), &format!("key {key}"));
    }
}

#[test]
fn a_key_submitted_twice_while_live_is_an_error() {
    use quester_model::generate::generate_continuous;
    let m = tiny();
    let r = request(&m, "go left", SamplingParams::greedy(4));
    let err = generate_continuous::<quester_model::ModelError>(
        &m.model,
        None,
        &m.tokenizer,
        SchedulerConfig {
            max_rows: 4,
            prefill_tokens: usize::MAX,
            prefix_cache_bytes: 0,
        },
        vec![(7, r.clone()), (7, r)],
        &mut |_| Ok(Default::default()),
    )
    .unwrap_err();
    assert!(err.to_string().contains("key 7"), "{err}");
}

/// A short request arriving after another has finished takes its row in place (no copy of
/// the running cache) and still gives what it gives alone; so does a long request that keeps
/// running beside it.
#[test]
fn a_newcomer_takes_a_finished_rows_place_in_place() {
    let m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    let long = request(
        &m,
        "a long running row that decodes for a while",
        SamplingParams {
            ignore_eos: true,
            ..SamplingParams::greedy(40)
        },
    );
    let short = request(&m, "go", SamplingParams::greedy(3));
    let newcomer = request(
        &m,
        "up",
        SamplingParams {
            temperature: 1.1,
            seed: 9,
            ..SamplingParams::greedy(6)
        },
    );
    let mut s = Scheduler::new(
        &m.model,
        Some(&packed),
        &m.tokenizer,
        SchedulerConfig::default(),
    )
    .unwrap();
    let a = s.submit(long.clone()).unwrap();
    let b = s.submit(short.clone()).unwrap();
    let mut got = BTreeMap::new();
    while !got.contains_key(&b) {
        got.extend(s.step().unwrap());
    }
    let c = s.submit(newcomer.clone()).unwrap();
    got.extend(drain(&mut s));
    assert_eq!(s.joins().in_place, 1, "{:?}", s.joins());
    assert_eq!(s.joins().appended, 0, "{:?}", s.joins());
    for (id, r) in [(a, &long), (b, &short), (c, &newcomer)] {
        let alone = generate_with(&m.model, &packed, &m.tokenizer, std::slice::from_ref(r))
            .unwrap()
            .remove(0);
        assert_same(&got[&id], &alone, &format!("sequence {id}"));
    }
}

/// A prompt longer than the step's prefill budget is prefilled a chunk per step while the
/// running row keeps decoding (one token every step), then joins; both answer as alone.
#[test]
fn a_long_prompt_is_prefilled_in_chunks_between_decoding_steps() {
    let m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    let running = request(
        &m,
        "go",
        SamplingParams {
            ignore_eos: true,
            ..SamplingParams::greedy(30)
        },
    );
    let long = request(
        &m,
        &"a long prompt of many words that needs several chunks ".repeat(3),
        SamplingParams {
            temperature: 1.1,
            seed: 3,
            ..SamplingParams::greedy(5)
        },
    );
    let budget = 8;
    let chunks = long.prompt_ids.len().div_ceil(budget);
    assert!(chunks >= 3, "the prompt must need several chunks");
    let config = SchedulerConfig {
        max_rows: 4,
        prefill_tokens: budget,
        prefix_cache_bytes: 0,
    };
    let mut s = Scheduler::new(&m.model, Some(&packed), &m.tokenizer, config).unwrap();
    let a = s.submit(running.clone()).unwrap();
    let mut got = BTreeMap::new();
    let mut steps = 1;
    got.extend(s.step().unwrap());
    let b = s.submit(long.clone()).unwrap();
    // While the long prompt is prefilled the long one does not run yet.
    for _ in 0..chunks - 1 {
        got.extend(s.step().unwrap());
        steps += 1;
        assert_eq!((s.running(), s.waiting()), (1, 1));
    }
    got.extend(s.step().unwrap());
    steps += 1;
    assert_eq!(
        (s.running(), s.waiting()),
        (2, 0),
        "joined after its last chunk"
    );
    // The running row took a token at every step, chunks or not: it ends at step 30.
    while !got.contains_key(&a) {
        got.extend(s.step().unwrap());
        steps += 1;
    }
    assert_eq!(steps, 30);
    got.extend(drain(&mut s));
    for (id, r) in [(a, &running), (b, &long)] {
        let alone = generate_with(&m.model, &packed, &m.tokenizer, std::slice::from_ref(r))
            .unwrap()
            .remove(0);
        assert_same(&got.remove(&id).unwrap(), &alone, &format!("sequence {id}"));
    }
}

/// Prompts of very different lengths are prefilled in groups of similar length, joined
/// right-aligned: each response and its log-probs are the ones the prompt gets alone, and they
/// come back in the requests' order.
#[test]
fn prompts_of_mixed_lengths_prefilled_in_groups_answer_as_alone() {
    let m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    let sampled = |seed: u64| SamplingParams {
        temperature: 1.1,
        max_new_tokens: 9,
        seed,
        ..Default::default()
    };
    let texts = [
        "a",
        "a long prompt that runs on and on, far longer than the short ones beside it here",
        "mid length prompt of some words",
        "a long prompt that runs on and on, far longer than the short ones beside it too",
        "b c",
        "mid length prompt, other words",
    ];
    let reqs: Vec<GenerationRequest> = texts
        .iter()
        .enumerate()
        .map(|(i, t)| request(&m, t, sampled(i as u64)))
        .collect();
    let together = generate_with(&m.model, &packed, &m.tokenizer, &reqs).unwrap();
    for (i, r) in reqs.iter().enumerate() {
        let alone = generate_with(&m.model, &packed, &m.tokenizer, std::slice::from_ref(r))
            .unwrap()
            .remove(0);
        assert_same(&together[i], &alone, &format!("request {i}"));
    }
}

/// Prompts kept between requests: a later prompt that starts with an earlier one's tokens
/// (an agent's next turn) prefills only the rest, joins a batch that is running, and answers
/// as a full prefill does (the same tokens; log-probs within rounding, and equal to the
/// training forward's scores for a greedy row); an unrelated prompt is prefilled as usual,
/// and a budget too small for a prompt keeps nothing.
#[test]
fn kept_prompt_prefixes_serve_later_prompts_that_start_with_them() {
    let m = tiny();
    let packed = DecodeWeights::new(&m.model).unwrap();
    let rules = "You are an agent in a grid. Rules: move with up, down, left or right; \
                 walls block; reach the goal in few moves. ";
    let sampled = |seed: u64| SamplingParams {
        temperature: 1.0,
        max_new_tokens: 6,
        seed,
        ..Default::default()
    };
    let first = vec![
        request(
            &m,
            &format!("{rules}Turn 1: the goal is north."),
            sampled(1),
        ),
        request(
            &m,
            &format!("{rules}Turn 1: the goal is east."),
            SamplingParams::greedy(6),
        ),
    ];
    // Each next turn extends its first turn's prompt; the last shares only a few tokens.
    let next = vec![
        request(
            &m,
            &format!("{rules}Turn 1: the goal is north. You moved up. Turn 2:"),
            sampled(2),
        ),
        request(
            &m,
            &format!("{rules}Turn 1: the goal is east. You moved left. Turn 2:"),
            SamplingParams::greedy(6),
        ),
        request(&m, "Something else entirely, short.", sampled(3)),
    ];
    let shared = m.tokenizer.encode(rules).unwrap().len();
    assert!(
        shared >= 32,
        "the test needs a prefix worth keeping: {shared}"
    );
    // A long-running sequence, so that the next turns join a batch that is decoding.
    let runner = request(&m, "keep running", sampled(9));
    let runner = GenerationRequest {
        params: SamplingParams {
            max_new_tokens: 40,
            ..runner.params
        },
        ..runner
    };
    let mut all = first.clone();
    all.extend(next.iter().cloned());
    all.push(runner.clone());
    let want = generate_with(&m.model, &packed, &m.tokenizer, &all).unwrap();

    let run = |bytes: usize| {
        let config = SchedulerConfig {
            prefix_cache_bytes: bytes,
            ..SchedulerConfig::default()
        };
        let mut s = Scheduler::new(&m.model, Some(&packed), &m.tokenizer, config).unwrap();
        let mut got = BTreeMap::new();
        let ids: Vec<SequenceId> = first.iter().map(|r| s.submit(r.clone()).unwrap()).collect();
        let runner_id = s.submit(runner.clone()).unwrap();
        while got.len() < first.len() {
            for (id, o) in s.step().unwrap() {
                got.insert(id, o);
            }
        }
        assert!(s.running() > 0, "the long sequence still runs");
        let later: Vec<SequenceId> = next.iter().map(|r| s.submit(r.clone()).unwrap()).collect();
        got.extend(drain(&mut s));
        let order: Vec<SequenceId> = ids.into_iter().chain(later).chain([runner_id]).collect();
        (order, got, s.prefix_cache_counts())
    };
    let (order, got, counts) = run(64 << 20);
    for (i, id) in order.iter().enumerate() {
        assert_same(&got[id], &want[i], &format!("request {i}"));
        if all[i].params.temperature == 0.0 {
            assert_scored(&m, &all[i], &got[id], &format!("request {i}"));
        }
    }
    let counts = counts.expect("prefixes are kept");
    assert_eq!(counts.hits, 2, "{counts:?}");
    let full = |r: &GenerationRequest| r.prompt_ids.len() as u64;
    // Each next turn reuses all of its first turn's prompt but the shared last token run.
    let reused: u64 = first
        .iter()
        .zip(&next)
        .map(|(a, b)| {
            a.prompt_ids
                .iter()
                .zip(&b.prompt_ids)
                .take_while(|(x, y)| x == y)
                .count() as u64
        })
        .sum();
    assert_eq!(counts.reused_tokens, reused, "{counts:?}");
    assert_eq!(counts.prompt_tokens, all.iter().map(full).sum::<u64>());
    // Too small a budget for any prompt: nothing kept, the same answers.
    let (order, small, counts) = run(64);
    assert_eq!(counts.unwrap().hits, 0);
    for id in &order {
        assert_eq!(small[id].token_ids, got[id].token_ids);
    }
}
