"""Rill: a Redis-Streams-compatible, replicated stream store."""

import os as _os

from node.native_build import StaleNativeBuild, check_native_build, use_python_sources

__all__ = ["REDIS_VERSION", "SENTINEL_REDIS_VERSION", "StaleNativeBuild", "__version__", "reported_version"]

__version__ = "0.1.0"
# The Redis version reported in INFO and HELLO: the release whose stream commands Rill has
# all of (up to 8.10's MAXCOUNT/MAXSIZE), so that clients and test suites which decide by
# version what to send use them. Everything else follows Redis 7.2; why this number and not
# 7.2.4 is in docs/compatibility.md ("The version Rill reports").
REDIS_VERSION = "8.10.0"
# `rill sentinel` follows Redis 7.2's sentinel.c and says so.
SENTINEL_REDIS_VERSION = "7.2.4"


def reported_version(mode: str) -> str:
    """redis_version in INFO and HELLO for a server in this mode ("sentinel" or a node's)."""
    return SENTINEL_REDIS_VERSION if mode == "sentinel" else REDIS_VERSION


# Python imports a compiled module before its .py: a build that is not the sources' is
# refused (node/native_build.py), unless RILL_PURE_PYTHON=1 ignores every extension (the
# suite's pure-Python pass, `make test-pure`).
if _os.environ.get("RILL_PURE_PYTHON") == "1":
    use_python_sources()
else:
    check_native_build(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
