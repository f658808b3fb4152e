"""quester's text environments, in process, with Gymnasium's text-env API.

    import quester_envs
    env = quester_envs.make("sokoban", num_boxes=2)
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step("<action>up</action>")

Envs are the Rust ones `quester train` plays; steps run without the GIL, so threads can step
different envs at once. `quester_envs.openenv` serves them with OpenEnv's `create_app`.
"""

import random

from ._native import NativeEnv as _NativeEnv
from ._native import env_names as _env_names

__all__ = ["TextEnv", "list_envs", "make"]

_SEED_LIMIT = 1 << 64


def list_envs():
    """The registered env names."""
    return list(_env_names())


def make(name, **settings):
    """Builds env `name` with `settings` (that env's config keys, as `quester env run --set`
    takes them). An unknown name or setting raises ValueError naming the allowed ones."""
    return TextEnv(name, **settings)


def _check_seed(seed):
    if seed is None:
        # As the server does: a seedless reset draws one, and info["seed"] names it.
        return random.getrandbits(64)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an int or None, not {type(seed).__name__}")
    if not 0 <= seed < _SEED_LIMIT:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    return seed


class TextEnv:
    """One env. `reset` and `step` follow Gymnasium; `info` holds what the OpenEnv server's
    observation metadata does (`env`, `episode_id`, `seed`, `step_count`; after a step `won`,
    `valid`, `info`; once done `outcome`) and `valid_actions` (a list where the env has a
    small action set, else None; None once done)."""

    def __init__(self, name, **settings):
        if not isinstance(name, str):
            raise TypeError(f"the env name must be a str, not {type(name).__name__}")
        self._settings = settings
        self._set_native(_NativeEnv(name, settings))
        # Settings a reset's options added; the env is rebuilt only when they change.
        self._extra = {}

    def _set_native(self, native):
        self._native = native
        # The hot call goes straight to the native method (a Python wrapper around it cost a
        # tenth of a MineSweeper step); the class's `step` below documents it.
        self.step = native.step

    @property
    def name(self):
        return self._native.name()

    @property
    def rules(self):
        """The rules block for prompts: symbols, how an action is written."""
        return self._native.rules()

    @property
    def max_turns(self):
        """Turns per attempt, the budget `quester train` gives an episode (not enforced
        here)."""
        return self._native.max_turns()

    def reset(self, seed=None, options=None):
        """Starts an episode. `options` may hold `episode_id` and env settings for this
        episode (on top of `make`'s; the env is rebuilt when they change, as the server does).
        A seedless reset draws a seed, which info["seed"] names. Returns (observation, info)."""
        episode_id = None
        if options or self._extra:
            options = dict(options or {})
            episode_id = options.pop("episode_id", None)
            if episode_id is not None and not isinstance(episode_id, str):
                raise TypeError("options['episode_id'] must be a str")
            if options != self._extra:
                # Built before it replaces the old one: a bad setting leaves the env usable.
                self._set_native(_NativeEnv(self.name, {**self._settings, **options}))
                self._extra = options
        if type(seed) is not int or not 0 <= seed < _SEED_LIMIT:
            seed = _check_seed(seed)
        return self._native.reset(seed, episode_id)

    def step(self, text):
        """Plays the model's whole response (the env parses the action from it; an
        unparseable one is an invalid step, not an error). Returns (observation, reward,
        terminated, truncated, info): `terminated` is the env's own end of the episode (its
        rules' limits included); `truncated` is always False, as the turn budget `max_turns`
        is the caller's to enforce, as `quester train` does. Raises RuntimeError before the
        first reset and after the episode ended."""
        return self._native.step(text)

    def state(self):
        """OpenEnv's state dict: `episode_id`, `step_count`, `env`, `max_turns`, and once an
        episode started `seed`, `done`, `won`, `total_reward`."""
        return self._native.state()

    def close(self):
        """Frees the env; later calls raise RuntimeError."""
        self._native.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
