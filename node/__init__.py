"""Rill: a Redis-Streams-compatible, replicated stream store."""

import os as _os

from node.native_build import StaleNativeBuild, check_native_build, use_python_sources

__all__ = ["REDIS_VERSION", "StaleNativeBuild", "__version__"]

__version__ = "0.1.0"
# The Redis version whose semantics Rill follows; reported in INFO and HELLO so that
# clients which feature-detect by version (redis-py, Jedis, Lettuce) enable stream features.
REDIS_VERSION = "7.2.4"

# Python imports a compiled module before its .py: a build that is not the sources' is
# refused (node/native_build.py), unless RILL_PURE_PYTHON=1 ignores every extension (the
# suite's pure-Python pass, `make test-pure`).
if _os.environ.get("RILL_PURE_PYTHON") == "1":
    use_python_sources()
else:
    check_native_build(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))))
