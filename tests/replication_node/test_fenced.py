"""Fenced mode with real nodes (docs/safety.md, *Fenced mode*): a primary cut off from its
replicas stops acknowledging writes and WAITs within its lease; a replica fenced at a newer
epoch refuses an older primary (also after a restart: the promise is on disk); a failover
done the fenced way (FENCE a majority, wait out the lease, SLAVEOF NO ONE EPOCH) leaves the
old primary unable to get a write acknowledged, whether it comes back partitioned, healed or
restarted, and loses no WAIT-majority write. The test plays the sentinels' part itself."""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest
import redis

from tests.conftest import Server, start_rill
from tests.replication_node.netproxy import NodeProxy
from tests.replication_node.nodes import FAST, call, info, offset, raw_client, wait_synced, wait_until

LEASE_MS = 1000
LEASE = LEASE_MS / 1000
ACKNOWLEDGED = ("majority", "written")  # a Writer's outcomes of an acknowledged write
DRIFT = 0.05  # the sentinels' default fenced-clock-drift-permille, 50


def fenced_flags(size: int = 3, lease_ms: int = LEASE_MS) -> tuple[str, ...]:
    return ("--fenced-mode", "yes", "--fenced-replica-set-size", str(size), "--fenced-lease-milliseconds", str(lease_ms),
            "--appendonly", "yes")


def start_fenced(started: list[Server], replicaof: tuple[str, int] | None = None, dir: str | None = None,
                 repl_port: int | None = None, *, size: int = 3, lease_ms: int = LEASE_MS, port: int | None = None,
                 extra: tuple[str, ...] = ()) -> Server:
    from bench.procs import free_port

    args = ["--repl-port", str(repl_port or free_port()), *FAST, *fenced_flags(size, lease_ms), *extra]
    if replicaof is not None:
        args += ["--replicaof", replicaof[0], str(replicaof[1])]
    node = start_rill(*args, dir=dir, port=port)
    started.append(node)
    return node


def repl_port(node: Server) -> int:
    return int(info(node)["repl_grpc_port"])


@contextmanager
def proxied(node: Server) -> Iterator[NodeProxy]:
    """`node` reachable at another loopback address, through a proxy a test can partition."""
    ip = f"127.{random.randint(1, 254)}.{random.randint(1, 254)}.{random.randint(2, 254)}"
    proxy = NodeProxy(ip, (node.port, repl_port(node)))
    try:
        yield proxy
    finally:
        proxy.close()


def leased(node: Server) -> bool:
    fields = info(node)
    return fields.get("leads_epoch") == "1" and int(fields.get("lease_remaining_ms", "0")) > 0


class Writer:
    """XADD then WAIT `majority` (1: a majority of three nodes) in a loop on one node; records
    when each write was sent and whether it and its WAIT were acknowledged."""

    def __init__(self, node: Server, majority: int = 1) -> None:
        self.node = node
        self.need = majority
        self.stop = threading.Event()
        self.log: list[tuple[float, bytes | None, str]] = []  # (sent at, ID or None, outcome)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with raw_client(self.node, socket_timeout=5) as c:
            n = 0
            while not self.stop.is_set():
                sent = time.monotonic()
                try:
                    entry = c.execute_command("XADD", "s", "*", "n", str(n))
                except redis.RedisError as exc:  # refused, or no answer in time: not acknowledged
                    self.log.append((sent, None, _outcome(exc)))
                    time.sleep(0.01)
                    continue
                n += 1
                try:
                    count = c.execute_command("WAIT", self.need, 500)
                    self.log.append((sent, entry, "majority" if count >= self.need else "written"))
                except redis.RedisError as exc:
                    self.log.append((sent, entry, "wait-" + _outcome(exc)))

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(10)

    def majority(self) -> list[bytes]:
        return [entry for _, entry, outcome in self.log if outcome == "majority" and entry is not None]


def _outcome(exc: redis.RedisError) -> str:
    return str(exc).split(" ", 1)[0] if isinstance(exc, redis.ResponseError) else type(exc).__name__


