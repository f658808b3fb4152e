#!/usr/bin/env python3
"""Rewrites training configs of the older flat layout into the nested one, in place.

    python3 scripts/migrate_config.py configs/*.toml [--check]

Keys move as crates/quester-train/src/config/migrate.rs renames them (RENAMES below is the
same list; `cargo test -p quester-train --lib config::migrate` checks that the Rust table and
docs/training.md agree, and tests/it/presets.rs that every preset loads without a rename). A
moved key takes the comment lines directly above it (and its inline comment) along; blank
lines and other comments stay where they were. New tables go after their parent section and
its sub-tables ([algorithm.advantage] and [algorithm.loss] after [algorithm], [model.lora]
after [model], [training.optimizer] after [training], [prompt] after [env] and
[env.settings]), because a TOML sub-table must come after the plain keys of its section.
A file already in the new layout is left as it is. --check: only report which files would
change (exit status 1 if any).

The Rust loader does the same renaming on the fly (with a warning per key), so an old file
loads either way; this script is for files that should stay in the repository.
"""

import re
import sys

# (old dotted key, new dotted key, value map or None). Keep in step with RENAMES in
# crates/quester-train/src/config/migrate.rs.
RENAMES = [
    ("algorithm.estimator", "algorithm.advantage.estimator", None),
    ("algorithm.norm", "algorithm.advantage.normalization", None),
    ("algorithm.step_advantage_weight", "algorithm.advantage.step_weight", None),
    ("algorithm.invalid_penalty", "algorithm.advantage.invalid_penalty", None),
    ("algorithm.step_gamma", "algorithm.advantage.step_gamma", None),
    ("algorithm.traj_gamma", "algorithm.advantage.traj_gamma", None),
    ("algorithm.cross_attempt", "algorithm.advantage.return_form",
     {'"paper"': '"paper"', '"reference"': '"reference_recursion"'}),
    ("algorithm.signal", "algorithm.advantage.signal", None),
    ("algorithm.clip_low", "algorithm.loss.clip_low", None),
    ("algorithm.clip_high", "algorithm.loss.clip_high", None),
    ("algorithm.dual_clip", "algorithm.loss.dual_clip", None),
    ("algorithm.aggregation", "algorithm.loss.aggregation", None),
    ("algorithm.entropy_coef", "algorithm.loss.entropy_coef", None),
    ("algorithm.kl_coef", "algorithm.loss.kl_coef", None),
    ("algorithm.kl_estimator", "algorithm.loss.kl_estimator", None),
    ("algorithm.min_behaviour_logp", "algorithm.loss.min_behaviour_logp", None),
    ("herl.hindsight_gamma", "algorithm.loss.hindsight_gamma", None),
    ("training.lr", "training.optimizer.lr", None),
    ("training.weight_decay", "training.optimizer.weight_decay", None),
    ("training.adam_beta1", "training.optimizer.beta1", None),
    ("training.adam_beta2", "training.optimizer.beta2", None),
    ("model.lora", "model.train", {"true": '"lora"', "false": '"full"'}),
    ("model.lora_rank", "model.lora.rank", None),
    ("model.lora_alpha", "model.lora.alpha", None),
    ("model.lora_targets", "model.lora.target_modules", None),
    ("env.play_prompt", "prompt.play_template", None),
    ("env.reflect_prompt", "prompt.reflect_template", None),
    ("env.play_prefix", "prompt.play_prefix", None),
    ("env.reflect_prefix", "prompt.reflect_prefix", None),
    ("rollout.play_stop", "prompt.play_stop", None),
    ("rollout.reflect_stop", "prompt.reflect_stop", None),
    ("rollout.history_window", "prompt.history_window", None),
    ("rollout.full_observations", "prompt.full_observations", None),
    ("rollout.max_reflection_chars", "prompt.max_reflection_chars", None),
]
BY_OLD = {old: (new, values) for old, new, values in RENAMES}

# The section a new table is placed after (with that section's own sub-tables).
FAMILY = {"algorithm.advantage": "algorithm", "algorithm.loss": "algorithm",
          "model.lora": "model", "training.optimizer": "training", "prompt": "env"}

HEADER = re.compile(r"^\s*(\[\[?)\s*([A-Za-z0-9_.\-]+)\s*(\]\]?)\s*(#.*)?$")
KEY = re.compile(r"^(\s*)([A-Za-z0-9_\-]+)(\s*=\s*)(.*)$")


class Section:
    def __init__(self, name, header, array):
        self.name = name        # dotted name; None for the lines before the first header
        self.header = header    # the header line as written
        self.array = array      # [[...]]
        self.lines = []         # body lines (without newline)


