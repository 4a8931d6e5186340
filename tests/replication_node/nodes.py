"""Real Rill nodes replicating on loopback: starting primaries and replicas with short
replication timeouts, reading their INFO, waiting (bounded) for them to be in sync."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

import redis

from tests.conftest import Server, free_port, start_rill

T = TypeVar("T")

# repl-timeout is whole seconds (as in Redis); 2 s keeps link-loss tests short.
FAST = ("--repl-timeout", "2", "--repl-ping-replica-period", "1")
WAIT_TIMEOUT = 20.0


def start_node(*flags: str, replicaof: Server | None = None, port: int | None = None, dir: str | None = None) -> Server:
    """A node on free ports (RESP and replication), optionally a replica of `replicaof`."""
    args = ["--repl-port", str(free_port()), *FAST, *flags]
    if replicaof is not None:
        args += ["--replicaof", "127.0.0.1", str(replicaof.port)]
    return start_rill(*args, port=port, dir=dir)


def raw_client(node: Server, **kwargs: object) -> redis.Redis:
    """A RESP2 redis-py client that returns replies as the server sent them (no parsing)."""
    client = node.client(protocol=2, **kwargs)
    client.response_callbacks.clear()
    return client


def call(node: Server, *args: object) -> object:
    """One command on a fresh raw connection: its reply, or "-<error>" (as redis-py words it:
    without the ERR prefix)."""
    with raw_client(node) as c:
        try:
            return c.execute_command(*args)
        except redis.ResponseError as exc:
            return f"-{exc}"


def info(node: Server, section: str = "replication") -> dict[str, str]:
    with raw_client(node) as c:
        raw = c.execute_command("INFO", section)
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    fields: dict[str, str] = {}
    for line in text.splitlines():
        name, sep, value = line.partition(":")
        if sep:
            fields[name] = value
    return fields


def stat(node: Server, name: str) -> int:
    return int(info(node, "stats")[name])


def offset(node: Server) -> int:
    return int(info(node)["master_repl_offset"])


def wait_until(check: Callable[[], T], what: str, timeout: float = WAIT_TIMEOUT) -> T:
    """Polls `check` until it returns a truthy value; fails the test after `timeout`."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (redis.ConnectionError, redis.TimeoutError):
            last = None
        if last:
            return last
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def wait_synced(primary: Server, *replicas: Server, timeout: float = WAIT_TIMEOUT) -> int:
    """Until every replica's link is up and its offset equals the primary's (with the primary
    idle); returns that offset."""

    def synced() -> int | None:
        target = offset(primary)
        for replica in replicas:
            fields = info(replica)
            if fields.get("master_link_status") != "up" or int(fields["slave_repl_offset"]) != target:
                return None
        return target or -1

    return wait_until(synced, f"replicas {[r.port for r in replicas]} to reach the primary's offset", timeout)


def digest(node: Server) -> bytes:
    with raw_client(node) as c:
        value = c.execute_command("DEBUG", "DIGEST")
    return value if isinstance(value, bytes) else str(value).encode()


@contextmanager
def stopped(node: Server) -> Iterator[None]:
    """SIGSTOP the node for the block's duration (always continued afterwards)."""
    node.pause()
    try:
        yield
    finally:
        node.resume()


def stop_all(started: list[Server]) -> None:
    """Stops every node (a paused one is resumed first: see Server.stop)."""
    for node in started:
        node.stop()