def test_a_primary_cut_off_from_its_replicas_stops_acknowledging_within_the_lease(started: list[Server]) -> None:
    primary = start_fenced(started)
    with proxied(primary) as proxy:
        a = start_fenced(started, replicaof=(proxy.ip, primary.port))
        b = start_fenced(started, replicaof=(proxy.ip, primary.port))
        wait_synced(primary, a, b)
        wait_until(lambda: leased(primary), "the primary's lease")
        assert call(primary, "WAIT", 2, 2000) == 2
        with Writer(primary) as writer:
            wait_until(lambda: len(writer.majority()) >= 20, "majority writes before the partition")
            proxy.partition()
            cut = time.monotonic()
            wait_until(lambda: writer.log[-1][0] > cut + 2 * LEASE, "writes for two leases after the cut")
        after = [(sent, outcome) for sent, _, outcome in writer.log if sent > cut]
        # No write sent once the lease (running from a stamp sent before the cut) had lapsed
        # was acknowledged, not even without WAIT: refused before it ran.
        late = [(sent - cut, outcome) for sent, outcome in after if sent > cut + LEASE and outcome in ACKNOWLEDGED]
        assert not late, late
        assert any(outcome == "NOREPLICAS" for _, outcome in after)
        assert not any(outcome == "majority" for sent, outcome in after if sent > cut + LEASE)
        assert not leased(primary)
        assert str(call(primary, "WAIT", 1, 100)).startswith("-NOREPLICAS")
        # Healed: the replicas' acks renew the lease and writes flow again.
        proxy.heal()
        wait_until(lambda: leased(primary), "the lease after the partition healed")
        assert isinstance(call(primary, "XADD", "s", "*", "n", "after"), bytes)
        assert call(primary, "WAIT", 2, 5000) == 2


def _late_acknowledgements(writer: Writer, cut: float, lease: float) -> list[tuple[float, str]]:
    """Writes sent once a lease running from the cut had lapsed, yet acknowledged."""
    return [(round(sent - cut, 2), outcome) for sent, _, outcome in writer.log
            if sent > cut + lease and outcome in ACKNOWLEDGED]


class Bouncer:
    """SIGKILLs a replica and restarts it (same directory, same ports) over and over: each
    life is 0.5 s long once it listens again (a node takes about 1 s to start here)."""

    def __init__(self, started: list[Server], node: Server, start: Callable[[Server], Server]) -> None:
        self.started = started
        self.node = node
        self._start = start
        self.lives = 1
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(0.5):
            os.kill(self.node.proc.pid, signal.SIGKILL)
            self.node.proc.wait()
            self.started.remove(self.node)
            self.node = self._start(self.node)
            self.lives += 1

    def __enter__(self) -> Bouncer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(30)


def test_a_primary_cut_off_with_a_replica_that_restarts_over_and_over_stops_acknowledging_within_the_lease(
    started: list[Server],
) -> None:
    """Five nodes; the primary and one replica on one side of a partition, the three others
    on the other; that replica SIGKILLed and restarted every 0.5 s. Each life of the replica
    echoes the primary's stamps, but it is one member of the replica set: with it the primary
    has two of five, no majority, and must stop acknowledging within one lease of the cut. A
    3 s lease, so that consecutive lives (each taking about 1 s to start) fall in one lease."""
    lease_ms = 3000
    lease = lease_ms / 1000
    primary = start_fenced(started, size=5, lease_ms=lease_ms)
    with proxied(primary) as proxy:
        near = start_fenced(started, replicaof=("127.0.0.1", primary.port), size=5, lease_ms=lease_ms)
        far = [start_fenced(started, replicaof=(proxy.ip, primary.port), size=5, lease_ms=lease_ms) for _ in range(3)]
        wait_synced(primary, near, *far)
        wait_until(lambda: leased(primary), "the primary's lease")

        def restart(node: Server) -> Server:
            return start_fenced(started, replicaof=("127.0.0.1", primary.port), dir=node.dir, size=5,
                                lease_ms=lease_ms, port=node.port)

        with Writer(primary, majority=2) as writer:
            wait_until(lambda: len(writer.majority()) >= 20, "majority writes before the partition")
            proxy.partition()  # the far replicas lose the primary; the near one keeps it
            cut = time.monotonic()
            with Bouncer(started, near, restart) as bouncer:
                wait_until(lambda: writer.log[-1][0] > cut + 3 * lease, "writes for three leases after the cut",
                           timeout=30)
        assert bouncer.lives >= 4
        late = _late_acknowledgements(writer, cut, lease)
        assert not late, f"{len(late)} writes acknowledged after the lease, first {late[:5]}, last {late[-5:]}"
        assert not leased(primary)
        proxy.heal()


