"""Plain-Python Sokoban for bench/envserve.sh's OpenEnv anchor: 6x6 room, 2 boxes, one move a
turn, 7 turns, in the style of the Python envs LaMer uses (lists of strings, no numpy).

Written for this benchmark from the rules in docs/envs/. Its room generator is cheaper than
quester's (a random walk of pulls from the solved state, without quester's search for the
hardest room or its optimal-length check), so the anchor's resets cost less than ours: the
comparison errs in Python's favour.
"""
import random

MOVES = {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}
SIZE, BOXES, MAX_TURNS, PULLS = 6, 2, 7, 20


class Sokoban:
    def reset(self, seed):
        rng = random.Random(seed)
        while True:
            inner = [(r, c) for r in range(1, SIZE - 1) for c in range(1, SIZE - 1)]
            cells = rng.sample(inner, BOXES + 1)
            self.targets = set(cells[:BOXES])
            self.boxes = set(cells[:BOXES])
            self.player = cells[BOXES]
            # Reverse play: the player pulls boxes off their targets.
            for _ in range(PULLS):
                dr, dc = MOVES[rng.choice(list(MOVES))]
                pr, pc = self.player
                ahead = (pr + dr, pc + dc)
                if not self.free(ahead):
                    continue
                behind = (pr - dr, pc - dc)
                if behind in self.boxes:
                    self.boxes.remove(behind)
                    self.boxes.add((pr, pc))
                self.player = ahead
            if self.boxes != self.targets:
                break
        self.turns, self.done = 0, False
        return self.render()

    def free(self, cell):
        r, c = cell
        return 0 < r < SIZE - 1 and 0 < c < SIZE - 1 and cell not in self.boxes

    def render(self):
        rows = []
        for r in range(SIZE):
            row = []
            for c in range(SIZE):
                cell = (r, c)
                if r in (0, SIZE - 1) or c in (0, SIZE - 1):
                    row.append("#")
                elif cell == self.player:
                    row.append("S" if cell in self.targets else "P")
                elif cell in self.boxes:
                    row.append("√" if cell in self.targets else "X")
                else:
                    row.append("O" if cell in self.targets else "_")
            rows.append("".join(row))
        return "\n".join(rows)

    def admissible(self):
        return [] if self.done else list(MOVES)

    def step(self, text):
        self.turns += 1
        lower = text.lower()
        end = lower.rfind("</action>")
        start = lower.rfind("<action>", 0, max(end, 0))
        move = lower[start + 8:end].strip() if 0 <= start < end else None
        reward = -0.1
        if move in MOVES:
            on_before = len(self.boxes & self.targets)
            dr, dc = MOVES[move]
            pr, pc = self.player
            ahead = (pr + dr, pc + dc)
            if ahead in self.boxes:
                beyond = (ahead[0] + dr, ahead[1] + dc)
                if self.free(beyond):
                    self.boxes.remove(ahead)
                    self.boxes.add(beyond)
                    self.player = ahead
            elif self.free(ahead):
                self.player = ahead
            reward += len(self.boxes & self.targets) - on_before
            if self.boxes == self.targets:
                reward += 10.0
                self.done = True
        if self.turns >= MAX_TURNS:
            self.done = True
        return self.render(), reward, self.done
