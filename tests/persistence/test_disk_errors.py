"""Disk errors: a full disk (a 1 MiB tmpfs), a file-size limit, an unwritable directory.

When the AOF cannot be written the node refuses writes with Redis's
`-MISCONF Errors writing to the AOF file: <reason>` while reads keep working, the write that
hit the error gets no reply until a retry succeeds, and once the disk has room again
everything resumes; after a restart every acknowledged write is there.
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.persistence.conftest import Nodes, aof_dir, digest, wait_child_done, wait_for


@pytest.fixture
def tmpfs() -> Iterator[str]:
    """A 1 MiB tmpfs (mounting needs root, which the test machine and CI have)."""
    mountpoint = tempfile.mkdtemp(prefix="rill-tmpfs-")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mountpoint],
                          capture_output=True, text=True)
    if done.returncode != 0:
        os.rmdir(mountpoint)
        pytest.fail(f"cannot mount a tmpfs to fill up (this test needs root): {done.stderr.strip()}")
    yield mountpoint
    subprocess.run(["umount", "-l", mountpoint], capture_output=True)
    os.rmdir(mountpoint)


class Writer(threading.Thread):
    """XADDs one at a time; `acked` holds the sequence numbers acknowledged, `inflight` the
    one sent and not answered yet."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.client = redis.Redis(port=port, socket_timeout=30)
        self.acked: list[int] = []
        self.inflight: int | None = None
        self.stop = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                self.inflight = n
                self.client.xadd("s", {"n": n, "pad": "x" * 2000})
                self.acked.append(n)
                self.inflight = None
                n += 1
        except BaseException as exc:
            self.error = exc


def _misconf(client: redis.Redis) -> str:
    with pytest.raises(redis.ResponseError) as info:
        client.xadd("other", {"a": 1})
    return str(info.value)


def _stuck_then_released(port: int, make_room: object, reason: str) -> list[int]:
    """Drive a Writer into the disk error, check the refusal, make room, check recovery;
    returns the acknowledged sequence numbers."""
    assert callable(make_room)
    writer = Writer(port)
    writer.start()
    reader = redis.Redis(port=port)
    wait_for(lambda: reader.info("persistence")["aof_last_write_status"] == "err", 20.0, "the AOF write error")
    assert _misconf(reader) == f"MISCONF Errors writing to the AOF file: {reason}"
    with pytest.raises(redis.ResponseError, match="^MISCONF"):
        reader.ping()  # Redis refuses PING too while it cannot persist
    assert reader.xlen("s") >= len(writer.acked)  # reads keep working
    assert reader.execute_command("TYPE", "s") == b"stream"
    stuck = writer.inflight
    acked = len(writer.acked)
    time.sleep(0.5)
    # The write that failed has not been acknowledged, and the writer is still waiting for it.
    assert writer.is_alive() and writer.inflight == stuck and len(writer.acked) == acked
    writer.stop.set()
    make_room()
    writer.join(20)
    assert writer.error is None, writer.error
    assert writer.acked[-1] == stuck  # answered once it reached the disk
    wait_for(lambda: reader.info("persistence")["aof_last_write_status"] == "ok", 5.0, "recovery")
    assert reader.xadd("other", {"a": 2})
    return writer.acked


def test_full_disk_refuses_writes_with_misconf_keeps_reads_and_recovers(nodes: Nodes, tmpfs: str, data_dir: str) -> None:
    log = os.path.join(data_dir, "outside.log")  # the log must not need the full disk
    nodes.dir = tmpfs
    node = nodes.start("--appendonly", "yes", "--appendfsync", "always", "--logfile", log)
    filler = os.path.join(tmpfs, "filler")
    with open(filler, "wb") as f:
        f.write(b"\0" * (700 * 1024))
    acked = _stuck_then_released(node.port, lambda: os.unlink(filler), "No space left on device")
    assert "AOF write error looks solved" in Path(log).read_text(errors="replace")
    node.kill()
    node = nodes.start("--appendonly", "yes", "--logfile", log)
    present = [int(fields[b"n"]) for _, fields in node.client().xrange("s")]
    assert present == acked
    node.kill()