def test_a_replica_fenced_at_a_newer_epoch_refuses_an_older_primary_even_after_a_restart(started: list[Server]) -> None:
    primary = start_fenced(started)
    replica = start_fenced(started)
    node_id = info(replica)["fenced_node_id"].encode()
    assert call(replica, "FENCE", 3) == [3, 0, 0, node_id]
    assert call(replica, "FENCE", 2) == [3, 0, 0, node_id]  # a promise never goes back
    assert call(replica, "REPLICAOF", "127.0.0.1", primary.port) == b"OK"
    call(primary, "XADD", "s", "*", "n", "1")
    time.sleep(2)
    fields = info(replica)
    assert fields["master_link_status"] == "down" and fields["fence_epoch"] == "3"
    assert int(fields["slave_repl_offset"]) == 0 and info(primary)["connected_slaves"] == "0"
    assert "STALEEPOCH" in replica.log
    # The promise is on disk, and so is the node's identity: restarted, it still refuses.
    replica.stop()
    started.remove(replica)
    again = start_fenced(started, replicaof=("127.0.0.1", primary.port), dir=replica.dir)
    time.sleep(2)
    fields = info(again)
    assert fields["fence_epoch"] == "3" and fields["master_link_status"] == "down"
    assert fields["fenced_node_id"].encode() == node_id
    assert int(fields["slave_repl_offset"]) == 0


def _fail_over(replicas: list[Server], epoch: int) -> tuple[Server, Server]:
    """What the sentinels' leader does in fenced mode: FENCE a majority, wait out the old
    primary's lease stretched by the drift bound, promote the fenced replica with the highest
    (log epoch, offset) at that position and point the other at it. Returns (promoted, other)."""
    replies: list[list[int]] = []
    for node in replicas:
        reply = call(node, "FENCE", epoch)
        assert isinstance(reply, list) and reply[0] == epoch, reply
        replies.append(reply)
    time.sleep(LEASE * (1 + DRIFT) / (1 - DRIFT))
    best = max(range(len(replicas)), key=lambda i: (replies[i][1], replies[i][2], -i))
    promoted, other = replicas[best], replicas[1 - best]
    assert call(promoted, "SLAVEOF", "NO", "ONE", "EPOCH", epoch, "POSITION", *replies[best][1:3]) == b"OK"
    assert call(other, "REPLICAOF", "127.0.0.1", promoted.port) == b"OK"
    return promoted, other


def test_an_old_primary_gets_nothing_acknowledged_after_the_promotion_and_no_majority_write_is_lost(
    started: list[Server],
) -> None:
    old = start_fenced(started)
    with proxied(old) as proxy:
        a = start_fenced(started, replicaof=(proxy.ip, old.port))
        b = start_fenced(started, replicaof=(proxy.ip, old.port))
        wait_synced(old, a, b)
        wait_until(lambda: leased(old), "the old primary's lease")
        with Writer(old) as before:
            wait_until(lambda: len(before.majority()) >= 20, "majority writes on the old primary")
            proxy.partition()  # the old primary keeps its clients, loses its replicas
            new, other = _fail_over([a, b], epoch=1)
            promoted_at = time.monotonic()
            with Writer(new) as after:
                wait_until(lambda: len(after.majority()) >= 20, "majority writes on the new primary")
                # The partition heals: the old primary's replicas refuse it now.
                proxy.heal()
                time.sleep(2 * LEASE)
                assert not leased(old)
                assert str(call(old, "WAIT", 1, 200)).startswith("-NOREPLICAS")
        assert not [o for sent, _, o in before.log if sent > promoted_at and o in ACKNOWLEDGED]
        # Restarted (SIGKILL), the old primary still gets nothing acknowledged.
        os.kill(old.proc.pid, signal.SIGKILL)
        old.proc.wait()
        started.remove(old)
        restarted = start_fenced(started, dir=old.dir)
        time.sleep(2 * LEASE)
        assert str(call(restarted, "XADD", "s", "*", "n", "restarted")).startswith("-NOREPLICAS")
        assert info(restarted)["fence_epoch"] == "0"
        # Demoted by the test (as the sentinels would), it follows the new primary's epoch.
        assert call(restarted, "REPLICAOF", "127.0.0.1", new.port) == b"OK"
        wait_synced(new, restarted, other)
        assert info(restarted)["fence_epoch"] == "1" and info(restarted)["log_epoch"] == "1"
    with raw_client(new) as c:
        ids = {entry[0] for entry in c.execute_command("XRANGE", "s", "-", "+")}
    majority = before.majority() + after.majority()
    lost = [entry for entry in majority if entry not in ids]
    assert not lost, f"{len(lost)} of {len(majority)} WAIT-majority writes lost"
    assert call(restarted, "XLEN", "s") == call(other, "XLEN", "s") == len(ids)


