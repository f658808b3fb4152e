#!/usr/bin/env python3
"""What the Kuhn Poker policies of an experiment do: for every evaluation folder of an experiment
directory (untrained and each seed), the share of PASS / BET / invalid answers by the agent's card
and by the betting so far, in the first attempt of each trial and in the later ones.

    scripts/kuhn_behaviour.py runs/experiments/mage-vs-gigpo-kuhn            # full tables
    scripts/kuhn_behaviour.py runs/experiments/mage-vs-gigpo-kuhn --summary  # one row per folder
"""
import json
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


def main() -> None:
    root = Path(sys.argv[1] if len(sys.argv) > 1 else "runs/experiments/mage-vs-gigpo-kuhn")
    if "--summary" in sys.argv:
        summary(root)
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
