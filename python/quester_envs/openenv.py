"""quester's envs as an OpenEnv `Environment`, for OpenEnv's own server:

    from openenv.core.env_server.http_server import create_app
    from quester_envs.openenv import QuesterAction, QuesterObservation, environment_factory
    app = create_app(environment_factory("sokoban", num_boxes=2), QuesterAction,
                     QuesterObservation, env_name="sokoban")

Clients see what `quester env serve` sends: the action `{"message": TEXT}`, the observation
`{"text", "valid_actions", "metadata"}` with the same metadata, and the same state fields.
Needs `openenv` (pip install "quester-envs[openenv]"); the core package does not.
"""

import functools
from typing import List, Optional

try:
    from openenv.core.env_server.interfaces import Environment
    from openenv.core.env_server.types import Action, EnvironmentMetadata, Observation, State
except ImportError as e:  # pragma: no cover - depends on the install
    raise ImportError(
        "quester_envs.openenv needs the openenv package: pip install openenv==0.10.0"
    ) from e
from pydantic import Field

from . import TextEnv

__all__ = [
    "QuesterAction",
    "QuesterEnvironment",
    "QuesterObservation",
    "create_app",
    "environment_factory",
]


class QuesterAction(Action):
    message: str = Field(description="The model's whole response; the env parses the action")


class QuesterObservation(Observation):
    text: str = Field(description="The env's observation")
    valid_actions: Optional[List[str]] = Field(
        default=None, description="The admissible actions where the env lists them"
    )


class QuesterEnvironment(Environment[QuesterAction, QuesterObservation, State]):
    """One quester env per instance (OpenEnv's server makes one per session)."""

    # Each instance owns its own native env, and steps release the GIL.
    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, env, **settings):
        super().__init__()
        self._env = TextEnv(env, **settings)

    def reset(self, seed=None, episode_id=None, **settings):
        # Other reset keys are env settings for this episode, as the Rust server takes them.
        options = dict(settings)
        if episode_id is not None:
            options["episode_id"] = episode_id
        text, info = self._env.reset(seed=seed, options=options)
        return self._observation(text, None, info)

    def step(self, action, timeout_s=None, **kwargs):
        text, reward, done, _truncated, info = self._env.step(action.message)
        return self._observation(text, reward, info, done)

    def _observation(self, text, reward, info, done=None):
        valid_actions = info.pop("valid_actions")
        if done is None:
            done = self._env.state()["done"]
        return QuesterObservation(
            text=text, valid_actions=valid_actions, reward=reward, done=done, metadata=info
        )

    @property
    def state(self):
        return State(**self._env.state())

    def get_metadata(self):
        return EnvironmentMetadata(
            name=self._env.name,
            description=f"quester's {self._env.name} environment",
            readme_content=self._env.rules,
            version="0.1.0",
        )

    def close(self):
        self._env.close()


def environment_factory(env, **settings):
    """A zero-argument factory for OpenEnv's `create_app` (one env per session)."""
    return functools.partial(QuesterEnvironment, env, **settings)


def create_app(env, max_concurrent_envs=64, **settings):
    """OpenEnv's FastAPI app serving quester env `env`; serve it with uvicorn."""
    from openenv.core.env_server.http_server import create_app as openenv_create_app

    # Fails here, not in the first session, on a bad name or setting.
    TextEnv(env, **settings).close()
    return openenv_create_app(
        environment_factory(env, **settings),
        QuesterAction,
        QuesterObservation,
        env_name=env,
        max_concurrent_envs=max_concurrent_envs,
    )