def test_fenced_commands_outside_fenced_mode_and_the_arity_of_slaveof(started: list[Server]) -> None:
    from tests.conftest import start_redis
    from tests.replication_node.nodes import start_node

    node = start_node()
    started.append(node)
    oracle = start_redis()
    started.append(oracle)
    # (redis-py drops the ERR prefix of an error.)
    assert call(node, "FENCE", 1) == "-FENCE needs fenced-mode yes"
    assert call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 1) == "-SLAVEOF ... EPOCH needs fenced-mode yes"
    assert call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 1, "POSITION", 0, 0) == "-SLAVEOF ... EPOCH needs fenced-mode yes"
    assert "fenced_mode" not in info(node) and "fence_epoch" not in info(node)
    # Only SLAVEOF NO ONE EPOCH e [POSITION le off] has five or eight arguments: anything else
    # is Redis's arity error.
    for args in (("SLAVEOF", "a", "b", "c"), ("SLAVEOF", "a", "1", "EPOCH", "1"), ("REPLICAOF", "NO", "ONE", "x", "1"),
                 ("SLAVEOF", "NO"), ("REPLICAOF", "NO", "ONE", "EPOCH", "1", "2"),
                 ("SLAVEOF", "NO", "ONE", "EPOCH", "1", "AT", "0", "0"), ("SLAVEOF", "a", "1", "b", "c", "d", "e", "f"),
                 ("SLAVEOF", "NO", "ONE", "EPOCH", "1", "POSITION", "0")):
        assert call(node, *args) == call(oracle, *args), args


def test_a_primary_re_tenured_at_a_newer_epoch_brings_back_a_replica_an_aborted_failover_fenced(
    started: list[Server],
) -> None:
    """docs/safety.md, the re-tenure (the test plays the sentinels' part): a replica fenced at
    epoch 2 by a failover that then aborted refuses its primary of epoch 0. FENCE 3 to the
    replicas, then to the primary, the lease waited out, and SLAVEOF NO ONE EPOCH 3 POSITION
    <the primary's FENCE reply> to the primary itself: it keeps its log and leads epoch 3, the
    stranded replica takes it, and majority writes are acknowledged again, none lost."""
    primary = start_fenced(started)
    following = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    stranded = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    wait_synced(primary, following, stranded)
    wait_until(lambda: leased(primary), "the primary's lease")
    before = [call(primary, "XADD", "s", "*", "n", str(i)) for i in range(20)]
    assert call(primary, "WAIT", 2, 2000) == 2
    assert call(stranded, "FENCE", 2)[0] == 2  # the aborted failover's
    call(primary, "XADD", "s", "*", "n", "while-stranded")
    wait_until(lambda: info(stranded)["master_link_status"] == "down", "the stranded replica refusing the primary")
    assert call(primary, "WAIT", 1, 2000) == 1  # the other replica keeps its lease
    # The re-tenure: the replicas, then the primary (last), at epoch 3.
    assert call(following, "FENCE", 3)[0] == 3 and call(stranded, "FENCE", 3)[0] == 3
    reply = call(primary, "FENCE", 3)
    assert reply[:2] == [3, 0]
    assert str(call(primary, "XADD", "s", "*", "n", "fenced")).startswith("-NOREPLICAS")  # leads nothing now
    time.sleep(LEASE * (1 + DRIFT) / (1 - DRIFT))
    assert call(primary, "SLAVEOF", "NO", "ONE", "EPOCH", 3, "POSITION", *reply[1:3]) == b"OK"
    fields = info(primary)
    assert (fields["role"], fields["epoch"], fields["leads_epoch"]) == ("master", "3", "1")
    wait_until(lambda: info(stranded)["master_link_status"] == "up" and info(following)["master_link_status"] == "up",
               "both replicas following the primary's new epoch")
    assert info(stranded)["epoch"] == "3"
    wait_until(lambda: leased(primary), "the lease of the new tenure")
    after = call(primary, "XADD", "s", "*", "n", "after")
    assert call(primary, "WAIT", 2, 2000) == 2
    for node in (primary, following, stranded):
        ids = [entry[0] for entry in call(node, "XRANGE", "s", "-", "+")]
        assert set(before) | {after} <= set(ids), node


