#!/usr/bin/env python3
"""Writes tests/fixtures/reference.json: random batches and the values an independent, literal
implementation of the formulas (standard library only) gives for them.

The Rust code computes returns by a backward pass over attempt values and the loss as weighted
sums; this script instead evaluates each formula as written in docs/algorithms.md: the paper's
cross-attempt sum term by term, the reference code's recursion as one backward walk over the flat
list of steps, GiGPO with dictionaries of groups, the PPO loss with verl-style masked means, and
gradients by central finite differences. The Rust test tests/reference_fixtures.rs compares.

Run from the crate root:  python3 scripts/reference_fixtures.py
"""
import json
import math
import random
import statistics

SEED = 20261130
rng = random.Random(SEED)


# ---------------------------------------------------------------- returns
def discounted(rewards, gamma):
    return [sum(gamma ** (l - t) * rewards[l] for l in range(t, len(rewards))) for t in range(len(rewards))]


def paper_returns(attempts, sg, tg):
    g = [discounted(a, sg) for a in attempts]
    out = []
    for n in range(len(attempts)):
        later = sum(tg ** (m - n) * (g[m][0] if g[m] else 0.0) for m in range(n + 1, len(attempts)))
        out.append([x + later for x in g[n]])
    return out


def recursion_returns(attempts, sg, tg):
    flat = [(n, t, r) for n, a in enumerate(attempts) for t, r in enumerate(a)]
    out = [[0.0] * len(a) for a in attempts]
    acc, prev = 0.0, None
    for n, t, r in reversed(flat):
        factor = sg if prev is None or prev == n else tg ** (prev - n)
        acc = r + factor * acc
        out[n][t] = acc
        prev = n
    return out


# ---------------------------------------------------------------- batches
def random_batch(num_tasks, trials_per_task, num_attempts):
    samples = []
    for task in range(num_tasks):
        for trial in range(trials_per_task):
            for attempt in range(num_attempts):
                if attempt > 0:
                    samples.append(dict(task_key=f"task{task}", trial_id=trial, attempt=attempt, turn=0,
                                        kind="reflect", anchor="", reward=0.0,
                                        invalid=rng.random() < 0.2, won=False))
                steps = rng.randint(1, 4)
                won = False
                for turn in range(steps):
                    last = turn == steps - 1
                    won = last and rng.random() < 0.35
                    reward = (1.0 if won else 0.0) + round(rng.uniform(-0.3, 0.3), 3)
                    samples.append(dict(task_key=f"task{task}", trial_id=trial, attempt=attempt, turn=turn,
                                        kind="play", anchor=f"s{rng.randint(0, 3)}", reward=reward,
                                        invalid=rng.random() < 0.2, won=won))
                if won:
                    break
    rng.shuffle(samples)  # order must not matter
    return samples


def trials_of(samples):
    trials = {}
    for i, s in enumerate(samples):
        trials.setdefault((s["task_key"], s["trial_id"]), []).append(i)
    return trials


def sample_returns(samples, sg, tg, form, rewards):
    out = [0.0] * len(samples)
    for idx in trials_of(samples).values():
        n_att = max(samples[i]["attempt"] for i in idx) + 1
        play = [sorted((i for i in idx if samples[i]["kind"] == "play" and samples[i]["attempt"] == a),
                       key=lambda i: samples[i]["turn"]) for a in range(n_att)]
        attempts = [[rewards[i] for i in p] for p in play]
        G = (paper_returns if form == "paper" else recursion_returns)(attempts, sg, tg)
        for a in range(n_att):
            for t, i in enumerate(play[a]):
                out[i] = G[a][t]
        for i in idx:
            if samples[i]["kind"] == "reflect":
                out[i] = G[samples[i]["attempt"]][0]
    return out


def normalise(values, keys, mode, eps):
    groups = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    out = [0.0] * len(values)
    for members in groups.values():
        if len(members) < 2:
            continue
        vals = [values[i] for i in members]
        mean = sum(vals) / len(vals)
        std = statistics.stdev(vals)
        for i in members:
            out[i] = values[i] - mean if mode == "mean_norm" else (values[i] - mean) / (std + eps)
    return out


