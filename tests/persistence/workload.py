"""Seeded random histories over every write Rill logs (stream entries, trimming, consumer
groups and their PELs, strings, times to live, transactions, several databases), for the
round-trip tests: whatever the history, the state after a restart must have the same digest.
Times to live are long (a day): nothing expires during a test."""

from __future__ import annotations

import random

import redis

_KEYS = [b"s0", b"s1", b"s2", b"{x}s3"]
_GROUPS = [b"g0", b"g1"]
_CONSUMERS = [b"alice", b"bob", b"carol"]


def _some_id(client: redis.Redis, rng: random.Random, key: bytes) -> bytes:
    entries = client.xrange(key, count=50)
    if entries and rng.random() < 0.9:
        return rng.choice(entries)[0]  # type: ignore[no-any-return]
    return b"%d-%d" % (rng.randrange(1, 3000), rng.randrange(3))


def step(client: redis.Redis, rng: random.Random) -> None:
    """One random write (or a transaction of a few); errors are part of the history."""
    key = rng.choice(_KEYS)
    group = rng.choice(_GROUPS)
    consumer = rng.choice(_CONSUMERS)
    roll = rng.random()
    try:
        if roll < 0.30:
            fields: list[bytes] = []
            for i in range(rng.randrange(1, 4)):
                fields += [b"f%d" % (i if rng.random() < 0.8 else rng.randrange(9)), b"v" * rng.randrange(0, 300)]
            trim: list[bytes] = []
            if rng.random() < 0.15:
                trim = [b"MAXLEN", rng.choice([b"~", b"="]), b"%d" % rng.randrange(5, 60)]
            elif rng.random() < 0.05:
                trim = [b"MINID", b"~", _some_id(client, rng, key)]
            entry_id = b"*" if rng.random() < 0.9 else b"%d-*" % rng.randrange(1, 10**13)
            client.execute_command(b"XADD", key, *trim, entry_id, *fields)
        elif roll < 0.36:
            client.execute_command(b"XDEL", key, _some_id(client, rng, key))
        elif roll < 0.39:
            client.execute_command(b"XTRIM", key, b"MAXLEN", rng.choice([b"~", b"="]), b"%d" % rng.randrange(0, 40))
        elif roll < 0.44:
            client.execute_command(b"XGROUP", b"CREATE", key, group, rng.choice([b"$", b"0"]), b"MKSTREAM")
        elif roll < 0.60:
            start = b">" if rng.random() < 0.8 else b"0"
            noack = [b"NOACK"] if rng.random() < 0.1 else []
            client.execute_command(b"XREADGROUP", b"GROUP", group, consumer, b"COUNT", b"%d" % rng.randrange(1, 6),
                                   *noack, b"STREAMS", key, start)
        elif roll < 0.68:
            pending = client.xpending_range(key, group, min="-", max="+", count=5)
            if pending:
                client.execute_command(b"XACK", key, group, *[p["message_id"] for p in pending[: rng.randrange(1, 4)]])
        elif roll < 0.74:
            pending = client.xpending_range(key, group, min="-", max="+", count=5)
            ids = [p["message_id"] for p in pending] or [_some_id(client, rng, key)]
            extra: list[bytes] = []
            if rng.random() < 0.3:
                extra += [b"RETRYCOUNT", b"%d" % rng.randrange(0, 9)]
            if rng.random() < 0.2:
                extra.append(b"FORCE")
            if rng.random() < 0.3:
                extra.append(b"JUSTID")
            client.execute_command(b"XCLAIM", key, group, consumer, b"0", rng.choice(ids), *extra)
        elif roll < 0.77:
            client.execute_command(b"XAUTOCLAIM", key, group, consumer, b"0", b"0-0", b"COUNT", b"3")
        elif roll < 0.80:
            client.execute_command(b"XGROUP", b"SETID", key, group, _some_id(client, rng, key),
                                   b"ENTRIESREAD", b"%d" % rng.randrange(0, 50))
        elif roll < 0.82:
            client.execute_command(b"XGROUP", rng.choice([b"CREATECONSUMER", b"DELCONSUMER"]), key, group, consumer)
        elif roll < 0.83:
            client.execute_command(b"XGROUP", b"DESTROY", key, group)
        elif roll < 0.84:
            client.execute_command(b"XSETID", key, b"%d-0" % (10**13 + rng.randrange(10**6)))
        elif roll < 0.89:
            ttl = rng.choice([[], [], [b"EX", b"86400"], [b"PX", b"86400000"], [b"KEEPTTL"]])
            client.execute_command(b"SET", b"str%d" % rng.randrange(20), b"x" * rng.randrange(0, 50), *ttl)
        elif roll < 0.92:
            target = rng.choice([key, b"str%d" % rng.randrange(20), b"counter"])
            client.execute_command(*rng.choice([
                [b"EXPIRE", target, b"86400"], [b"PEXPIRE", target, b"86400000", b"GT"],
                [b"EXPIREAT", target, b"%d" % (4_000_000_000 + rng.randrange(1000)), b"NX"],
                [b"PERSIST", target], [b"GETEX", target, b"EX", b"86400"],
            ]))
        elif roll < 0.94:
            client.execute_command(b"INCRBY", b"counter", b"%d" % rng.randrange(-5, 10))
        elif roll < 0.97:
            pipe = client.pipeline(transaction=True)
            pipe.execute_command(b"XADD", key, b"*", b"tx", b"1")
            pipe.execute_command(b"SET", b"tx-marker", b"%d" % rng.randrange(1000))
            pipe.execute_command(b"XGROUP", b"CREATE", key, group, b"$")
            pipe.execute(raise_on_error=False)
        elif roll < 0.985:
            client.execute_command(b"DEL", rng.choice([*_KEYS, b"str1", b"counter"]))
        else:
            client.execute_command(b"RENAME", key, rng.choice(_KEYS))
    except redis.ResponseError:
        pass


def run(client: redis.Redis, other_db: redis.Redis, seed: int, steps: int) -> None:
    """`steps` random writes, about one in ten in a second database."""
    rng = random.Random(seed)
    for _ in range(steps):
        step(other_db if rng.random() < 0.1 else client, rng)
