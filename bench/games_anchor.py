#!/usr/bin/env python3
"""Plain-Python anchor for examples/bench_games.rs: MineSweeper and Tic-Tac-Toe vs MCTS-100.

Written for this project from the rules in docs/envs/ (not taken from any reference code), in the
style of the Python envs LaMer and MAGE use: lists, a flood fill with a stack, a UCT tree of node
objects with random rollouts. Same protocol as the Rust bench: episodes from consecutive seeds, a
seeded random agent choosing among the admissible actions; the loop (reset, admissible, step) is
timed with this thread's CPU time.

Usage: games_anchor.py MINESWEEPER_EPISODES TICTACTOE_EPISODES  -> one JSON line.
"""
import json
import math
import random
import re
import sys
import time

ROW_COL = re.compile(r"\d+")


def parse_action(text):
    lower = text.lower()
    end = lower.rfind("</action>")
    if end < 0:
        return None
    start = lower.rfind("<action>", 0, end)
    if start < 0:
        return None
    nums = ROW_COL.findall(text[start + 8:end])
    if len(nums) != 2:
        return None
    return int(nums[0]), int(nums[1])


class MineSweeper:
    def __init__(self, rows=6, cols=6, mines=3, max_turns=7):
        self.rows, self.cols, self.n_mines, self.max_turns = rows, cols, mines, max_turns

    def neighbours(self, r, c):
        for dr in (-1, 0, 1):
            for dc in (-1, 0, 1):
                if (dr or dc) and 0 <= r + dr < self.rows and 0 <= c + dc < self.cols:
                    yield r + dr, c + dc

    def reveal(self, r, c):
        self.open[r][c] = True
        if self.mine[r][c]:
            return -1
        opened, stack = 1, [(r, c)]
        while stack:
            cr, cc = stack.pop()
            if self.count[cr][cc]:
                continue
            for nr, nc in self.neighbours(cr, cc):
                if not self.open[nr][nc]:
                    self.open[nr][nc] = True
                    opened += 1
                    stack.append((nr, nc))
        return opened

    def won(self):
        return all(self.open[r][c] or self.mine[r][c]
                   for r in range(self.rows) for c in range(self.cols))

    def reset(self, seed):
        rng = random.Random(seed)
        cells = self.rows * self.cols
        while True:
            click = rng.randrange(cells)
            mines = set(rng.sample([i for i in range(cells) if i != click], self.n_mines))
            self.mine = [[r * self.cols + c in mines for c in range(self.cols)]
                         for r in range(self.rows)]
            self.count = [[sum(self.mine[nr][nc] for nr, nc in self.neighbours(r, c))
                           for c in range(self.cols)] for r in range(self.rows)]
            self.open = [[False] * self.cols for _ in range(self.rows)]
            self.reveal(click // self.cols, click % self.cols)
            if not self.won():
                break
        self.turns, self.done = 0, False
        return self.render()

    def render(self):
        lines = []
        for r in range(self.rows):
            cells = []
            for c in range(self.cols):
                if self.mine[r][c] and (self.open[r][c] or self.done):
                    cells.append("*")
                elif not self.open[r][c]:
                    cells.append("?")
                else:
                    cells.append(str(self.count[r][c]) if self.count[r][c] else ".")
            lines.append("Row %d: %s" % (r + 1, " ".join(cells)))
        return "\n".join(lines)

    def admissible(self):
        return ["(%d, %d)" % (r + 1, c + 1) for r in range(self.rows)
                for c in range(self.cols) if not self.open[r][c]]

    def step(self, text):
        self.turns += 1
        rc = parse_action(text)
        reward = -1.0
        if rc and 1 <= rc[0] <= self.rows and 1 <= rc[1] <= self.cols \
                and not self.open[rc[0] - 1][rc[1] - 1]:
            n = self.reveal(rc[0] - 1, rc[1] - 1)
            if n < 0:
                reward, self.done = -0.1, True
            elif self.won():
                reward, self.done = 10.0, True
            else:
                reward = 0.5 if n == 1 else 2.0
        if self.turns >= self.max_turns:
            self.done = True
        return self.render(), reward, self.done


LINES = [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6)]