def advantages(samples, cfg):
    rewards = [s["reward"] for s in samples]
    returns = sample_returns(samples, cfg["step_gamma"], cfg["traj_gamma"], cfg["return_form"], rewards)
    pen = cfg["invalid_penalty"]
    attempt_sum = {}
    for s in samples:
        if s["kind"] == "play":
            key = (s["task_key"], s["trial_id"], s["attempt"])
            attempt_sum[key] = attempt_sum.get(key, 0.0) + s["reward"]
    scores = []
    for s in samples:
        base = attempt_sum[(s["task_key"], s["trial_id"], s["attempt"])] if s["kind"] == "play" else 0.0
        scores.append(base - (pen if s["invalid"] else 0.0))
    tasks = [s["task_key"] for s in samples]
    if cfg["estimator"] == "gigpo":
        e = normalise(scores, tasks, cfg["normalization"], cfg["epsilon"])
        step_keys = [(s["task_key"], "anchor", s["anchor"]) if s["kind"] == "play" else (s["task_key"], "reflection")
                     for s in samples]
        st = normalise(returns, step_keys, cfg["normalization"], cfg["epsilon"])
        adv = [a + cfg["step_weight"] * b for a, b in zip(e, st)]
    elif cfg["signal"] == "return":
        vals = [g - (pen if s["invalid"] else 0.0) for g, s in zip(returns, samples)]
        adv = normalise(vals, tasks, cfg["normalization"], cfg["epsilon"])
    else:  # trial_score
        totals = {}
        for s in samples:
            key = (s["task_key"], s["trial_id"])
            totals[key] = totals.get(key, 0.0) + (s["reward"] if s["kind"] == "play" else 0.0) - (pen if s["invalid"] else 0.0)
        keys = list(totals)
        per = normalise([totals[k] for k in keys], [k[0] for k in keys], cfg["normalization"], cfg["epsilon"])
        per = dict(zip(keys, per))
        adv = [per[(s["task_key"], s["trial_id"])] for s in samples]
    return dict(returns=returns, advantage=adv)


# ---------------------------------------------------------------- loss
def loss_value(responses, cfg):
    cl, ch, c = cfg["clip_low"], cfg["clip_high"], cfg["dual_clip"]
    rows = []  # (per-token total loss without entropy, entropies, kept)
    for r in responses:
        kept = cfg["min_behaviour_logp"] is None or all(o >= cfg["min_behaviour_logp"] for o in r["old_logp"])
        toks = []
        for t, (lp, op) in enumerate(zip(r["new_logp"], r["old_logp"])):
            ratio = math.exp(lp - op)
            A = r["advantage"]
            if r["objective"] == "clipped":
                pg1 = -A * ratio
                pg2 = -A * min(max(ratio, 1 - cl), 1 + ch)
                l = max(pg1, pg2)
                if A < 0 and c > 1:
                    l = min(l, -A * c)
            else:
                l = -A * ratio / (ratio + cfg["hindsight_gamma"])
            d = r["ref_logp"][t] - lp
            kl = -d if cfg["kl_estimator"] == "k1" else math.exp(d) - d - 1
            toks.append(l + cfg["kl_coef"] * kl)
        rows.append((toks, r["entropy"], kept))
    kept_rows = [(t, e) for t, e, k in rows if k and t]
    if not kept_rows:
        return 0.0
    def agg(values):
        if cfg["aggregation"] == "token_mean":
            return sum(sum(v) for v in values) / sum(len(v) for v in values)
        if cfg["aggregation"] == "seq_mean_token_mean":
            return sum(sum(v) / len(v) for v in values) / len(values)
        return sum(sum(v) for v in values) / len(values)
    return agg([t for t, _ in kept_rows]) - cfg["entropy_coef"] * agg([e for _, e in kept_rows])


