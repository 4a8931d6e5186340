"""A seeded random workload of every stream write (and a few string and transaction
commands) against one node, for convergence tests: whatever the primary does, its replicas
must end with the same state."""

from __future__ import annotations

import random

import redis

KEYS = [b"s0", b"s1", b"s2"]
GROUPS = [b"g0", b"g1"]
CONSUMERS = [b"alice", b"bob", b"carol"]


class Workload:
    def __init__(self, client: redis.Redis, seed: int) -> None:
        self.c = client
        self.rng = random.Random(seed)
        self.errors = 0
        self.commands = 0

    def call(self, *argv: object) -> object:
        self.commands += 1
        try:
            return self.c.execute_command(*argv)
        except redis.ResponseError:
            self.errors += 1  # e.g. a group that does not exist (yet): nothing is logged
            return None

    def ids(self, key: bytes, count: int = 20) -> list[bytes]:
        entries = self.c.execute_command("XRANGE", key, "-", "+", "COUNT", 200) or []
        picked = [entry[0] for entry in entries]
        self.rng.shuffle(picked)
        return picked[:count]

    def pending(self, key: bytes, group: bytes) -> list[bytes]:
        try:
            rows = self.c.execute_command("XPENDING", key, group, "-", "+", 50) or []
        except redis.ResponseError:
            return []
        return [row[0] for row in rows]

    def step(self) -> None:
        rng = self.rng
        key = rng.choice(KEYS)
        group = rng.choice(GROUPS)
        consumer = rng.choice(CONSUMERS)
        op = rng.randrange(100)
        if op < 30:
            args: list[object] = ["XADD", key]
            if rng.random() < 0.2:
                args += ["MAXLEN", "~", rng.randrange(5, 40), "LIMIT", rng.randrange(1, 30)]
            args += ["*", "f", rng.randrange(1000), "g", "x" * rng.randrange(20)]
            self.call(*args)
        elif op < 42:
            args = ["XREADGROUP", "GROUP", group, consumer, "COUNT", rng.randrange(1, 8)]
            if rng.random() < 0.15:
                args.append("NOACK")
            self.call(*args, "STREAMS", key, ">" if rng.random() < 0.8 else "0")
        elif op < 50:
            ids = self.pending(key, group)
            if ids:
                self.call("XACK", key, group, *rng.sample(ids, min(len(ids), rng.randrange(1, 4))))
        elif op < 56:
            ids = self.pending(key, group) + self.ids(key, 3)
            if ids:
                args = ["XCLAIM", key, group, consumer, 0, *rng.sample(ids, min(len(ids), 3))]
                if rng.random() < 0.3:
                    args.append("JUSTID")
                self.call(*args)
        elif op < 61:
            self.call("XAUTOCLAIM", key, group, consumer, 0, "0-0", "COUNT", rng.randrange(1, 10))
        elif op < 68:
            ids = self.ids(key, 3)
            if ids:
                self.call("XDEL", key, *ids)  # pending entries too: XCLAIM/XAUTOCLAIM then see them deleted
        elif op < 72:
            if rng.random() < 0.5:
                self.call("XTRIM", key, "MAXLEN", "~", rng.randrange(0, 30), "LIMIT", rng.randrange(1, 50))
            else:
                self.call("XTRIM", key, "MAXLEN", rng.randrange(10, 60))
        elif op < 74:
            ids = self.ids(key, 1)
            if ids:
                self.call("XTRIM", key, "MINID", ids[0])
        elif op < 76:
            info = self.call("XINFO", "STREAM", key)
            if isinstance(info, list):
                last = dict(zip(info[::2], info[1::2]))[b"last-generated-id"]
                ms = int(last.split(b"-")[0]) + rng.randrange(0, 3)
                self.call("XSETID", key, f"{ms}-{rng.randrange(1, 5)}", "ENTRIESADDED", 10_000 + self.commands,
                          "MAXDELETEDID", "0-1")
        elif op < 81:
            self.call("XGROUP", "CREATE", key, group, rng.choice(["$", "0"]), "MKSTREAM",
                      "ENTRIESREAD", rng.randrange(0, 5))
        elif op < 83:
            self.call("XGROUP", "SETID", key, group, rng.choice(["$", "0"]))
        elif op < 85:
            self.call("XGROUP", "CREATECONSUMER", key, group, rng.choice(CONSUMERS + [b"dave"]))
        elif op < 87:
            self.call("XGROUP", "DELCONSUMER", key, group, rng.choice(CONSUMERS))
        elif op < 88:
            self.call("XGROUP", "DESTROY", key, group)
        elif op < 93:
            pipe = self.c.pipeline(transaction=True)
            pipe.execute_command("XADD", key, "*", "tx", 1)
            pipe.execute_command("XREADGROUP", "GROUP", group, consumer, "COUNT", 2, "STREAMS", key, ">")
            pipe.execute_command("SET", b"str:" + key, rng.randrange(100))
            self.commands += 3
            try:
                pipe.execute(raise_on_error=False)
            except redis.ResponseError:
                self.errors += 1
        elif op < 96:
            self.call("SET", rng.choice([b"k1", b"k2"]), rng.randrange(1000))
        elif op < 97:
            self.call("DEL", rng.choice([b"k1", b"k2", b"s2"]))
        else:
            self.call("XADD", key, "NOMKSTREAM", "*", "n", 1)

    def run(self, steps: int) -> None:
        for _ in range(steps):
            self.step()
