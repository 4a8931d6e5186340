"""The stream commands' effects replay to the same state: run a workload through a real
(in-process) node, feed the effect log it produced to a second node as a replica would,
and compare DEBUG DIGEST's digest (which covers entries, counters, groups, consumers and
every pending entry's owner, delivery time and count)."""

from __future__ import annotations

import random
from typing import Any

import hiredis
import pytest

from node.app.rill_node import RillNode
from node.commands.context import Session
from node.commands.reply import ReplyError
from node.config import Config
from node.engine.digest import digest_keyspace
from node.engine.stream_value import StreamValue


class Node:
    """An in-process server with one client session and its effect log as argv lists."""

    def __init__(self, replay: bool = False) -> None:
        node = RillNode(Config())
        self.server = node.server
        self.session = Session(node, 1)
        if replay:
            self.session.flags.add("replay")
        self.log: list[list[bytes]] = []
        reader = hiredis.Reader()

        def collect(data: bytes, offset: int) -> None:
            reader.feed(data)
            while (cmd := reader.gets()) is not False:
                self.log.append(cmd)

        self.server.effects.add_listener(collect)

    def run(self, *argv: bytes | str | int) -> Any:
        args = [a if isinstance(a, bytes) else str(a).encode() for a in argv]
        return self.server.execute(self.session, args)

    def check(self) -> None:
        for db in self.server.keyspace.dbs:
            for value in db.values():
                if isinstance(value, StreamValue):
                    value._check()

    def digest(self) -> bytes:
        return digest_keyspace(self.server.keyspace)


def replay_into(log: list[list[bytes]]) -> Node:
    replica = Node(replay=True)
    for argv in log:
        reply = replica.run(*argv)
        assert type(reply) is not ReplyError, f"replaying {argv!r} failed: {reply.message}"
    return replica


def random_command(rng: random.Random, t: int) -> list[bytes | str | int]:
    key = rng.choice(["s1", "s2"])
    group = rng.choice(["g1", "g2"])
    consumer = rng.choice(["alice", "bob", "carol"])
    some_id = f"{rng.randrange(max(1, t - 60), t + 1)}-{rng.choice([0, 0, 0, 1])}"
    pick = rng.randrange(100)
    if pick < 25:
        trim: list[bytes | str | int] = []
        roll = rng.random()
        if roll < 0.15:
            trim = ["MAXLEN", "~", rng.randrange(0, 12)]
        elif roll < 0.25:
            trim = ["MAXLEN", rng.randrange(0, 12)]
        elif roll < 0.35:
            trim = ["MINID", "~", some_id]
        elif roll < 0.4:
            trim = ["MINID", "=", some_id]
        # '*' takes the clock's millisecond, after which the small explicit IDs fail: rare.
        ident = "*" if rng.random() < 0.02 else rng.choice([f"{t}-*", f"{t}-0", f"{t}-1"])
        return ["XADD", key, *trim, ident, "f", rng.randrange(1000)]
    if pick < 30:
        return ["XDEL", key, some_id, f"{rng.randrange(max(1, t - 60), t + 1)}-0"]
    if pick < 33:
        return ["XTRIM", key, rng.choice(["MAXLEN", "MINID"]), rng.choice(["~", "="]),
                rng.randrange(0, 10) if rng.random() < 0.5 else some_id]  # fmt: skip
    if pick < 40:
        return ["XGROUP", "CREATE", key, group, rng.choice(["0", "$", some_id]), "MKSTREAM"]
    if pick < 43:
        extra: list[bytes | str | int] = ["ENTRIESREAD", rng.randrange(-1, 8)] if rng.random() < 0.5 else []
        return ["XGROUP", "SETID", key, group, rng.choice(["0", "$", some_id]), *extra]
    if pick < 45:
        return ["XGROUP", "DESTROY", key, group]
    if pick < 48:
        return ["XGROUP", rng.choice(["CREATECONSUMER", "DELCONSUMER"]), key, group, consumer]
    if pick < 70:
        opts: list[bytes | str | int] = []
        if rng.random() < 0.5:
            opts += ["COUNT", rng.randrange(1, 5)]
        if rng.random() < 0.2:
            opts.append("NOACK")
        start = ">" if rng.random() < 0.75 else rng.choice(["0", some_id])
        return ["XREADGROUP", "GROUP", group, consumer, *opts, "STREAMS", key, start]
    if pick < 78:
        return ["XACK", key, group, some_id, f"{rng.randrange(max(1, t - 60), t + 1)}-0"]
    if pick < 88:
        opts = []
        if rng.random() < 0.3:
            opts += ["RETRYCOUNT", rng.randrange(5)]
        if rng.random() < 0.3:
            opts.append("FORCE")
        if rng.random() < 0.3:
            opts.append("JUSTID")
        if rng.random() < 0.2:
            opts += ["LASTID", some_id]
        if rng.random() < 0.2:
            opts += ["IDLE", rng.randrange(0, 50)]
        return ["XCLAIM", key, group, consumer, rng.choice([0, 0, 100000]), some_id, *opts]
    if pick < 95:
        opts = ["JUSTID"] if rng.random() < 0.3 else []
        return ["XAUTOCLAIM", key, group, consumer, 0, rng.choice(["0", some_id]), "COUNT", rng.randrange(1, 4), *opts]
    if pick < 98:
        return ["XSETID", key, f"{t}-9"]
    return ["DEL", key]