def random_responses():
    out = []
    for _ in range(rng.randint(1, 4)):
        n = rng.randint(1, 5)
        old = [rng.uniform(-4, -0.05) for _ in range(n)]
        out.append(dict(
            new_logp=[o + rng.uniform(-1.0, 1.0) for o in old],
            old_logp=old,
            ref_logp=[o + rng.uniform(-1.0, 1.0) for o in old],
            entropy=[rng.uniform(0, 2) for _ in range(n)],
            advantage=rng.uniform(-2, 2),
            objective=rng.choice(["clipped", "clipped", "hindsight"]),
        ))
    return out


def near_kink(responses, cfg):
    for r in responses:
        if r["objective"] != "clipped":
            continue
        for lp, op in zip(r["new_logp"], r["old_logp"]):
            x = lp - op
            kinks = [math.log(1 - cfg["clip_low"]), math.log(1 + cfg["clip_high"])]
            if r["advantage"] < 0 and cfg["dual_clip"] > 1:
                kinks.append(math.log(cfg["dual_clip"]))
            if min(abs(x - k) for k in kinks) < 1e-4:
                return True
    return False


def main():
    returns_cases = []
    for _ in range(40):
        attempts = [[round(rng.uniform(-1, 1), 3) for _ in range(rng.randint(0, 4))] for _ in range(rng.randint(1, 4))]
        sg, tg = round(rng.uniform(0, 1), 3), round(rng.uniform(0, 1), 3)
        returns_cases.append(dict(attempts=attempts, step_gamma=sg, traj_gamma=tg,
                                  paper=paper_returns(attempts, sg, tg),
                                  reference_recursion=recursion_returns(attempts, sg, tg)))

    advantage_cases = []
    for k in range(24):
        samples = random_batch(rng.randint(1, 3), rng.randint(2, 5), 3)
        cfg = dict(estimator=["gigpo", "grpo", "grpo"][k % 3], signal=["return", "return", "trial_score"][k % 3],
                   normalization=rng.choice(["mean_norm", "mean_std_norm"]), step_weight=rng.choice([1.0, 0.5]),
                   epsilon=1e-6, invalid_penalty=0.5, step_gamma=0.95, traj_gamma=rng.choice([0.0, 0.6, 0.9]),
                   return_form=rng.choice(["paper", "reference_recursion"]), differential_rewards=False)
        advantage_cases.append(dict(samples=samples, config=cfg, expected=advantages(samples, cfg)))

    loss_cases = []
    while len(loss_cases) < 40:
        responses = random_responses()
        cfg = dict(clip_low=0.2, clip_high=rng.choice([0.2, 0.3]), dual_clip=rng.choice([0.0, 3.0, 10.0]),
                   aggregation=rng.choice(["token_mean", "seq_mean_token_mean", "seq_mean_token_sum"]),
                   entropy_coef=rng.choice([0.0, 0.001, 0.01]), kl_coef=rng.choice([0.0, 0.05]),
                   kl_estimator=rng.choice(["k1", "k3"]), min_behaviour_logp=rng.choice([None, -3.5]),
                   hindsight_gamma=rng.choice([1.0, 0.1]))
        if near_kink(responses, cfg):
            continue
        h = 1e-6
        grads = []
        for r in responses:
            g = []
            for t in range(len(r["new_logp"])):
                base = r["new_logp"][t]
                r["new_logp"][t] = base + h
                up = loss_value(responses, cfg)
                r["new_logp"][t] = base - h
                down = loss_value(responses, cfg)
                r["new_logp"][t] = base
                g.append((up - down) / (2 * h))
            grads.append(g)
        loss_cases.append(dict(responses=responses, config=cfg, loss=loss_value(responses, cfg), fd_grad=grads))

    fixture = dict(seed=SEED, returns=returns_cases, advantages=advantage_cases, losses=loss_cases)
    with open("tests/fixtures/reference.json", "w") as f:
        json.dump(fixture, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
