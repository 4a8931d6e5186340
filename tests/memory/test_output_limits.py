"""Output buffer limits bound a client's memory as its replies are produced: a pipelined
burst of large replies (800 XRANGE over a 1.5 MB stream in one write, the case of issue 28)
never makes the node hold more than its limits allow, whether the client reads or not, and
other clients keep being served meanwhile. Peaks are the node's VmHWM."""

from __future__ import annotations

import re
import socket
import time
from collections.abc import Iterator

import pytest
import redis

from tests.conformance.harness import RawConnection, encode
from tests.conftest import Server, start_redis, start_rill
from tests.memory.peak import MB, peak_rss, rss

HARD = 32 * MB
LIMIT = ("--client-output-buffer-limit", "normal 32mb 16mb 10")
ENTRIES = 15_000  # x ~100 bytes: a 1.5 MB stream
VALUE = b"v" * 90
PIPELINED = 800


@pytest.fixture
def node() -> Iterator[Server]:
    proc = start_rill(*LIMIT)
    client = proc.client()
    pipe = client.pipeline(transaction=False)
    for i in range(ENTRIES):
        pipe.xadd("s", {"f": VALUE}, id=f"1-{i + 1}")
    pipe.execute()
    client.close()
    yield proc
    proc.stop()


def _xrange_burst() -> bytes:
    return encode([b"XRANGE", b"s", b"-", b"+"]) * PIPELINED


def _reply_size(port: int) -> int:
    conn = RawConnection(port)
    size = len(conn.call("XRANGE", "s", "-", "+"))
    conn.close()
    return size


def test_a_client_reading_its_burst_gets_every_reply_in_bounded_memory(node: Server) -> None:
    pid = node.proc.pid
    one = _reply_size(node.port)
    assert one > 1_400_000
    before = rss(pid)
    sock = socket.create_connection(("127.0.0.1", node.port), timeout=30)
    sock.sendall(_xrange_burst())
    other = RawConnection(node.port, timeout=10)
    received = 0
    pings = 0
    while received < one * PIPELINED:
        chunk = sock.recv(1 << 20)
        assert chunk, "the node closed a client that read its replies"
        received += len(chunk)
        if received > pings * one * 100:
            # Another client is served while the burst is being answered.
            assert other.call("PING") == b"+PONG\r\n"
            pings += 1
    assert received == one * PIPELINED
    sock.close()
    other.close()
    assert peak_rss(pid) <= before + 2 * HARD


def test_a_client_that_never_reads_its_burst_holds_no_more_than_the_limit(node: Server) -> None:
    pid = node.proc.pid
    before = rss(pid)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", node.port))
    sock.sendall(_xrange_burst())
    other = RawConnection(node.port, timeout=10)
    # The node stays responsive and stops serving the backed-up client.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert other.call("PING") == b"+PONG\r\n"
        time.sleep(0.05)
    assert peak_rss(pid) <= before + 2 * HARD
    sock.close()
    other.close()


SMALL_HARD = 8 * MB


def _node_with_10kb_entries(streams: dict[str, int]) -> tuple[Server, redis.Redis]:
    """A node with an 8 MB hard output limit and `count` entries of 10 KB in each stream."""
    proc = start_rill("--client-output-buffer-limit", "normal 8mb 0 0")
    client = proc.client()
    pipe = client.pipeline(transaction=False)
    for key, count in streams.items():
        for i in range(count):
            pipe.xadd(key, {"f": b"x" * 10_000}, id=f"1-{i + 1}")
    pipe.execute()
    return proc, client


def _closed_before_built(proc: Server, client: redis.Redis, *command: str) -> None:
    """The command's reply would pass the hard limit: the client is closed, and the node's
    peak memory shows the reply was never built whole."""
    before = rss(proc.proc.pid)
    conn = RawConnection(proc.port)
    conn.send(*command)
    with pytest.raises(ConnectionError):
        conn.read_reply()
    conn.close()
    assert peak_rss(proc.proc.pid) <= before + 2 * SMALL_HARD
    assert client.info("stats")["client_output_buffer_limit_disconnections"] == 1


def test_one_reply_over_the_hard_limit_closes_the_client_before_it_is_built() -> None:
    # 4,000 entries of 10 KB: one XRANGE - + would answer 40 MB, five times the hard limit.
    proc, client = _node_with_10kb_entries({"big": 4000})
    try:
        assert client.xrange("big", count=2)[1][0] == b"1-2"  # small replies are answered
        _closed_before_built(proc, client, "XRANGE", "big", "-", "+")
        client.close()
    finally:
        proc.stop()


def test_one_xread_over_the_hard_limit_across_its_keys_closes_the_client_before_it_is_built() -> None:
    # Three streams of 700 entries of 10 KB: each key's entries (7 MB) fit under the 8 MB
    # hard limit, the three together (21 MB) do not.
    proc, client = _node_with_10kb_entries({"a": 700, "b": 700, "c": 700})
    try:
        assert len(client.xread({"a": 0}, count=1)[0][1]) == 1  # small replies are answered
        _closed_before_built(proc, client, "XREAD", "STREAMS", "a", "b", "c", "0", "0", "0")
        # One key's worth is still answered whole.
        assert len(client.xread({"b": 0})[0][1]) == 700
        client.close()
    finally:
        proc.stop()


def test_a_pipeline_of_small_replies_is_served_in_bounded_memory() -> None:
    # 100,000 GETs of a 1 KB value, written whole before the client reads (as redis-py's
    # pipelines do): 100 MB of replies, never more than the limit pending in the node.
    proc = start_rill(*LIMIT)
    try:
        client = proc.client()
        client.set("k", b"x" * 1024)
        reply = b"$1024\r\n" + b"x" * 1024 + b"\r\n"
        before = rss(proc.proc.pid)
        burst = encode([b"GET", b"k"]) * 100_000
        sock = socket.create_connection(("127.0.0.1", proc.port), timeout=30)
        sock.sendall(burst)
        received = 0
        while received < len(reply) * 100_000:
            chunk = sock.recv(1 << 20)
            assert chunk, "the node closed a client that read its replies"
            received += len(chunk)
        sock.close()
        assert received == len(reply) * 100_000
        assert peak_rss(proc.proc.pid) <= before + 2 * HARD
        client.close()
    finally:
        proc.stop()


@pytest.mark.parametrize("kind", ["redis", "rill"])
def test_a_pipeline_over_a_small_hard_limit_closes_the_client_as_redis_does(kind: str) -> None:
    # 200 GETs of 10 KB in one write: 2 MB of replies produced at once against a 1 MB
    # hard limit. Both servers close the client (and log it) before answering them all.
    limit = ("--client-output-buffer-limit", "normal 1mb 0 0")
    proc = start_redis(*limit) if kind == "redis" else start_rill(*limit)
    try:
        client = proc.client()
        client.set("k", b"x" * 10_000)
        sock = socket.create_connection(("127.0.0.1", proc.port), timeout=10)
        sock.sendall(encode([b"GET", b"k"]) * 200)
        received = 0
        try:
            while chunk := sock.recv(1 << 20):
                received += len(chunk)
        except ConnectionResetError:
            pass
        sock.close()
        assert received < 200 * 10_000
        assert client.get("k") == b"x" * 10_000  # other clients go on
        # Redis: "scheduled to be closed ASAP for overcoming of output buffer limits".
        assert re.search(r"closed (ASAP )?for overcoming of output buffer limits", proc.log)
        client.close()
    finally:
        proc.stop()
