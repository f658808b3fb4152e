#!/usr/bin/env python3
"""What the Kuhn Poker policies of an experiment do: for every evaluation folder of an experiment
directory (untrained and each seed), the share of PASS / BET / invalid answers by the agent's card
and by the betting so far, in the first attempt of each trial and in the later ones.

    scripts/kuhn_behaviour.py runs/experiments/mage-vs-gigpo-kuhn            # full tables
    scripts/kuhn_behaviour.py runs/experiments/mage-vs-gigpo-kuhn --summary  # one row per folder
    scripts/kuhn_behaviour.py runs/experiments/mage-vs-rl-kuhn --chips       # chips a hand

`--chips`: chips won a hand in the first attempt of each trial (reward / reward_scale), the hand
played once as a poker player would, with a 95% percentile bootstrap interval over the held-out
hands (seeds averaged per hand, 2000 resamples, seeded), and paired differences.
"""
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path


def situation(prompt: str) -> tuple[str, str]:
    """The card and the betting line of the prompt's current hand (its last occurrence)."""
    card = re.findall(r"Your card: ([JQK])", prompt)
    betting = re.findall(r"Betting: ([^\n]*)", prompt)
    return (card[-1] if card else "?", betting[-1].strip() if betting else "(none)")


def table(folder: Path) -> dict:
    counts = defaultdict(Counter)
    for line in (folder / "trajectories.jsonl").read_text().splitlines():
        trial = json.loads(line)
        for s in trial["samples"]:
            if s["kind"] != "play":
                continue
            card, betting = situation(s["prompt"])
            later = "first" if s["attempt"] == 0 else "later"
            answer = s["response"].replace("<action>", "").replace("</action>", "").strip()
            answer = answer.upper() if s["valid"] else "invalid"
            counts[(later, card, betting)][answer] += 1
    return counts


def summary(root: Path) -> None:
    """Per folder: invalid share in first and later attempts, and BET share by card."""
    print("| run | folder | plays | invalid (attempt 1) | invalid (later) | BET with J | BET with Q | BET with K |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for folder in sorted(root.glob("*/*/eval")):
        t = table(folder)
        def share(answer, pick):
            n = sum(sum(c.values()) for k, c in t.items() if pick(k))
            hit = sum(c[answer] for k, c in t.items() if pick(k))
            return f"{hit / n:.2f}" if n else "-"
        plays = sum(sum(c.values()) for c in t.values())
        print(
            f"| {folder.parent.parent.name} | {folder.parent.name} | {plays} "
            f"| {share('invalid', lambda k: k[0] == 'first')} "
            f"| {share('invalid', lambda k: k[0] == 'later')} "
            + " ".join(f"| {share('BET', lambda k, c=c: k[1] == c)}" for c in "JQK")
            + " |"
        )


def first_attempt_chips(folder: Path, scale: float) -> dict:
    """Task id -> chips won in the trial's first attempt."""
    out = {}
    for line in (folder / "trajectories.jsonl").read_text().splitlines():
        trial = json.loads(line)
        out[trial["task_id"]] = trial["attempts"][0]["reward_sum"] / scale
    return out


def per_hand(root: Path, run: str, trained: bool, scale: float) -> dict:
    """Task id -> mean first-attempt chips over the run's seeds (or its untrained evaluation)."""
    folders = sorted((root / run).glob("seed-*/eval")) if trained else [root / run / "untrained" / "eval"]
    tables = [first_attempt_chips(f, scale) for f in folders if (f / "trajectories.jsonl").exists()]
    if not tables:
        return {}
    tasks = set.intersection(*(set(t) for t in tables))
    return {k: sum(t[k] for t in tables) / len(tables) for k in tasks}


def interval(values: list, rng: random.Random) -> str:
    n = len(values)
    means = sorted(sum(rng.choice(values) for _ in range(n)) / n for _ in range(2000))
    return f"{sum(values) / n:+.3f} [{means[49]:+.3f}, {means[1949]:+.3f}]"


def chips(root: Path, scale: float = 5.0) -> None:
    rng = random.Random(0)
    runs = sorted(p.name for p in root.iterdir() if (p / "untrained").is_dir())
    hands = {(r, t): per_hand(root, r, t, scale) for r in runs for t in (False, True)}
    print("| run | hands | chips a hand, untrained | chips a hand, trained (seeds averaged) | trained - untrained |")
    print("| --- | --- | --- | --- | --- |")
    for r in runs:
        u, t = hands[(r, False)], hands[(r, True)]
        both = sorted(set(u) & set(t))
        if not both:
            continue
        print(
            f"| {r} | {len(both)} | {interval([u[k] for k in both], rng)} "
            f"| {interval([t[k] for k in both], rng)} | {interval([t[k] - u[k] for k in both], rng)} |"
        )
    print()
    print("| a - b (trained) | hands | chips a hand |")
    print("| --- | --- | --- |")
    for i, a in enumerate(runs):
        for b in runs[i + 1:]:
            ta, tb = hands[(a, True)], hands[(b, True)]
            both = sorted(set(ta) & set(tb))
            if both:
                print(f"| {a} - {b} | {len(both)} | {interval([ta[k] - tb[k] for k in both], rng)} |")


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/experiments/mage-vs-gigpo-kuhn")
    if "--summary" in sys.argv:
        summary(root)
        return
    if "--chips" in sys.argv:
        chips(root)
        return
    for folder in sorted(root.glob("*/*/eval")):
        print(f"## {folder.parent.parent.name} {folder.parent.name}")
        print("| attempt | card | betting so far | n | PASS | BET | invalid |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for key, c in sorted(table(folder).items()):
            n = sum(c.values())
            share = lambda a: f"{c[a] / n:.2f}"
            print(f"| {key[0]} | {key[1]} | {key[2]} | {n} | {share('PASS')} | {share('BET')} | {share('invalid')} |")
        print()


if __name__ == "__main__":
    main()
