"""A two-node Ray cluster on this machine, shared by the Ray tests of a session.

Started once (it takes seconds) in its own temporary directory and stopped at the end
by process id; it never touches another cluster. A test that kills a node gets a
fresh one added afterwards, so later tests still see two nodes.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

# Ray reads its authentication settings once, when first imported: the token of the
# cluster below is set before that, for drivers in this process and in its children.
TOKEN = secrets.token_hex(16)
os.environ["RAY_AUTH_MODE"] = "token"
os.environ["RAY_AUTH_TOKEN"] = TOKEN

from local_cluster import LocalCluster  # noqa: E402

from support import skip_or_fail  # noqa: E402


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    # Looked up, not imported: collecting these tests never loads Ray (seconds), and
    # without it only the tests that need a cluster skip (fail under CI).
    if importlib.util.find_spec("ray") is None:
        skip_or_fail("Ray is not installed (`make test-all` installs it)", "CONDUCTOR_REQUIRE_RAY")
    home = tmp_path_factory.mktemp("ray-worker-home")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CONDUCTOR_", "OPENAI_"))}
    env["CONDUCTOR_HOME"] = str(home)  # workers keep nothing here; never the user's home
    with LocalCluster(env=env, token=TOKEN) as cluster:
        cluster.start(workers=1)
        yield cluster
