"""redis-py 8.1.0's own stream tests, run against a Rill node, RESP2 and RESP3.

The files are redis-py's, unchanged (tests/clients/README.md; their hashes are checked
below). Its suite decides by the server's INFO `redis_version` which tests apply: Rill
reports 8.10.0 (docs/compatibility.md), so every stream test up to Redis 8.10's MAXCOUNT
runs, and the ones redis-py wrote for servers older than 8.2.2 are skipped by redis-py
itself. The selection is `TestRedisCommands::test_x*`: the XADD … XTRIM tests, nothing else.

Every test must pass except those listed in NOT_PASSING, each with the reason; a listed test
that starts passing fails this test too, so the list stays true.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from typing import Final

import pytest

from tests.conftest import Server

SUITE: Final = os.path.join(os.path.dirname(os.path.abspath(__file__)), "redis_py_8_1")

# The vendored files, as the redis==8.1.0 sdist has them.
PINNED: Final = {
    "tests/__init__.py": "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "tests/conftest.py": "a232ad3888cfc5d75fdb92b510e425dc873d0d33d89c543178f375602a4357e3",
    "tests/ssl_utils.py": "f0bd2ba8d104277aa2a6da7d38bf7011d52be972a067460059048a91414424c0",
    "tests/test_commands.py": "8456f44059908d9f14890131cd9d5be013a15ac7120868a9b151714873b9abcf",
    "tests/test_utils.py": "e164ac42ed755483cb1fb5c1549749de4d0421acb77775b1ad1c865d5a0fc7c3",
}

# Tests of the selection that do not pass against Rill, and why. (None at this time.)
NOT_PASSING: Final[dict[str, str]] = {}

# Skipped by redis-py itself for a server at 8.10: they pin the behaviour of Redis < 8.2.2
# (ENTRIESREAD above entries-added was kept; 8.2.2 cuts it down, redis#14257).
SKIPPED_BY_VERSION: Final = {"test_xgroup_create_entriesread", "test_xgroup_setid"}


def test_the_vendored_files_are_redis_py_8_1_0() -> None:
    for path, digest in PINNED.items():
        with open(os.path.join(SUITE, path), "rb") as f:
            assert hashlib.sha256(f.read()).hexdigest() == digest, f"{path} differs from redis-py 8.1.0's"


@pytest.mark.parametrize("protocol", [2, 3])
def test_redis_py_8_1_stream_tests_pass(rill_node: Server, tmp_path: os.PathLike[str], protocol: int) -> None:
    report = os.path.join(tmp_path, "report.xml")
    cmd = [
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_commands.py",
        "-k", "TestRedisCommands and test_x", f"--redis-url=redis://127.0.0.1:{rill_node.port}",
        f"--protocol={protocol}", f"--junitxml={report}",
    ]  # fmt: skip
    done = subprocess.run(cmd, cwd=SUITE, capture_output=True, text=True, timeout=600)
    assert os.path.exists(report), f"redis-py's suite did not run:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    outcomes: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        name = case.get("name", "")
        kinds = {child.tag for child in case}
        outcomes[name] = (
            "failed" if kinds & {"failure", "error"} else "skipped" if "skipped" in kinds else "passed"
        )  # fmt: skip
    assert len(outcomes) >= 60, f"only {len(outcomes)} stream tests selected:\n{done.stdout[-2000:]}"
    failed = {n for n, o in outcomes.items() if o == "failed"}
    skipped = {n for n, o in outcomes.items() if o == "skipped"}
    assert failed == set(NOT_PASSING), f"RESP{protocol}: failing {sorted(failed)}\n{done.stdout[-6000:]}"
    assert skipped == SKIPPED_BY_VERSION, f"RESP{protocol}: skipped {sorted(skipped)}"
    print(f"redis-py 8.1.0 stream tests, RESP{protocol}: {len(outcomes) - len(failed) - len(skipped)} passed, "
          f"{len(failed)} failed, {len(skipped)} skipped (version-gated)")  # fmt: skip
