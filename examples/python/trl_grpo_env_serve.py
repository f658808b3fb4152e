#!/usr/bin/env python3
"""A few TRL GRPO steps on the CPU, with rollouts played against `quester env serve`.

The served env (kuhn by default) is reached through OpenEnv's own client
(`openenv.GenericEnvClient`, sync). Each training prompt is the env's first observation for
one seed; each completion is sent to a fresh episode of that seed as the model's action, and
the env's reward for it is the GRPO reward. The reply is forced to start with `<action>`
(`--prefix`), the way quester's own bandit GRPO config does, so that 135M parameters spend
their few tokens on the move. One model turn per episode: pick an env where one
action ends the episode (kuhn: PASS or BET; an unfinished episode scores the reward of its
first step).

Integration path: a TRL reward function, not `environment_factory`. TRL 1.16's
`environment_factory` exposes the env's methods as *tools*: it needs a chat template that
renders tool calls (SmolLM2-135M-Instruct's does not; GRPOTrainer refuses it) and a model
that emits tool calls. The reward-function path keeps the model's plain text as the action.

    python examples/python/trl_grpo_env_serve.py --model DIR --quester-bin PATH   # starts a server
    python examples/python/trl_grpo_env_serve.py --model DIR --url http://127.0.0.1:8000

Prints, per step, every rollout (seed, parsed action, reward) and the step's mean reward.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

ACTION = re.compile(r"<action>\s*(.*?)\s*</action>", re.S)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", required=True, help="Hugging Face model directory (config.json, model.safetensors, tokenizer.json)")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--url", help="base URL of a running `quester env serve` (serving --env)")
    where.add_argument("--quester-bin", help="quester binary: start `quester env serve ENV` on a free port, stop it at exit")
    p.add_argument("--env", default="kuhn", help="env to serve (with --quester-bin)")
    p.add_argument("--steps", type=int, default=3, help="GRPO optimizer steps")
    p.add_argument("--prompts-per-step", type=int, default=2, help="distinct seeds per step")
    p.add_argument("--group", type=int, default=4, help="completions per prompt (GRPO group)")
    p.add_argument("--max-new", type=int, default=8, help="max new tokens per completion (after the prefix)")
    p.add_argument("--prefix", default="<action>", help="forced start of the reply ('' for none)")
    p.add_argument("--lr", type=float, default=1e-5)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args()


def start_server(binary, env):
    """`quester env serve ENV --addr 127.0.0.1:0`; returns (process, base URL) once it logs its address."""
    log = tempfile.NamedTemporaryFile("w+", prefix="quester-serve-", suffix=".log", delete=False)
    proc = subprocess.Popen(
        [binary, "env", "serve", env, "--addr", "127.0.0.1:0"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "NO_COLOR": "1"},
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        text = open(log.name).read()
        match = re.search(r"on (http://127\.0\.0\.1:\d+)", text)
        if match:
            return proc, match.group(1)
        if proc.poll() is not None:
            sys.exit(f"quester env serve exited ({proc.returncode}):\n{text}")
        time.sleep(0.05)
    proc.terminate()
    sys.exit(f"quester env serve did not log its address:\n{open(log.name).read()}")


def main():
    args = parse_args()

    import torch

    torch.set_num_threads(args.threads)
    warnings.filterwarnings("ignore", category=FutureWarning)  # transformers' gradient_checkpointing renames

    from datasets import Dataset
    from openenv import GenericEnvClient
    from transformers import AutoModelForCausalLM, AutoTokenizer, PrinterCallback, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer
    import trl

    server = None
    url = args.url
    if args.quester_bin:
        server, url = start_server(args.quester_bin, args.env)
    try:
        print(f"env server: {url} ({'started here' if server else 'given'}); trl {trl.__version__}, torch {torch.__version__}, "
              f"threads {torch.get_num_threads()}", flush=True)

        # The prompts: the first observation of each seed, read from the served env itself.
        n_seeds = args.steps * args.prompts_per_step
        rows = []
        with GenericEnvClient(base_url=url).sync() as client:
            for seed in range(n_seeds):
                obs = client.reset(seed=seed).observation
                actions = obs.get("valid_actions") or []
                hint = (" Reply with exactly one of: " + ", ".join(f"<action>{a}</action>" for a in actions) + "."
                        if actions else " Reply with your move as <action>...</action>.")
                rows.append({"user": obs["text"] + hint, "seed": seed})

        step_log = {"step": 0}

        def env_reward(prompts, completions, seed, **kwargs):
            """Plays each completion as the action of a fresh episode of its seed; the env's reward."""
            rewards = []
            for completion, s in zip(completions, seed):
                text = args.prefix + completion
                with GenericEnvClient(base_url=url).sync() as client:
                    client.reset(seed=int(s))
                    result = client.step({"message": text})
                reward = float(result.reward or 0.0)
                rewards.append(reward)
                match = ACTION.search(text)
                action = match.group(1) if match else "(no <action>)"
                print(f"  step {step_log['step'] + 1} seed {int(s)} action {action!r:>18} reward {reward:+.1f}"
                      f"{'' if result.done else ' (episode not finished)'}  completion {text!r}", flush=True)
            return rewards

        class PerStep(TrainerCallback):
            def on_step_begin(self, a, state, control, **kw):
                self.t0 = time.time()

            def on_step_end(self, a, state, control, **kw):
                step_log["step"] = state.global_step

            def on_log(self, a, state, control, logs=None, **kw):
                if logs and "reward" in logs:
                    print(f"step {state.global_step}: mean reward {logs['reward']:+.3f} (std {logs.get('reward_std', float('nan')):.3f}), "
                          f"loss {logs.get('loss', float('nan')):.4f}, mean completion tokens "
                          f"{logs.get('completions/mean_length', float('nan')):.1f}, step time {time.time() - self.t0:.1f} s",
                          flush=True)

        tokenizer = AutoTokenizer.from_pretrained(args.model)
        tokenizer.padding_side = "left"
        # Plain-text prompts: the chat template's rendering of the user turn plus a forced
        # `--prefix` (default `<action>`) that starts the assistant's reply, so that a small
        # model's few tokens go to the move; the reward function puts the prefix back.
        for row in rows:
            row["prompt"] = tokenizer.apply_chat_template(
                [{"role": "user", "content": row.pop("user")}], tokenize=False, add_generation_prompt=True
            ) + args.prefix
        print(f"prompt of seed 0: {rows[0]['prompt']!r}", flush=True)
        model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)

        batch = args.prompts_per_step * args.group
        config = GRPOConfig(
            output_dir=tempfile.mkdtemp(prefix="trl-grpo-"),
            use_cpu=True,
            bf16=False,
            max_steps=args.steps,
            per_device_train_batch_size=batch,
            gradient_accumulation_steps=1,
            steps_per_generation=1,
            num_generations=args.group,
            max_completion_length=args.max_new,
            temperature=1.0,
            learning_rate=args.lr,
            beta=0.0,
            gradient_checkpointing=False,
            logging_steps=1,
            save_strategy="no",
            report_to="none",
            disable_tqdm=True,
            seed=args.seed,
            shuffle_dataset=False,
        )
        trainer = GRPOTrainer(
            model=model,
            processing_class=tokenizer,
            reward_funcs=env_reward,
            args=config,
            train_dataset=Dataset.from_list(rows),
            callbacks=[PerStep()],
        )
        trainer.remove_callback(PrinterCallback)  # its raw log dicts; PerStep prints the figures
        t0 = time.time()
        trainer.train()
        print(f"done: {args.steps} steps in {time.time() - t0:.1f} s", flush=True)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