def test_fenced_mode_promotes_only_with_an_epoch(started: list[Server]) -> None:
    node = start_fenced(started)
    assert str(call(node, "REPLICAOF", "NO", "ONE")).startswith("-fenced mode promotes only with")
    assert str(call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 2)).startswith("-fenced mode promotes only with")
    for args in (("SLAVEOF", "NO", "ONE", "EPOCH", "x"), ("SLAVEOF", "NO", "ONE", "EPOCH", "-1"), ("FENCE", "x"),
                 ("FENCE", "-2"), ("SLAVEOF", "NO", "ONE", "EPOCH", "1", "POSITION", "x", "0"),
                 ("SLAVEOF", "NO", "ONE", "EPOCH", "1", "POSITION", "0", "-1")):
        assert call(node, *args) == "-value is not an integer or out of range", args
    assert call(node, "FENCE") == "-wrong number of arguments for 'fence' command"
    assert call(node, "FAILOVER") == "-FAILOVER requires connected replicas."
    # Only at the position of its log (epoch 0, offset 0 here).
    assert str(call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 2, "POSITION", 0, 5)).startswith(
        "-STALEEPOCH promotion refused: this node's log is at epoch 0 offset 0, not at the position the failover")
    # A primary chosen again by a newer failover starts that tenure; never twice per epoch.
    assert call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 2, "POSITION", 0, 0) == b"OK"
    assert str(call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 2, "POSITION", 2, 0)).startswith("-STALEEPOCH")
    assert str(call(node, "SLAVEOF", "NO", "ONE", "EPOCH", 1, "POSITION", 2, 0)).startswith("-STALEEPOCH")
    fields = info(node)
    assert (fields["fence_epoch"], fields["log_epoch"], fields["epoch"], fields["leads_epoch"]) == ("2", "2", "2", "1")
    # What the sentinels check their view of the replica set against.
    assert (fields["fenced_replica_set_size"], fields["fenced_lease_milliseconds"]) == ("3", "1000")
    assert len(fields["fenced_node_id"]) == 40
    assert call(node, "FENCE", 5) == [5, 2, 0, fields["fenced_node_id"].encode()]
    assert info(node)["leads_epoch"] == "0"  # fenced by a newer epoch: it leads nothing
    assert str(call(node, "XADD", "s", "*", "a", "1")).startswith("-NOREPLICAS")


# ---------------------------------------------------------------------------- acknowledged means written


def test_fenced_mode_refuses_to_start_without_the_aof(started: list[Server], tmp_path: object) -> None:
    from bench.procs import free_port

    flags = ("--repl-port", str(free_port()), *FAST, *fenced_flags()[:-2])
    for appendonly in ((), ("--appendonly", "no")):
        directory = os.path.join(str(tmp_path), f"node{len(appendonly)}")
        os.mkdir(directory)
        with pytest.raises(RuntimeError):
            started.append(start_rill(*flags, *appendonly, dir=directory))
        with open(os.path.join(directory, "server.log"), encoding="utf-8") as f:
            assert "fenced-mode yes needs appendonly yes" in f.read()


def test_fenced_mode_refuses_to_turn_the_aof_off(started: list[Server]) -> None:
    node = start_fenced(started)
    assert call(node, "CONFIG", "SET", "appendonly", "no") == (
        "-CONFIG SET failed (possibly related to argument 'appendonly') - fenced mode needs appendonly yes: "
        "an acknowledged write must be in the AOF of a majority")
    assert call(node, "CONFIG", "GET", "appendonly") == [b"appendonly", b"yes"]
    assert call(node, "CONFIG", "SET", "appendonly", "yes") == b"OK"


