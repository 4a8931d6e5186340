"""Idempotent production survives a restart (Redis 8.6's "XADD IDMP persists in RDB", "XADD
IDMP set in AOF", "XCFGSET configuration persists in RDB / in AOF", "XINFO STREAM iids-added
persists in RDB"): after SIGKILL and a restart from the AOF alone, a snapshot alone, or a
rewritten AOF plus its tail, the digest (which covers the IDMP state) is the same and a
producer retrying its last writes adds nothing. Also: a snapshot written before the IDMP
section existed still loads."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import redis

from node.engine.digest import digest_keyspace
from node.engine.keyspace import Keyspace
from node.persistence.snapshot import load_snapshot
from tests.persistence.conftest import Nodes, digest, wait_child_done

DATA = Path(__file__).parent / "data"
IDMP_FIELDS = ("idmp-duration", "idmp-maxsize", "pids-tracked", "iids-tracked", "iids-added", "iids-duplicates")


def _writes(client: redis.Redis, first: int, count: int) -> dict[tuple[str, str], bytes]:
    """IDMP and IDMPAUTO adds from two producers on two streams, with duplicates, trimming
    and a settings change; returns what each (stream, iid) was added as."""
    added: dict[tuple[str, str], bytes] = {}
    pipe = client.pipeline(transaction=False)
    calls = []
    for i in range(first, first + count):
        stream = "orders" if i % 3 else "payments"
        pid = f"writer-{i % 2}"
        iid = f"batch-7:{i}"
        pipe.execute_command("XADD", stream, "IDMP", pid, iid, "MAXLEN", "~", "50", "*", "n", i)
        calls.append((stream, iid))
        if i % 10 == 0:
            pipe.execute_command("XADD", stream, "IDMP", pid, iid, "*", "n", "retry")  # a duplicate
            calls.append((stream, iid))
        if i % 7 == 0:
            pipe.execute_command("XADD", stream, "IDMPAUTO", pid, "*", "n", i % 4)
            calls.append((stream, f"auto:{i % 4}"))
    for call, reply in zip(calls, pipe.execute()):
        added.setdefault(call, reply)
    return added


def _retry_adds_nothing(client: redis.Redis, added: dict[tuple[str, str], bytes], count: int) -> None:
    lengths = {s: client.xlen(s) for s in ("orders", "payments")}
    for (stream, iid), entry_id in list(added.items())[-count:]:
        if iid.startswith("auto:"):
            continue
        pid = f"writer-{int(iid.split(':')[1]) % 2}"
        assert client.execute_command("XADD", stream, "IDMP", pid, iid, "*", "n", "again") == entry_id
    assert {s: client.xlen(s) for s in ("orders", "payments")} == lengths


def _idmp_info(client: redis.Redis, stream: str) -> list[int]:
    info = client.xinfo_stream(stream)
    return [info[name] for name in IDMP_FIELDS]


def test_aof_restart_after_sigkill_keeps_every_producers_history(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always", "--stream-idmp-maxsize", "40")
    client = redis.Redis(port=node.port)
    added = _writes(client, 0, 120)
    client.execute_command("XCFGSET", "payments", "IDMP-DURATION", "600")  # clears its history
    added.update(_writes(client, 120, 30))
    before = digest(client)
    infos = [_idmp_info(client, s) for s in ("orders", "payments")]
    node.kill()
    # The restarted node's own default settings must not matter: the log carries them.
    node = nodes.start("--appendonly", "yes")
    client = redis.Redis(port=node.port)
    assert digest(client) == before
    assert [_idmp_info(client, s) for s in ("orders", "payments")] == infos
    assert infos[0][1] == 40 and infos[1][:2] == [600, 40]
    _retry_adds_nothing(client, added, 30)


@pytest.mark.parametrize("rewrite", [False, True])
def test_snapshot_and_rewritten_aof_keep_the_idmp_state(nodes: Nodes, rewrite: bool) -> None:
    flags = ("--appendonly", "yes", "--appendfsync", "everysec") if rewrite else ()
    node = nodes.start(*flags)
    client = redis.Redis(port=node.port)
    added = _writes(client, 0, 100)
    client.execute_command("XCFGSET", "orders", "IDMP-DURATION", "75", "IDMP-MAXSIZE", "7500")
    added.update(_writes(client, 100, 40))
    if rewrite:
        assert client.execute_command("BGREWRITEAOF") is True
        wait_child_done(client)
        added.update(_writes(client, 140, 20))  # the tail after the new base
    else:
        assert client.save() is True
    before = digest(client)
    infos = [_idmp_info(client, s) for s in ("orders", "payments")]
    node.kill()
    node = nodes.start(*flags)
    client = redis.Redis(port=node.port)
    assert digest(client) == before
    assert [_idmp_info(client, s) for s in ("orders", "payments")] == infos
    assert infos[0][:2] == [75, 7500]
    _retry_adds_nothing(client, added, 20)


def test_a_snapshot_written_before_idmp_existed_still_loads(nodes: Nodes) -> None:
    """`data/pre-idmp.snapshot` was written by the code before the IDMP section (commit
    d0ffbbb): streams, a group with a PEL, a string. It loads, and its streams have the
    default IDMP settings and nothing remembered."""
    loaded = Keyspace(16)
    result = load_snapshot(str(DATA / "pre-idmp.snapshot"), loaded)
    assert result.keys == 3 and result.meta.offset == 1234
    assert digest_keyspace(loaded) == b"0b44c28912f4f7a55d9c4a957791a405f2f772aa"
    # And a node starts from it.
    (Path(nodes.dir) / "dump.rdb").write_bytes((DATA / "pre-idmp.snapshot").read_bytes())
    node = nodes.start()
    client = redis.Redis(port=node.port)
    assert digest(client) == b"0b44c28912f4f7a55d9c4a957791a405f2f772aa"
    assert _idmp_info(client, "orders") == [100, 100, 0, 0, 0, 0]
    assert client.xlen("orders") == 38
    assert os.path.getsize(DATA / "pre-idmp.snapshot") < 4096