def test_file_size_limit_refuses_writes_until_it_is_raised(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes", "--appendfsync", "everysec")
    client = node.client()
    incr = os.path.join(aof_dir(nodes.dir), "appendonly.aof.1.incr.aof")
    pid = node.proc.pid
    soft, hard = resource.prlimit(pid, resource.RLIMIT_FSIZE)
    resource.prlimit(pid, resource.RLIMIT_FSIZE, (os.path.getsize(incr) + 64 * 1024, hard))
    acked = _stuck_then_released(node.port, lambda: resource.prlimit(pid, resource.RLIMIT_FSIZE, (soft, hard)),
                                 "File too large")
    before = digest(client)
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    assert digest(client) == before
    assert [int(f[b"n"]) for _, f in client.xrange("s")] == acked


def test_startup_in_a_read_only_directory_refuses_with_the_reason(nodes: Nodes, tmpfs: str, data_dir: str) -> None:
    subprocess.run(["mount", "-o", "remount,ro", tmpfs], check=True)
    nodes.dir = tmpfs
    log = os.path.join(data_dir, "outside.log")
    code, text = nodes.start_failure("--appendonly", "yes", "--logfile", log)
    text += Path(log).read_text(errors="replace") if os.path.exists(log) else ""
    assert code == 1
    assert "Can't open or create the append-only dir" in text and "Read-only file system" in text


def test_rewrite_into_an_unwritable_aof_dir_fails_cleanly_and_keeps_logging(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    client.xadd("s", {"a": 1})
    subprocess.run(["chattr", "+i", aof_dir(nodes.dir)], check=True)
    try:
        with pytest.raises(redis.ResponseError, match="^Can't execute an AOF background rewriting"):
            client.execute_command("BGREWRITEAOF")
        info = client.info("persistence")
        assert info["aof_last_bgrewrite_status"] == "err"
        assert info["aof_rewrites_consecutive_failures"] == 1
        client.xadd("s", {"a": 2})  # the current AOF file still takes writes
    finally:
        subprocess.run(["chattr", "-i", aof_dir(nodes.dir)], check=True)
    assert client.execute_command("BGREWRITEAOF") is True
    wait_child_done(client)
    assert client.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    before = digest(client)
    node.kill()
    node = nodes.start("--appendonly", "yes")
    assert digest(node.client()) == before


def test_failed_bgsave_with_save_points_refuses_writes_until_a_save_succeeds(nodes: Nodes) -> None:
    node = nodes.start("--save", "3600 1000000")
    client = node.client()
    client.set("k", "1")
    subprocess.run(["chattr", "+i", nodes.dir], check=True)
    try:
        assert client.bgsave() is True
        wait_child_done(client)
        assert client.info("persistence")["rdb_last_bgsave_status"] == "err"
        with pytest.raises(redis.ResponseError, match="^MISCONF Redis is configured to save RDB snapshots"):
            client.set("k", "2")
        assert client.get("k") == b"1"
    finally:
        subprocess.run(["chattr", "-i", nodes.dir], check=True)
    client.bgsave()
    wait_child_done(client)
    assert client.info("persistence")["rdb_last_bgsave_status"] == "ok"
    client.set("k", "3")
    assert client.lastsave().timestamp() > 0


def test_a_new_replication_id_that_cannot_get_its_incr_file_is_recorded_by_a_rewrite(nodes: Nodes) -> None:
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    client.xadd("s", {"a": 1})
    node.kill()
    subprocess.run(["chattr", "+i", aof_dir(nodes.dir)], check=True)
    try:
        # The restart's new history cannot get the incr file that records it: a rewrite is
        # scheduled instead, which fails too while the directory is immutable.
        node = nodes.start("--appendonly", "yes")
        client = node.client()
        wait_for(lambda: client.info("persistence")["aof_rewrites_consecutive_failures"] >= 1, what="a failed rewrite")
        assert "Can't start a new AOF file for replication id" in Path(nodes.dir, "server.log").read_text()
        client.xadd("s", {"a": 2})  # the current AOF file still takes writes
    finally:
        subprocess.run(["chattr", "-i", aof_dir(nodes.dir)], check=True)

    def rewritten() -> bool:
        # The node retries a failed rewrite by itself, so one may already be running (and,
        # started before the directory was writable again, fail once more): ask for another
        # until one succeeds.
        wait_child_done(client)
        if client.info("persistence")["aof_rewrites_consecutive_failures"] == 0:
            return True
        try:
            assert client.execute_command("BGREWRITEAOF") is True
        except redis.ResponseError as exc:
            assert "already in progress" in str(exc)
        return False

    wait_for(rewritten, 30.0, what="a successful rewrite")
    assert client.info("persistence")["aof_last_bgrewrite_status"] == "ok"
    before, replid = digest(client), client.info("replication")["master_replid"]
    node.kill()
    node = nodes.start("--appendonly", "yes")
    client = node.client()
    assert digest(client) == before
    assert client.info("replication")["master_replid2"] == replid