class SilentReplica:
    """A replica session that handshakes with the primary (as a restarted replica does: its
    replication id and an offset it claims) and then never acknowledges anything: the moment
    between a replica's handshake and its first ack, held open."""

    def __init__(self, primary: Server, offset: int) -> None:
        import queue

        import grpc

        from replication import PROTOCOL_VERSION, new_run_id
        from replication.pb import replication_pb2 as pb
        from replication.pb import replication_pb2_grpc as pb_grpc

        fields = info(primary)
        self._outbox: queue.Queue[object] = queue.Queue()
        self._outbox.put(pb.ReplicaMessage(hello=pb.Hello(
            protocol_version=PROTOCOL_VERSION, replica_id=new_run_id(), replid=fields["master_replid"], offset=offset,
            announce_port=1)))
        self._channel = grpc.insecure_channel(f"127.0.0.1:{fields['repl_grpc_port']}")
        self._replies = pb_grpc.ReplicationStub(self._channel).Sync(self._messages())
        first = next(self._replies)
        assert first.WhichOneof("kind") == "continue_sync", first

    def _messages(self) -> Iterator[object]:
        while True:
            message = self._outbox.get()
            if message is None:
                return
            yield message

    def close(self) -> None:
        self._outbox.put(None)
        self._channel.close()


def test_a_replica_counts_for_wait_only_once_it_reports_what_its_aof_holds(started: list[Server]) -> None:
    """Right after a replica's handshake, before its first ack, the primary knows nothing of
    its AOF: it must not count the offset the replica claims to have applied."""
    primary = start_fenced(started)
    replica = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    wait_synced(primary, replica)
    wait_until(lambda: leased(primary), "the primary's lease")
    with raw_client(primary) as c:
        c.execute_command("XADD", "s", "*", "n", "1")
        end = offset(primary)
        silent = SilentReplica(primary, end)
        try:
            # The real replica has the write in its AOF; the silent one never said so.
            assert c.execute_command("WAIT", 2, 300) == 1
        finally:
            silent.close()


def _limit_file_size(node: Server, limit: int) -> None:
    """RLIMIT_FSIZE on a running node: a write that would make a file larger fails with EFBIG
    (Python ignores SIGXFSZ), as on a full disk. Only the soft limit moves (raising it back
    needs no privilege)."""
    import resource

    hard = resource.prlimit(node.proc.pid, resource.RLIMIT_FSIZE)[1]
    resource.prlimit(node.proc.pid, resource.RLIMIT_FSIZE, (limit, hard))


def _unlimit_file_size(node: Server) -> None:
    import resource

    hard = resource.prlimit(node.proc.pid, resource.RLIMIT_FSIZE)[1]
    resource.prlimit(node.proc.pid, resource.RLIMIT_FSIZE, (hard, hard))


def _aof_settled(node: Server) -> bool:
    fields = info(node, "persistence")
    return (fields["aof_rewrite_in_progress"], fields["aof_rewrite_scheduled"], fields["aof_last_bgrewrite_status"]) == (
        "0", "0", "ok") and "Background AOF rewrite finished successfully" in node.log


def _aof_incr_size(node: Server) -> int:
    """The size of the AOF file a node appends to (the incr file of the highest number)."""
    directory = os.path.join(node.dir, "appendonlydir")
    incr = max((name for name in os.listdir(directory) if ".incr." in name), key=lambda n: int(n.split(".")[2]))
    return os.path.getsize(os.path.join(directory, incr))


def test_a_replica_counts_for_the_lease_only_with_what_its_aof_holds(started: list[Server]) -> None:
    """A replica whose AOF cannot be written any more (its files may not grow: a real EFBIG
    from the kernel) keeps applying its primary's log, but holds none of it durably: its
    echoes stop renewing the lease, and the primary (three nodes, this replica its only
    one) stops acknowledging within the lease. Once the AOF is written again, the lease is."""
    primary = start_fenced(started)
    replica = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    wait_synced(primary, replica)
    wait_until(lambda: leased(primary), "the primary's lease")
    assert isinstance(call(primary, "XADD", "s", "*", "n", "before"), bytes)
    wait_synced(primary, replica)
    wait_until(lambda: _aof_settled(replica), "the replica's AOF after its full sync")
    _limit_file_size(replica, _aof_incr_size(replica))
    try:
        assert isinstance(call(primary, "XADD", "s", "*", "n", "unwritten"), bytes)  # its lease still holds
        wait_synced(primary, replica)  # applied...
        # (Its log file cannot grow either: INFO says it.)
        wait_until(lambda: info(replica, "persistence")["aof_last_write_status"] == "err", "the replica's AOF error")
        time.sleep(1.5 * LEASE)  # ... but not written: no echo renews the lease
        assert not leased(primary)
        assert str(call(primary, "XADD", "s", "*", "n", "refused")).startswith("-NOREPLICAS")
    finally:
        _unlimit_file_size(replica)
    wait_until(lambda: leased(primary), "the lease once the replica's AOF is written again")
    assert isinstance(call(primary, "XADD", "s", "*", "n", "accepted"), bytes)
    assert "File too large" in replica.log