@pytest.mark.parametrize("seed", range(6))
def test_replaying_the_effects_of_a_random_workload_reproduces_the_digest(seed: int) -> None:
    rng = random.Random(seed)
    primary = Node()
    for t in range(1, 400):
        primary.run(*random_command(rng, t))
        primary.check()
    assert primary.log, "the workload wrote something"
    replica = replay_into(primary.log)
    replica.check()
    assert replica.digest() == primary.digest()
    # And the replica's own effects replay to the same state again (chained replicas).
    assert replay_into(replica.log).digest() == primary.digest()


def test_digest_covers_pending_entries_so_an_unreplicated_claim_would_show() -> None:
    primary = Node()
    primary.run("XADD", "s", "1-0", "f", "v")
    primary.run("XGROUP", "CREATE", "s", "g", "0")
    primary.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    replica = replay_into(primary.log)
    assert replica.digest() == primary.digest()
    # A claim applied on one side only changes the digest.
    primary.run("XCLAIM", "s", "g", "other", "0", "1-0", "TIME", "12345")
    assert replica.digest() != primary.digest()


def test_read_that_creates_a_consumer_and_delivers_nothing_is_replicated() -> None:
    primary = Node()
    primary.run("XGROUP", "CREATE", "s", "g", "$", "MKSTREAM")
    primary.run("XREADGROUP", "GROUP", "g", "idle", "STREAMS", "s", ">")
    assert [b"XGROUP", b"CREATECONSUMER", b"s", b"g", b"idle"] in primary.log
    assert replay_into(primary.log).digest() == primary.digest()


def test_history_reads_replicate_delivery_counts() -> None:
    primary = Node()
    primary.run("XADD", "s", "1-0", "f", "v")
    primary.run("XGROUP", "CREATE", "s", "g", "0")
    primary.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">")
    primary.run("XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", "0")
    replica = replay_into(primary.log)
    pel = replica.server.keyspace.dbs[0][b"s"]
    assert isinstance(pel, StreamValue)
    group = pel.group(b"g")
    assert group is not None and group.pel[1 << 64][1] == 2
    assert replica.digest() == primary.digest()


def test_approximate_trim_effects_are_exact_and_replay_with_their_limit() -> None:
    primary = Node()
    for i in range(1, 400):
        primary.run("XADD", "s", f"{i}-0", "f", "v")
    primary.run("XADD", "s", "MAXLEN", "~", "150", "LIMIT", "200", "500-0", "f", "v")
    effect = primary.log[-1]
    assert effect[2:4] == [b"MAXLEN", b"="] and effect[5:7] == [b"LIMIT", b"200"]
    assert replay_into(primary.log).digest() == primary.digest()
    # The same exact-with-LIMIT form from an ordinary client is refused, as in Redis.
    reply = primary.run("XADD", "s", "MAXLEN", "=", "5", "LIMIT", "10", "*", "f", "v")
    assert isinstance(reply, ReplyError) and "LIMIT cannot be used without the special ~" in reply.message