def parse(text):
    sections = [Section(None, None, False)]
    for line in text.split("\n"):
        m = HEADER.match(line)
        if m and not line.lstrip().startswith("#"):
            sections.append(Section(m.group(2), line, m.group(1) == "[["))
        else:
            sections[-1].lines.append(line)
    return sections


def bracket_depth(value):
    """Open [ / { minus closed ones outside strings and comments (multi-line arrays)."""
    depth, quote, i = 0, None, 0
    while i < len(value):
        c = value[i]
        if quote:
            if c == "\\" and quote == '"':
                i += 1
            elif c == quote:
                quote = None
        elif c in "\"'":
            quote = c
        elif c == "#":
            break
        elif c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        i += 1
    return depth


def items(lines):
    """Splits body lines into ("key", name, [lines]) (comment lines directly above included)
    and ("loose", None, [line])."""
    out, pending, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        m = KEY.match(line)
        if m and not line.lstrip().startswith("#"):
            block = [line]
            depth = bracket_depth(m.group(4))
            while depth > 0 and i + 1 < len(lines):
                i += 1
                block.append(lines[i])
                depth += bracket_depth(lines[i])
            out.append(("key", m.group(2), pending + block))
            pending = []
        elif line.lstrip().startswith("#"):
            pending.append(line)
        else:
            out.extend(("loose", None, [p]) for p in pending)
            pending = []
            out.append(("loose", None, [line]))
        i += 1
    out.extend(("loose", None, [p]) for p in pending)
    return out


def renamed(block, new_leaf, values, where):
    """The item's lines with the key renamed and the value mapped."""
    k = next(i for i, l in enumerate(block) if not l.lstrip().startswith("#"))
    m = KEY.match(block[k])
    value = m.group(4)
    if values is not None:
        token = value.split("#", 1)[0].strip()
        if token not in values:
            raise SystemExit(f"{where}: value {token} has no mapping for {new_leaf}")
        value = value.replace(token, values[token], 1)
    return block[:k] + [f"{m.group(1)}{new_leaf}{m.group(3)}{value}"] + block[k + 1:]


def migrate(text, where):
    sections = parse(text)
    moved = {}       # new table -> [lines]
    origin = {}      # new table -> index of the first section a key came from
    for si, sec in enumerate(sections):
        if sec.name is None or sec.array:
            continue
        kept = []
        for kind, key, block in items(sec.lines):
            old = f"{sec.name}.{key}" if kind == "key" else None
            hit = BY_OLD.get(old)
            if hit and old == "model.lora":
                k = next(i for i, l in enumerate(block) if not l.lstrip().startswith("#"))
                value = KEY.match(block[k]).group(4).split("#", 1)[0].strip()
                if value not in ("true", "false"):
                    hit = None  # not the old boolean
            if not hit:
                kept.extend(block)
                continue
            new, values = hit
            table, leaf = new.rsplit(".", 1)
            lines = renamed(block, leaf, values, f"{where}: {old}")
            if table == sec.name:
                kept.extend(lines)
            else:
                moved.setdefault(table, []).extend(lines)
                origin.setdefault(table, si)
        sec.lines = kept

    existing = {s.name: s for s in sections if s.name is not None and not s.array}
    for table, lines in moved.items():
        if table in existing:
            body = existing[table].lines
            tail = trailing_blanks(body)
            existing[table].lines = body[: len(body) - tail] + lines + body[len(body) - tail:]
            continue
        family = FAMILY[table]
        anchor = None
        for i, s in enumerate(sections):
            if s.name == family or (s.name or "").startswith(family + "."):
                anchor = i
        new = Section(table, f"[{table}]", False)
        new.lines = lines
        if anchor is None:
            sections.insert(origin[table], new)
            new.lines = lines + [""]
        else:
            body = sections[anchor].lines
            tail = trailing_blanks(body)
            sections[anchor].lines = body[: len(body) - tail] + [""]
            new.lines = lines + [""] * max(tail, 1)
            sections.insert(anchor + 1, new)
        existing[table] = new

    out = []
    for s in sections:
        if s.header is not None:
            out.append(s.header)
        out.extend(s.lines)
    return "\n".join(out)


def trailing_blanks(lines):
    n = 0
    for line in reversed(lines):
        if line.strip():
            break
        n += 1
    return n


def main(args):
    check = "--check" in args
    paths = [a for a in args if a != "--check"]
    changed = []
    for path in paths:
        with open(path) as f:
            text = f.read()
        new = migrate(text, path)
        if new != text:
            changed.append(path)
            if not check:
                with open(path, "w") as f:
                    f.write(new)
    for path in changed:
        print(("would rewrite " if check else "rewrote ") + path)
    return 1 if check and changed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
