"""Python reference for bench/sokoban.sh: gym-sokoban's room generator in the LaMer config
(6x6, 2 boxes, pull-only reverse play with ttl = search_depth = 100, 300k explored states),
LaMer's 1-3 step player displacement, a plain BFS optimal-length check and the [5, 21] window
with up to 10 resamples. Prints per-room times and `RESULT` lines.

gym-sokoban 0.0.6 (PyPI) hard-codes ttl=300 and also explores plain (non-pull) moves; RAGEN and
LaMer changed both. We call gym-sokoban's own functions and only set those two things: its
module-level ACTION_LOOKUP is cut to the four pull actions and depth_first_search is started
with ttl=search_depth, exactly as its reverse_playing would otherwise do.
"""

import random
import sys
import time
from collections import deque

import numpy as np
from gym_sokoban.envs import room_utils as ru

WIDTH = HEIGHT = 6
NUM_BOXES = 2
SEARCH_DEPTH = 100
MIN_LEN, MAX_LEN, MAX_RESAMPLES = 5, 21, 10
NUM_STEPS = int(1.7 * (WIDTH + HEIGHT))

# Pull-only reverse play (RAGEN/LaMer).
ru.ACTION_LOOKUP = {k: v for k, v in ru.ACTION_LOOKUP.items() if k < 4}


def reverse_playing(room_state, room_structure, search_depth):
    """gym-sokoban's reverse_playing with the ttl taken from search_depth."""
    box_mapping = {}
    box_locations = np.where(room_structure == 2)
    ru.num_boxes = len(box_locations[0])
    for i in range(ru.num_boxes):
        box = (box_locations[0][i], box_locations[1][i])
        box_mapping[box] = box
    ru.explored_states = set()
    ru.best_room_score = -1
    ru.best_box_mapping = box_mapping
    ru.depth_first_search(room_state, room_structure, box_mapping, box_swaps=0,
                          last_pull=(-1, -1), ttl=search_depth)
    return ru.best_room, ru.best_room_score, ru.best_box_mapping


def generate_room(tries=4):
    """gym-sokoban's generate_room body with the reverse_playing above."""
    score = 0
    for _ in range(tries):
        room = ru.room_topology_generation((HEIGHT, WIDTH), 0.35, NUM_STEPS)
        room = ru.place_boxes_and_player(room, num_boxes=NUM_BOXES, second_player=False)
        room_structure = np.copy(room)
        room_structure[room_structure == 5] = 1
        room_state = room.copy()
        room_state[room_state == 2] = 4
        room_state, score, _ = reverse_playing(room_state, room_structure, SEARCH_DEPTH)
        room_state[room_state == 3] = 4
        if score > 0:
            break
    if score == 0:
        raise RuntimeWarning("Generated Model with score == 0")
    return room_structure, room_state


def displace_player(room_structure, room_state):
    """LaMer/RAGEN: walk the player 1-3 random steps into free cells (no pushes)."""
    for _ in range(random.randint(1, 3)):
        pr, pc = [int(v) for v in np.argwhere(room_state == 5)[0]]
        options = [(pr + dr, pc + dc) for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))
                   if room_state[pr + dr, pc + dc] in (1, 2)]
        if not options:
            return
        nr, nc = random.choice(options)
        room_state[nr, nc] = 5
        room_state[pr, pc] = room_structure[pr, pc]


def bfs_solution_len(room_structure, room_state, max_depth=100):
    """Plain BFS over (player, boxes) with single moves; optimal number of moves or None."""
    h, w = room_structure.shape
    walls = {(r, c) for r in range(h) for c in range(w) if room_structure[r, c] == 0}
    targets = frozenset((r, c) for r in range(h) for c in range(w) if room_structure[r, c] == 2)
    player = tuple(int(v) for v in np.argwhere(room_state == 5)[0])
    boxes = frozenset((int(r), int(c)) for r, c in np.argwhere((room_state == 3) | (room_state == 4)))
    start = (player, boxes)
    seen = {start}
    queue = deque([(start, 0)])
    while queue:
        (p, bx), d = queue.popleft()
        if bx == targets:
            return d
        if d >= max_depth:
            continue
        for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1)):
            n = (p[0] + dr, p[1] + dc)
            if n in walls:
                continue
            if n in bx:
                b2 = (n[0] + dr, n[1] + dc)
                if b2 in walls or b2 in bx:
                    continue
                nb = (bx - {n}) | {b2}
            else:
                nb = bx
            s = (n, nb)
            if s not in seen:
                seen.add(s)
                queue.append((s, d + 1))
    return None


def lamer_room(seed):
    """One accepted room (LaMer pipeline); returns (draws, optimal length)."""
    random.seed(seed)
    np.random.seed(seed)
    draws = 0
    while True:  # new seeds after a full round of resamples, like RAGEN's reseeding
        for _ in range(MAX_RESAMPLES + 1):
            draws += 1
            try:
                structure, state = generate_room()
            except (RuntimeError, RuntimeWarning):
                continue
            displace_player(structure, state)
            n = bfs_solution_len(structure, state)
            if n is not None and MIN_LEN <= n <= MAX_LEN:
                return draws, n


def main():
    rooms = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    times, draws, lens = [], 0, 0
    gen_t, bfs_t, parts = 0.0, 0.0, 0
    t_all = time.perf_counter()
    cpu_all = time.thread_time()
    for seed in range(rooms):
        t = time.perf_counter()
        d, n = lamer_room(seed)
        times.append((time.perf_counter() - t) * 1e6)
        draws += d
        lens += n
    total = time.perf_counter() - t_all
    cpu = time.thread_time() - cpu_all
    times.sort()
    mean = total * 1e6 / rooms
    print(f"python pipeline: {rooms} rooms in {total:.3f} s: mean {mean:.1f} us/room, "
          f"p50 {times[len(times) // 2]:.1f}, p95 {times[int(0.95 * (len(times) - 1))]:.1f}; "
          f"{draws / rooms:.3f} draws/room ({100 * (draws - rooms) / draws:.1f}% of draws rejected); "
          f"mean optimal length {lens / rooms:.2f}")
    print(f"python pipeline CPU time: {cpu * 1e6 / rooms:.1f} us/room")
    print(f"RESULT python_pipeline_us_per_room {mean:.3f}")
    print(f"RESULT python_pipeline_cpu_us_per_room {cpu * 1e6 / rooms:.3f}")
    # Parts, as in the Rust bench: all draws, then the BFS check of the drawn rooms (CPU time).
    random.seed(12345)
    np.random.seed(12345)
    t = time.thread_time()
    drawn = []
    for _ in range(rooms):
        try:
            drawn.append(generate_room())
        except (RuntimeError, RuntimeWarning):
            pass
    gen_t = time.thread_time() - t
    for structure, state in drawn:
        displace_player(structure, state)
    t = time.thread_time()
    for structure, state in drawn:
        assert bfs_solution_len(structure, state) is not None
    bfs_t = time.thread_time() - t
    parts = len(drawn)
    print(f"python parts (CPU): generate_room {gen_t * 1e6 / rooms:.1f} us/draw, "
          f"BFS check {bfs_t * 1e6 / parts:.1f} us/room ({parts} rooms)")
    print(f"RESULT python_generate_us_per_draw {gen_t * 1e6 / rooms:.3f}")
    print(f"RESULT python_solve_us_per_room {bfs_t * 1e6 / parts:.3f}")


if __name__ == "__main__":
    main()
