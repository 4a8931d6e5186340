"""What the pipeline asks a server about itself, over RESP: whether it offers committed reads
(Rill's XCOMMITTED), the replication history it is in (INFO replication: replid, and fenced
mode's epoch), and how large its replica set is (for a WAIT that counts a majority).

Support is probed, not inferred from a version string: redis-server answers an unknown command
with an error. Probes are cached per node and process.
"""

from __future__ import annotations

from dataclasses import dataclass

import redis

_committed: dict[tuple[str, int, int], bool] = {}


def _node_key(client: redis.Redis) -> tuple[str, int, int]:
    kwargs = client.connection_pool.connection_kwargs
    return str(kwargs.get("host")), int(kwargs.get("port", 0)), int(kwargs.get("db", 0))


def has_committed_reads(client: redis.Redis) -> bool:
    """Whether the server has XCOMMITTED (Rill's committed reads)."""
    key = _node_key(client)
    if key not in _committed:
        try:
            client.execute_command("XCOMMITTED", "__rill:probe")
            _committed[key] = True
        except redis.exceptions.ResponseError:
            _committed[key] = False
    return _committed[key]


def committed_ids(client: redis.Redis, streams: list[str]) -> dict[str, bytes | None]:
    """XCOMMITTED of each stream: its highest committed entry ID, None when it does not exist."""
    reply = client.execute_command("XCOMMITTED", *streams)
    return dict(zip(streams, reply))


@dataclass(frozen=True)
class History:
    """The replication history a node is in: what offsets record to notice a failover."""

    replid: str  # master_replid: replicas share their primary's
    replid2: str  # the history it continues, if any
    epoch: int  # fenced mode's epoch (0 outside it)
    role: str  # "master" or "slave"
    connected_replicas: int
    link_up: bool  # a replica's link to its primary (True on a primary)


def _replid(value: object) -> str:
    # redis-py parses INFO values: a replid of decimal digits only comes back as an int.
    return str(value).rjust(40, "0") if isinstance(value, int) else str(value or "")


def history(client: redis.Redis) -> History:
    info = client.info("replication")
    return History(
        replid=_replid(info.get("master_replid")),
        replid2=_replid(info.get("master_replid2")),
        epoch=int(info.get("epoch", 0)),
        role=str(info.get("role", "master")),
        connected_replicas=int(info.get("connected_slaves", 0)),
        link_up=info.get("role") != "slave" or info.get("master_link_status") == "up",
    )


def replica_set_size(client: redis.Redis) -> int:
    """N, the nodes of the primary's replica set: fenced mode's configured size on a Rill node
    that has one, else the primary and the replicas connected now."""
    try:
        reply = client.config_get("fenced-replica-set-size")
        size = int(reply.get("fenced-replica-set-size", 0) or 0)
    except (redis.exceptions.ResponseError, ValueError):
        size = 0
    if size > 0:
        return size
    return 1 + history(client).connected_replicas
