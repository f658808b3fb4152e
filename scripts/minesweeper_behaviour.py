#!/usr/bin/env python3
"""What the MineSweeper policies of an experiment do: for every evaluation folder of an experiment
directory (each method's untrained row, each seed, and each seed evaluated as another run, such as
`seed-0 as lamer`), what each play answer targets on the board it was given.

    scripts/minesweeper_behaviour.py docs/results/lamer-vs-rl-minesweeper
    scripts/minesweeper_behaviour.py runs/experiments/lamer-vs-rl-minesweeper

Per folder, over every play answer of every attempt: the share that is invalid (no readable
`(row, col)` inside the board), that opens a hidden cell, that names a cell already open (the env
answers it with a penalty and the board unchanged), and that repeats a cell the same attempt
already named; the share of attempts that end on a mine; and the three commonest first moves
with their share of first moves (a policy that opens the same cell on every board shows here).
"""
import gzip
import json
import re
import sys
from collections import Counter
from pathlib import Path

CELL = re.compile(r"\(\s*(\d+)\s*,\s*(\d+)\s*\)")


def board(prompt: str) -> list[list[str]]:
    """The rows of the prompt's current observation (its last board)."""
    tail = prompt[prompt.rfind("Current observation"):]
    rows = re.findall(r"^Row \d+: (.*)$", tail, flags=re.M)
    return [r.split() for r in rows]


def target(response: str):
    """The (row, col) an answer names, 1-based, or None."""
    inner = re.search(r"<action>(.*?)</action>", response, flags=re.S)
    m = CELL.search(inner.group(1) if inner else response)
    return (int(m.group(1)), int(m.group(2))) if m else None


def trials(folder: Path):
    for name in ("trajectories.jsonl", "trajectories.jsonl.gz"):
        p = folder / name
        if p.is_file():
            opener = gzip.open if name.endswith(".gz") else open
            with opener(p, "rt") as f:
                for line in f:
                    if line.strip():
                        yield json.loads(line)
            return
    raise SystemExit(f"{folder}: no trajectories.jsonl(.gz)")


def summarise(folder: Path) -> dict:
    c = Counter()
    first = Counter()
    attempts = mines = 0
    for trial in trials(folder):
        for a in trial["attempts"]:
            attempts += 1
            if not a["won"] and "*" in a["outcome"]:
                mines += 1
        named = {}
        for s in trial["samples"]:
            if s["kind"] != "play":
                continue
            c["plays"] += 1
            cell = target(s["response"]) if s["valid"] else None
            rows = board(s["prompt"])
            seen = named.setdefault(s["attempt"], set())
            if s["turn"] == 0:
                first[str(cell) if cell else "invalid"] += 1
            if cell is None or not (1 <= cell[0] <= len(rows) and 1 <= cell[1] <= len(rows[0])):
                c["invalid"] += 1
                continue
            if cell in seen:
                c["repeat"] += 1
            seen.add(cell)
            if rows[cell[0] - 1][cell[1] - 1] == "?":
                c["hidden"] += 1
            else:
                c["open"] += 1
    n = max(c["plays"], 1)
    firsts = sum(first.values()) or 1
    return {
        "plays": c["plays"],
        "invalid": c["invalid"] / n,
        "hidden": c["hidden"] / n,
        "open": c["open"] / n,
        "repeat": c["repeat"] / n,
        "mine_attempts": mines / max(attempts, 1),
        "first_moves": ", ".join(f"{m} {k / firsts:.2f}" for m, k in first.most_common(3)),
    }


def main():
    root = Path(sys.argv[1])
    # A seed's own evaluation, and its checkpoint evaluated as another run (evaluate_as).
    folders = sorted(
        p.parent
        for pattern in ("*/*/eval/eval.json", "*/*/eval-as-*/eval.json")
        for p in root.glob(pattern)
    )
    if not folders:
        raise SystemExit(f"{root}: no METHOD/ROW/eval/eval.json folders")
    print(
        "| method | row | play answers | invalid | hidden cell | open cell | repeated cell "
        "| attempts ending on a mine | commonest first moves (share) |"
    )
    print("| --- " * 9 + "|")
    for f in folders:
        s = summarise(f)
        method, row = f.parent.parent.name, f.parent.name
        if f.name != "eval":
            row += " " + f.name.replace("eval-as-", "as ")
        print(
            f"| {method} | {row} | {s['plays']} | {s['invalid']:.3f} | {s['hidden']:.3f} "
            f"| {s['open']:.3f} | {s['repeat']:.3f} | {s['mine_attempts']:.3f} "
            f"| {s['first_moves']} |"
        )


if __name__ == "__main__":
    main()
