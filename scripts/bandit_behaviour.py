#!/usr/bin/env python3
"""What a policy does on the meta-bandit, from the evaluation trials of an experiment.

  scripts/bandit_behaviour.py runs/experiments/lamer-vs-rl-bandit

For every evaluation folder (<run>/untrained/eval, <run>/seed-<s>/eval) prints the share of
first attempts that scout, what follows a scout (pull of the shown arm, another arm, scout
again, invalid), and one trial where attempt 1 scouts and attempt 2 wins, if there is one.
For single-episode methods the attempts are independent: what follows a scout there knows
nothing of it, and a win after one is chance.
"""
import json
import re
import sys
from collections import Counter
from pathlib import Path


def action(resp):
    m = re.search(r"<action>(.*?)(</action>|$)", resp, re.S)
    return (m.group(1) if m else resp).strip()


def main(root):
    for traj in sorted(Path(root).glob("*/*/eval/trajectories.jsonl")):
        first, after = Counter(), Counter()
        # After a failed pull: is the next pull an arm this trial has not tried yet?
        new_arm, repeat_arm = 0, 0
        example = None
        trials = 0
        for line in traj.read_text().splitlines():
            t = json.loads(line)
            trials += 1
            plays = [s for s in t["samples"] if s["kind"] == "play"]
            a0 = action(plays[0]["response"])
            first["scout" if a0 == "scout" else ("arm" if a0.isdigit() and len(a0) == 1 else "invalid")] += 1
            tried = set()
            for prev, nxt in zip(plays, plays[1:]):
                pa, na = action(prev["response"]), action(nxt["response"])
                if pa.isdigit():
                    tried.add(pa)
                    if na.isdigit() and len(na) == 1:
                        new_arm += na not in tried
                        repeat_arm += na in tried
                if pa != "scout":
                    continue
                a = action(nxt["response"])
                if nxt["won"]:
                    after["shown arm (won)"] += 1
                elif a == "scout":
                    after["scout again"] += 1
                elif a.isdigit() and len(a) == 1:
                    after["another arm"] += 1
                else:
                    after["invalid"] += 1
                if nxt["won"] and prev is plays[0] and example is None:
                    example = plays[:2]
        label = f"{traj.parts[-4]}/{traj.parts[-3]}"
        n_after = sum(after.values())
        share = lambda c, n: f"{c / n:.2f}" if n else "-"
        print(f"{label}: {trials} trials; first attempt scout {share(first['scout'], trials)}, "
              f"arm {share(first['arm'], trials)}, invalid {share(first['invalid'], trials)}; "
              f"after a scout ({n_after}): "
              + ", ".join(f"{k} {share(v, n_after)}" for k, v in after.most_common())
              + f"; after a failed pull the next pull is a new arm {share(new_arm, new_arm + repeat_arm)}"
              f" ({new_arm + repeat_arm} pulls)")
        if example:
            for s in example:
                lines = s["prompt"].strip().splitlines()
                shown = [l for l in lines if "good arm is" in l]
                seen = f"memory {shown[-1]!r}" if shown else "no memory"
                print(f"    attempt {s['attempt'] + 1} ({seen}) -> {s['response']!r} (reward {s['reward']})")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "runs/experiments/lamer-vs-rl-bandit")