# ---------------------------------------------------------------------------- the promotion relies on the FENCE reply


def _restart(started: list[Server], node: Server, replicaof: tuple[str, int], *, kill: bool = False,
             aof_from: str | None = None) -> Server:
    """Stops `node` (SIGTERM, or SIGKILL), optionally puts another AOF directory in place of
    its own, and starts it again on the same directory and ports."""
    import shutil

    if kill:
        node.kill()
    else:
        node.stop()
    started.remove(node)
    if aof_from is not None:
        shutil.rmtree(os.path.join(node.dir, "appendonlydir"))
        shutil.copytree(aof_from, os.path.join(node.dir, "appendonlydir"))
    return start_fenced(started, replicaof=replicaof, dir=node.dir, port=node.port)


def test_a_replica_restarted_from_an_older_aof_refuses_the_promotion_that_relied_on_its_fence_reply(
    started: list[Server], tmp_path: object,
) -> None:
    """The leader promotes the replica whose FENCE reply showed the highest position. If that
    replica restarted since from an AOF older than its last full sync (the rewrite after it had
    not run), it no longer has that log: SLAVEOF NO ONE EPOCH e POSITION <log epoch> <offset>
    names what the leader relied on, and the node refuses it."""
    import shutil

    primary = start_fenced(started, extra=("--repl-backlog-size", "16kb"))
    with proxied(primary) as proxy:
        upstream = (proxy.ip, primary.port)
        a = start_fenced(started, replicaof=upstream)
        b = start_fenced(started, replicaof=upstream)
        wait_synced(primary, a, b)
        wait_until(lambda: leased(primary), "the primary's lease")
        majority: list[bytes] = []
        with raw_client(primary) as c:
            def write(n: int, size: int) -> None:
                entry = c.execute_command("XADD", "s", "*", "n", str(n), "pad", "x" * size)
                assert c.execute_command("WAIT", 1, 2000) >= 1
                majority.append(entry)

            for n in range(10):
                write(n, 10)
            wait_synced(primary, a, b)
            b = _restart(started, b, upstream)  # stopped cleanly: its AOF now is the older one kept
            older = os.path.join(str(tmp_path), "older-appendonlydir")
            shutil.copytree(os.path.join(b.dir, "appendonlydir"), older)
            b.stop()
            for n in range(10, 40):
                write(n, 1000)  # past the 16 KiB backlog: b will need a full sync
            b = _restart(started, b, upstream)
            wait_synced(primary, a, b)
            assert "full sync" in b.log
        proxy.partition()
        replies = {node.port: call(node, "FENCE", 1) for node in (a, b)}
        assert all(isinstance(r, list) and r[0] == 1 for r in replies.values()), replies
        _, b_epoch, b_offset = replies[b.port][:3]
        # b crashes and comes back from the AOF it had before its full sync.
        b = _restart(started, b, upstream, kill=True, aof_from=older)
        fields = info(b)
        assert fields["fence_epoch"] == "1" and int(fields["slave_repl_offset"]) < b_offset
        refused = call(b, "SLAVEOF", "NO", "ONE", "EPOCH", 1, "POSITION", b_epoch, b_offset)
        assert str(refused).startswith("-STALEEPOCH"), refused
        assert info(b)["role"] == "slave"
        # The leader promotes the other fenced replica instead, at the position it showed.
        _, a_epoch, a_offset = replies[a.port][:3]
        assert call(a, "SLAVEOF", "NO", "ONE", "EPOCH", 1, "POSITION", a_epoch, a_offset) == b"OK"
        assert call(b, "REPLICAOF", "127.0.0.1", a.port) == b"OK"
        wait_synced(a, b)
    with raw_client(a) as c:
        kept = {entry[0] for entry in c.execute_command("XRANGE", "s", "-", "+")}
    assert not [entry for entry in majority if entry not in kept]
    assert call(b, "XLEN", "s") == len(kept)


# ---------------------------------------------------------------------------- nothing grows the log without a lease


