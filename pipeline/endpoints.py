"""Finding the nodes and talking to them: the primary and the replicas come from the ``url``
option, from Sentinel (``sentinels`` + ``masterName``) or from ``replicaUrls``; a `Node` is a
picklable address that travels inside Spark partitions to the executors, which open their own
redis-py connections (RESP only: the same code reads redis-server and Rill).

After a failure, tasks look for a node again with `rediscover`: exponential backoff (0.1 s
doubling to 2 s) until `failoverTimeoutMs` has passed, which leaves Sentinel the time to
promote a replica instead of burning Spark's task retries in the first second.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import redis
from redis.sentinel import Sentinel

from pipeline.options import NO_TLS, ConnectionOptions, Tls

log = logging.getLogger("pipeline.rill")

T = TypeVar("T")

# What a node that went away (or stopped being the primary) looks like from a client.
NODE_ERRORS = (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError)
_FIRST_DELAY = 0.1
_MAX_DELAY = 2.0

# Replies parsed by hand for speed (raw nested lists straight from hiredis), see pipeline.arrow.
_RAW_REPLIES = ("XRANGE", "XREVRANGE", "XREADGROUP", "XREAD", "XCLAIM", "XAUTOCLAIM")


class NoNodeError(ConnectionError):
    """No node of the configured set answers."""


@dataclass(frozen=True)
class Node:
    """One server to connect to; picklable, so it can travel in a Spark partition."""

    host: str
    port: int
    db: int = 0
    username: str | None = None
    password: str | None = None
    ssl: bool = False
    tls: Tls = NO_TLS

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"

    def client(self, socket_timeout: float) -> redis.Redis:
        """A connection whose stream replies stay raw lists of bytes (no per-entry dicts)."""
        client = redis.Redis(host=self.host, port=self.port, db=self.db, username=self.username,
                              password=self.password, socket_timeout=socket_timeout,
                              socket_connect_timeout=socket_timeout, decode_responses=False,
                              **tls_kwargs(self.tls if self.ssl else None))
        for command in _RAW_REPLIES:
            client.response_callbacks.pop(command, None)
        return client


def tls_kwargs(tls: Tls | None) -> dict[str, Any]:
    """redis-py's connection arguments for TLS (none for a plain connection)."""
    if tls is None:
        return {}
    return {"ssl": True, "ssl_ca_certs": tls.ca_file, "ssl_certfile": tls.cert_file, "ssl_keyfile": tls.key_file}


def node_from_url(url: str, tls: Tls = NO_TLS) -> Node:
    parsed = urlparse(url)
    path = parsed.path.lstrip("/")
    return Node(
        host=parsed.hostname or "127.0.0.1",
        port=parsed.port or 6379,
        db=int(path) if path.isdigit() else 0,
        username=unquote(parsed.username) if parsed.username else None,
        password=unquote(parsed.password) if parsed.password else None,
        ssl=parsed.scheme == "rediss",
        tls=tls,
    )


@dataclass(frozen=True)
class Topology:
    """The primary and the replicas as discovered at one moment."""

    primary: Node
    replicas: tuple[Node, ...]


def discover(conn: ConnectionOptions) -> Topology:
    """Ask Sentinel (when configured) or read the options: the primary, and the replicas that
    readFrom=replica would use. Credentials and db come from ``url`` in every case."""
    base = node_from_url(conn.url, conn.tls)
    if conn.sentinels:
        assert conn.master_name is not None
        sentinel_kwargs: dict[str, Any] = {"socket_timeout": conn.socket_timeout, **tls_kwargs(conn.sentinel_tls)}
        if conn.sentinel_password:
            sentinel_kwargs["password"] = conn.sentinel_password
        sentinel = Sentinel(list(conn.sentinels), socket_timeout=conn.socket_timeout, sentinel_kwargs=sentinel_kwargs)
        try:
            host, port = sentinel.discover_master(conn.master_name)
            found = sentinel.discover_slaves(conn.master_name)
        except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError) as e:
            raise NoNodeError(f"Sentinel at {conn.sentinels} could not name a primary for {conn.master_name!r}: {e}") from e
        primary = replace(base, host=host, port=int(port))
        replicas = tuple(replace(base, host=h, port=int(p)) for h, p in sorted(found))
    else:
        primary = base
        replicas = tuple(node_from_url(u, conn.tls) for u in conn.replica_urls)
    return Topology(primary, replicas)


def rediscover(conn: ConnectionOptions, why: str, check: Callable[[Topology], T],
               deadline: float | None = None) -> T:
    """`check(discover(conn))` until it returns without a node error, with backoff, for at
    most `failoverTimeoutMs` (or until `deadline`, time.monotonic()); then the last error."""
    deadline = deadline if deadline is not None else time.monotonic() + conn.failover_timeout
    delay = _FIRST_DELAY
    while True:
        try:
            return check(discover(conn))
        except NODE_ERRORS + (NoNodeError, NotPrimaryError) as e:
            left = deadline - time.monotonic()
            if left <= 0:
                raise NoNodeError(f"{why}: no node answered as needed within {conn.failover_timeout:.0f}s "
                                  f"(failoverTimeoutMs): {e}") from e
            log.warning("%s: %s; looking again in %.1fs", why, e, min(delay, left))
            time.sleep(min(delay, left))
            delay = min(delay * 2, _MAX_DELAY)


class NotPrimaryError(ConnectionError):
    """The node named as the primary is not one (any more)."""


def read_nodes(conn: ConnectionOptions, topology: Topology) -> tuple[Node, ...]:
    """The nodes that serve reads, in the order partitions are dealt to them."""
    if conn.read_from == "primary":
        return (topology.primary,)
    if not topology.replicas:
        log.warning("readFrom=replica but no replica is known (%s): reading from the primary %s",
                    "Sentinel lists none" if conn.sentinels else "option replicaUrls is empty", topology.primary)
        return (topology.primary,)
    return topology.replicas