def outcome(b):
    for a, c, d in LINES:
        if b[a] != "." and b[a] == b[c] == b[d]:
            return b[a]
    return "draw" if "." not in b else None


def to_move(b):
    return "O" if b.count("X") > b.count("O") else "X"


class Node:
    def __init__(self, board, move, parent):
        self.board, self.move, self.parent = board, move, parent
        self.children = []
        self.untried = [] if outcome(board) else [i for i in range(9) if board[i] == "."]
        self.visits, self.value = 0, 0.0


def mcts(board, rng, simulations=100, c=1.4):
    root = Node(board, None, None)
    for _ in range(simulations):
        node = root
        while not node.untried and node.children:
            ln = math.log(node.visits)
            node = max(node.children,
                       key=lambda ch: ch.value / ch.visits + c * math.sqrt(ln / ch.visits))
        if node.untried:
            mv = node.untried.pop(rng.randrange(len(node.untried)))
            b = list(node.board)
            b[mv] = to_move(node.board)
            child = Node(b, mv, node)
            node.children.append(child)
            node = child
        b = list(node.board)
        res = outcome(b)
        while res is None:
            free = [i for i in range(9) if b[i] == "."]
            b[rng.choice(free)] = to_move(b)
            res = outcome(b)
        while node is not None:
            node.visits += 1
            if node.parent is not None:
                mover = "O" if to_move(node.board) == "X" else "X"
                node.value += 0.5 if res == "draw" else (1.0 if res == mover else 0.0)
            node = node.parent
    return max(root.children, key=lambda ch: ch.visits).move


class TicTacToe:
    def reset(self, seed):
        self.rng = random.Random(seed)
        self.board = ["."] * 9
        self.agent = "X" if seed % 2 == 0 else "O"
        self.turns, self.done = 0, False
        if self.agent == "O":
            self.board[mcts(self.board, self.rng)] = "X"
        return self.render()

    def render(self):
        rows = ["Row %d: %s" % (r + 1, " ".join(self.board[3 * r:3 * r + 3])) for r in range(3)]
        return "You play %s.\n%s" % (self.agent, "\n".join(rows))

    def admissible(self):
        return ["(%d, %d)" % (i // 3 + 1, i % 3 + 1) for i in range(9) if self.board[i] == "."]

    def step(self, text):
        self.turns += 1
        rc = parse_action(text)
        reward = 0.0
        if rc and 1 <= rc[0] <= 3 and 1 <= rc[1] <= 3 and self.board[3 * rc[0] + rc[1] - 4] == ".":
            self.board[3 * rc[0] + rc[1] - 4] = self.agent
            if outcome(self.board) is None:
                self.board[mcts(self.board, self.rng)] = "O" if self.agent == "X" else "X"
            res = outcome(self.board)
            if res is not None:
                self.done = True
                reward = 0.0 if res == "draw" else (10.0 if res == self.agent else -10.0)
        if self.turns >= 5:
            self.done = True
        return self.render(), reward, self.done


def run(env, episodes):
    agent = random.Random(7)
    steps = 0
    start = time.thread_time()
    for seed in range(episodes):
        env.reset(seed)
        done = False
        while not done:
            acts = env.admissible()
            text = "<action>%s</action>" % acts[agent.randrange(len(acts))]
            _, _, done = env.step(text)
            steps += 1
    return {"episodes": episodes, "steps": steps, "seconds": time.thread_time() - start}


if __name__ == "__main__":
    ms_eps = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
    ttt_eps = int(sys.argv[2]) if len(sys.argv) > 2 else 500
    print(json.dumps({"minesweeper": run(MineSweeper(), ms_eps),
                      "tictactoe_mcts100": run(TicTacToe(), ttt_eps),
                      "python": sys.version.split()[0]}))
