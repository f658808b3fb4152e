#!/usr/bin/env python3
"""The client for bench/envserve.sh: SESSIONS concurrent WebSocket sessions on one server, each
playing STEPS steps (a reset from the next seed whenever an episode ends), choosing uniformly
among the observation's `valid_actions` with a seeded generator. The timer starts once every
session has connected and reset, and stops when the last session has played its steps.

Speaks OpenEnv's /ws messages directly (`{"type": "reset" | "step", "data": ...}`), the same
bytes to quester's server and to OpenEnv's.

Usage: envserve_client.py WS_URL SESSIONS STEPS  -> one JSON line.
"""
import asyncio
import json
import random
import sys
import time

import websockets


async def request(ws, kind, data):
    await ws.send(json.dumps({"type": kind, "data": data}))
    reply = json.loads(await ws.recv())
    if reply.get("type") != "observation":
        raise RuntimeError(f"{kind}: {reply}")
    return reply["data"]


def response(obs, rng):
    listed = obs["observation"].get("valid_actions") or ["up"]
    action = listed[rng.randrange(len(listed))]
    return action if "<action>" in action else f"<action>{action}</action>"


async def open_session(url, index):
    ws = await websockets.connect(url, max_size=None)
    seed = index * 100_000
    return ws, seed, await request(ws, "reset", {"seed": seed})


async def play(ws, seed, obs, rng, steps):
    episodes = 1
    for _ in range(steps):
        obs = await request(ws, "step", {"message": response(obs, rng)})
        if obs["done"]:
            seed += 1
            episodes += 1
            obs = await request(ws, "reset", {"seed": seed})
    return episodes


async def main(url, sessions, steps):
    opened = await asyncio.gather(*(open_session(url, i) for i in range(sessions)))
    start = time.perf_counter()
    episodes = await asyncio.gather(
        *(play(ws, seed, obs, random.Random(i), steps) for i, (ws, seed, obs) in enumerate(opened))
    )
    seconds = time.perf_counter() - start
    await asyncio.gather(*(ws.close() for ws, _, _ in opened))
    total = sessions * steps
    return {
        "sessions": sessions,
        "steps": total,
        "episodes": sum(episodes),
        "seconds": round(seconds, 3),
        "steps_per_s": round(total / seconds, 1),
    }


if __name__ == "__main__":
    url, sessions, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(asyncio.run(main(url, sessions, steps))))
