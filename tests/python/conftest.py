"""The fixtures shared with python/tests (tests/pylib/quester_fixtures.py)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "pylib"))

from quester_fixtures import env_run, quester_bin, serve  # noqa: E402,F401
