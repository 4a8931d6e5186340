"""Crash safety: clients write (XADD, XREADGROUP, XACK, XCLAIM) while the node is killed with
SIGKILL at random moments; after every restart the state must hold each acknowledged write
and nothing that no client sent, and the group state (last delivered ID, PEL owners and
delivery counts) must be what clients were told.

Each worker owns one stream and runs one command at a time, so at a kill it has at most one
command in flight, whose outcome is unknown (it may or may not have reached the disk). The
checker is a pure function of the model built from acknowledged replies, that in-flight
command, and the state observed after the restart; the model then adopts the observed
state and the next cycle goes on from it.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass, field

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.persistence.conftest import Nodes

Id = tuple[int, int]
Nack = tuple[bytes, int]  # owner, delivery count


def _parse(raw: bytes) -> Id:
    ms, seq = raw.split(b"-")
    return int(ms), int(seq)


@dataclass
class StreamModel:
    """What clients were told about one stream."""

    key: bytes
    consumers: tuple[bytes, bytes]
    entries: dict[int, Id] = field(default_factory=dict)  # sequence number n -> ID
    last_delivered: Id = (0, 0)
    pel: dict[Id, Nack] = field(default_factory=dict)
    next_n: int = 0
    inflight: tuple[object, ...] | None = None  # the command without a reply at the kill


@dataclass
class Observed:
    entries: dict[int, Id]
    last_delivered: Id
    pel: dict[Id, Nack]


def check(model: StreamModel, seen: Observed) -> list[str]:
    """Every violation of "acknowledged is kept, nothing is invented, group state as told"."""
    problems: list[str] = []
    op = model.inflight or ("none",)
    for n, entry_id in model.entries.items():
        if seen.entries.get(n) != entry_id:
            problems.append(f"acknowledged XADD n={n} {entry_id} is {seen.entries.get(n)} after restart")
    for n in seen.entries:
        if n not in model.entries and op != ("xadd", n):
            problems.append(f"entry n={n} was never sent or was sent before another acknowledged one")
    for entry_id, told in model.pel.items():
        got = seen.pel.get(entry_id)
        if op == ("ack", entry_id):
            ok = got in (None, told)
        elif op[0] == "claim" and op[1] == entry_id:
            ok = got in (told, (op[2], told[1] + 1))
        else:
            ok = got == told
        if not ok:
            problems.append(f"pending {entry_id}: clients were told {told}, found {got} (in flight: {op})")
    new = {i: nack for i, nack in seen.pel.items() if i not in model.pel}
    for entry_id, nack in new.items():
        if not (op[0] == "read" and entry_id > model.last_delivered and nack == (op[1], 1)):
            problems.append(f"pending {entry_id} {nack} was never delivered (in flight: {op})")
    expected_last = max(new) if new else model.last_delivered
    if seen.last_delivered != expected_last:
        problems.append(f"last-delivered-id {seen.last_delivered}, clients were told {model.last_delivered} "
                        f"(in flight: {op})")
    return problems


def observe(client: redis.Redis, model: StreamModel) -> Observed:
    entries = {int(fields[b"n"]): _parse(entry_id) for entry_id, fields in client.xrange(model.key)}
    groups = client.xinfo_groups(model.key)
    last = _parse(groups[0]["last-delivered-id"]) if groups else (0, 0)
    pending = client.xpending_range(model.key, "g", min="-", max="+", count=100000)
    pel = {_parse(p["message_id"]): (p["consumer"], int(p["times_delivered"])) for p in pending}
    return Observed(entries, last, pel)


def adopt(model: StreamModel, seen: Observed) -> None:
    model.entries = dict(seen.entries)
    model.last_delivered = seen.last_delivered
    model.pel = dict(seen.pel)
    model.next_n = max([model.next_n, *[n + 1 for n in seen.entries]])
    model.inflight = None


def worker(port: int, model: StreamModel, seed: int, stop: threading.Event, failures: list[BaseException]) -> None:
    """Random commands until the connection breaks; the model records acknowledged replies."""
    try:
        _work(port, model, seed, stop)
    except BaseException as exc:  # reported by the test thread
        failures.append(exc)


def _work(port: int, model: StreamModel, seed: int, stop: threading.Event) -> None:
    rng = random.Random(seed)
    client = redis.Redis(port=port, socket_timeout=5, retry=Retry(NoBackoff(), 0))
    try:
        while not stop.is_set():
            roll = rng.random()
            if not model.pel and roll >= 0.8:
                roll = rng.random() * 0.8  # nothing pending to ack or claim
            if roll < 0.55:
                n = model.next_n
                model.next_n += 1
                model.inflight = ("xadd", n)
                entry_id = client.xadd(model.key, {"n": n, "pad": "p" * rng.randrange(100)})
                model.entries[n] = _parse(entry_id)
            elif roll < 0.8:
                consumer = rng.choice(model.consumers)
                model.inflight = ("read", consumer)
                reply = client.xreadgroup("g", consumer.decode(), {model.key: ">"}, count=2)
                for entry_id, _ in (reply[0][1] if reply else []):
                    parsed = _parse(entry_id)
                    model.pel[parsed] = (consumer, 1)
                    model.last_delivered = max(model.last_delivered, parsed)
            elif roll < 0.9:
                entry_id = rng.choice(sorted(model.pel))
                model.inflight = ("ack", entry_id)
                assert client.xack(model.key, "g", "%d-%d" % entry_id) == 1
                del model.pel[entry_id]
            else:
                entry_id = rng.choice(sorted(model.pel))
                owner, count = model.pel[entry_id]
                claimer = model.consumers[0] if owner == model.consumers[1] else model.consumers[1]
                model.inflight = ("claim", entry_id, claimer)
                claimed = client.xclaim(model.key, "g", claimer.decode(), 0, ["%d-%d" % entry_id])
                assert len(claimed) == 1
                model.pel[entry_id] = (claimer, count + 1)
            model.inflight = None
    except (redis.ConnectionError, redis.TimeoutError):
        pass  # killed: model.inflight is the command whose outcome is unknown
    finally:
        client.close()


def _crash_cycles(nodes: Nodes, fsync: str, cycles: int, workers: int, seed: int) -> list[int]:
    """Run the cycles, failing on any violation; returns the acknowledged entries each cycle
    had to keep."""
    rng = random.Random(seed)
    flags = ("--appendonly", "yes", "--appendfsync", fsync)
    node = nodes.start(*flags)
    admin = node.client()
    models = [StreamModel(b"s%d" % i, (b"c%da" % i, b"c%db" % i)) for i in range(workers)]
    for m in models:
        admin.xgroup_create(m.key, "g", "0", mkstream=True)
    admin.close()
    kept: list[int] = []
    for cycle in range(cycles):
        stop = threading.Event()
        failures: list[BaseException] = []
        threads = [threading.Thread(target=worker, args=(node.port, m, seed * 1000 + cycle * 10 + i, stop, failures))
                   for i, m in enumerate(models)]
        before = sum(len(m.entries) for m in models)
        for t in threads:
            t.start()
        time.sleep(rng.uniform(0.05, 0.5))
        # On a busy machine the workers may not have had an XADD acknowledged yet: the kill
        # must land on a node that is taking writes (bounded wait).
        deadline = time.monotonic() + 10
        while sum(len(m.entries) for m in models) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        node.kill()
        stop.set()
        for t in threads:
            t.join(10)
        assert not failures, failures
        node = nodes.start(*flags)
        client = node.client()
        for m in models:
            seen = observe(client, m)
            problems = check(m, seen)
            assert not problems, f"{fsync}, cycle {cycle}, stream {m.key!r}: {problems[:5]}"
            adopt(m, seen)
        kept.append(sum(len(m.entries) for m in models))
        client.close()
    # Every cycle added acknowledged entries, so every kill hit a node taking writes.
    assert all(b > a for a, b in zip(kept, kept[1:])), kept
    return kept


def test_sigkill_with_appendfsync_always_loses_nothing_acknowledged(nodes: Nodes) -> None:
    _crash_cycles(nodes, "always", cycles=22, workers=4, seed=11)


def test_sigkill_with_appendfsync_everysec_loses_nothing_acknowledged(nodes: Nodes) -> None:
    # everysec writes each batch to the page cache before replying, so a killed process
    # (unlike a power loss or kernel crash, see the durability-lag test) loses nothing
    # acknowledged.
    kept = _crash_cycles(nodes, "everysec", cycles=8, workers=3, seed=12)
    print(f"everysec SIGKILL cycles: acknowledged entries kept after each restart: {kept}, lost: 0")


def test_everysec_fsyncs_every_acknowledged_write_without_another_write(nodes: Nodes) -> None:
    """The loss window of everysec on a power loss ends at the periodic fsync: WAITAOF
    (which returns once the local fsync covered the client's last write) must return for each
    write alone, the fsync coming from the policy's timer, not from a later write."""
    node = nodes.start("--appendonly", "yes", "--appendfsync", "everysec")
    client = node.client()
    for i in range(3):
        client.xadd("lag", {"i": i})
        assert client.execute_command("WAITAOF", 1, 0, 0) == [1, 0]  # 0: no timeout


def test_always_acknowledges_only_fsynced_writes(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always")
    client = node.client()
    for i in range(20):
        client.xadd("now", {"i": i})
        # The XADD reply came after its fsync: nothing to wait for.
        assert client.execute_command("WAITAOF", 1, 0, 1) == [1, 0]


def test_checker_flags_a_lost_acknowledged_write_and_an_invented_delivery() -> None:
    model = StreamModel(b"s", (b"a", b"b"), entries={0: (1, 0), 1: (2, 0)}, last_delivered=(1, 0),
                        pel={(1, 0): (b"a", 1)})
    intact = Observed({0: (1, 0), 1: (2, 0)}, (1, 0), {(1, 0): (b"a", 1)})
    assert check(model, intact) == []
    lost = Observed({0: (1, 0)}, (1, 0), {(1, 0): (b"a", 1)})
    assert any("acknowledged XADD n=1" in p for p in check(model, lost))
    invented = Observed({0: (1, 0), 1: (2, 0)}, (2, 0), {(1, 0): (b"a", 1), (2, 0): (b"b", 1)})
    assert any("never delivered" in p for p in check(model, invented))
    model.inflight = ("read", b"b")
    assert check(model, invented) == []
    recount = Observed({0: (1, 0), 1: (2, 0)}, (1, 0), {(1, 0): (b"a", 2)})
    assert check(model, recount)
