"""Rill: a Redis-Streams-compatible, replicated stream store."""

__version__ = "0.1.0"
# The Redis version whose semantics Rill follows; reported in INFO and HELLO so that
# clients which feature-detect by version (redis-py, Jedis, Lettuce) enable stream features.
REDIS_VERSION = "7.2.4"
