"""Where a primary's replication port is. A node listens for replication on `repl-port`, or
on its RESP port + 10000 when that is 0 (an OS-chosen port if that exceeds 65535), and reports
it as `repl_grpc_port` in INFO replication. `REPLICAOF host port` names the primary's RESP
port; the replica reads that field from the primary's RESP port (after AUTH with masteruser
and masterauth, over TLS with tls-replication) and connects there, so no replica needs to
know how its primary was configured.
"""

from __future__ import annotations

import asyncio
import ssl
from typing import Final

import hiredis

from node.config import Config
from node.log.encode import encode_command

REPL_PORT_OFFSET: Final = 10000  # default replication port = RESP port + this (as Redis Cluster's bus)
INFO_PORT_FIELD: Final = "repl_grpc_port"


def listen_port(config: Config, resp_port: int) -> int:
    """The port this node serves replication on (0: the OS chooses)."""
    configured = config.get_int("repl-port")
    if configured:
        return configured
    derived = resp_port + REPL_PORT_OFFSET
    return derived if resp_port and derived <= 65535 else 0


class DiscoveryError(Exception):
    """The primary's RESP port did not tell its replication port."""


class RedisPrimary(Exception):
    """The primary answered INFO replication as a redis-server does (no repl_grpc_port): the
    node replicates from it over Redis's own protocol (node/replication/redis_link.py)."""


async def discover_repl_port(
    host: str, port: int, masterauth: str, timeout: float, user: str = "", tls: ssl.SSLContext | None = None
) -> int:
    """The replication gRPC port of the node whose RESP port is host:port, read from its
    INFO replication (`repl_grpc_port`)."""
    reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port, ssl=tls), timeout)
    try:
        commands: list[list[bytes]] = []
        if masterauth:
            credentials = [user.encode(), masterauth.encode()] if user else [masterauth.encode()]
            commands.append([b"AUTH", *credentials])
        commands.append([b"INFO", b"replication"])
        writer.write(b"".join(encode_command(c) for c in commands))
        parser = hiredis.Reader()
        replies: list[object] = []
        async with asyncio.timeout(timeout):
            while len(replies) < len(commands):
                reply = parser.gets()
                if reply is not False:
                    replies.append(reply)
                    continue
                data = await reader.read(65536)
                if not data:
                    raise DiscoveryError("the primary closed the connection")
                parser.feed(data)
    finally:
        # Closed without awaiting wait_closed(): compiled by mypyc, an await in this finally
        # re-raised the previous call's exception, so every later attempt failed with the
        # first one's error (tests/replication_node/test_link_loss.py).
        writer.close()
    for reply in replies:
        if isinstance(reply, hiredis.ReplyError):
            raise DiscoveryError(f"the primary answered: {reply}")
    info = replies[-1]
    text = info.decode("utf-8", "replace") if isinstance(info, bytes) else ""
    for line in text.splitlines():
        name, _, value = line.partition(":")
        if name == INFO_PORT_FIELD and value.strip().isdigit():
            if int(value) == 0:
                raise DiscoveryError("the primary does not listen for replicas yet")
            return int(value)
    if text.startswith("# Replication") or "\nrole:" in text or text.startswith("role:"):
        raise RedisPrimary(f"{host}:{port}")
    raise DiscoveryError(f"{host}:{port} answered INFO replication with no replication section")