def test_a_primary_without_its_lease_deletes_no_expired_key_and_publishes_nothing(started: list[Server]) -> None:
    """Cut off, the primary loses its lease: its keys that expire then are hidden from reads
    (as on a replica) but not deleted, by reads or by the active cycle, and PUBLISH is refused,
    so nothing is added to its log — the divergent tail a failover would discard stays empty.
    Its lease back, the active cycle deletes them."""
    primary = start_fenced(started)
    with proxied(primary) as proxy:
        replica = start_fenced(started, replicaof=(proxy.ip, primary.port))
        wait_synced(primary, replica)
        wait_until(lambda: leased(primary), "the primary's lease")
        with raw_client(primary) as c:
            for n in range(20):
                assert c.execute_command("SET", f"k{n}", "v", "PX", 2500) == b"OK"
            c.execute_command("XADD", "s", "*", "n", "1")
            assert c.execute_command("PEXPIRE", "s", 2500) == 1
        wait_synced(primary, replica)
        proxy.partition()
        wait_until(lambda: not leased(primary), "the lease to lapse", timeout=3 * LEASE)
        before = offset(primary)
        expired_before = int(info(primary, "stats")["expired_keys"])
        time.sleep(3)  # every key is past its deadline; the active cycle ran many times
        with raw_client(primary) as c:
            assert c.execute_command("GET", "k1") is None  # logically expired
            assert c.execute_command("EXISTS", "k2", "s") == 0
            assert c.execute_command("XRANGE", "s", "-", "+") == []
            assert c.execute_command("KEYS", "*") == []
        assert (offset(primary), int(info(primary, "stats")["expired_keys"])) == (before, expired_before), (
            "the primary deleted expired keys without a lease")
        assert str(call(primary, "PUBLISH", "ch", "hello")).startswith("-NOREPLICAS no majority lease")
        assert offset(primary) == before
        assert call(primary, "DBSIZE") == 21  # still there (DBSIZE counts expired keys, as in Redis)
        proxy.heal()
        wait_until(lambda: leased(primary), "the lease after the partition healed")
        wait_until(lambda: call(primary, "DBSIZE") == 0, "the active cycle to delete the expired keys")
        wait_synced(primary, replica)
        assert call(replica, "DBSIZE") == 0


# ---------------------------------------------------------------------------- promises on disk before they are made


def test_a_fence_or_a_promotion_whose_save_fails_is_refused_and_changes_nothing(started: list[Server]) -> None:
    """FENCE and a promotion are promises: rill-fence.json holds them before the node acts on
    them. When the file cannot be written (its files may not grow past 16 bytes: a real EFBIG
    from the kernel), the FENCE or the promotion is refused and the node keeps to what its
    file says: still following its primary, still a replica."""
    primary = start_fenced(started)
    replica = start_fenced(started, replicaof=("127.0.0.1", primary.port))
    wait_synced(primary, replica)
    wait_until(lambda: leased(primary), "the primary's lease")
    fence_file = os.path.join(replica.dir, "rill-fence.json")
    with open(fence_file, encoding="utf-8") as f:
        saved = f.read()
    _limit_file_size(replica, 16)
    try:
        refused = call(replica, "FENCE", 5)
        assert str(refused).startswith("-FENCE refused: cannot save rill-fence.json"), refused
        fields = info(replica)
        assert (fields["fence_epoch"], fields["master_link_status"]) == ("0", "up")
        time.sleep(2 * LEASE)  # it still acknowledges its primary: the lease holds
        assert leased(primary)
        position = (int(fields["log_epoch"]), int(fields["slave_repl_offset"]))
        refused = call(replica, "SLAVEOF", "NO", "ONE", "EPOCH", 1, "POSITION", *position)
        assert str(refused).startswith("-promotion refused: cannot save rill-fence.json"), refused
        assert info(replica)["role"] == "slave"
        with open(fence_file, encoding="utf-8") as f:
            assert f.read() == saved
    finally:
        _unlimit_file_size(replica)
    # The disk writable again, the same commands go through.
    assert call(replica, "FENCE", 1)[:2] == [1, 0]
    assert call(replica, "SLAVEOF", "NO", "ONE", "EPOCH", 1, "POSITION", *position) == b"OK"
    assert info(replica)["role"] == "master"
    with open(fence_file, encoding="utf-8") as f:
        assert '"tenure":1' in f.read()
