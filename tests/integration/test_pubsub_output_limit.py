"""A subscriber that never reads is bounded by `client-output-buffer-limit pubsub` and
disconnected as Redis does it, while the publisher and the other subscribers go on: the same
run against redis-server and a Rill node."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator

import pytest

from tests.conformance.harness import RawConnection, encode
from tests.conftest import Server, start_redis, start_rill

LIMIT = ("--client-output-buffer-limit", "pubsub 256kb 0 0")
MESSAGES = 600
PAYLOAD = b"x" * 16384  # 600 x 16 KB: more than the slow client's kernel buffers can absorb


@pytest.fixture(params=["redis", "rill"])
def server(request: pytest.FixtureRequest) -> Iterator[Server]:
    proc = start_redis(*LIMIT) if request.param == "redis" else start_rill(*LIMIT)
    yield proc
    proc.stop()


def _never_reading_subscriber(port: int, channel: bytes) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connecting: a small window
    sock.connect(("127.0.0.1", port))
    sock.sendall(encode([b"SUBSCRIBE", channel]))
    return sock


def test_a_subscriber_that_never_reads_is_dropped_and_the_others_go_on(server: Server) -> None:
    slow = _never_reading_subscriber(server.port, b"big")
    reader = RawConnection(server.port)
    assert reader.call("SUBSCRIBE", "big") == b"*3\r\n$9\r\nsubscribe\r\n$3\r\nbig\r\n:1\r\n"
    publisher = RawConnection(server.port, timeout=10)
    deadline = time.monotonic() + 10
    while publisher.call("PUBSUB", "NUMSUB", "big") != b"*2\r\n$3\r\nbig\r\n:2\r\n":
        assert time.monotonic() < deadline, "the slow subscriber never subscribed"
        time.sleep(0.01)
    receivers = []
    for _ in range(MESSAGES):
        # Each PUBLISH is answered at once (a 10 s socket timeout would fail the test): the
        # slow subscriber's backlog never holds the publisher up.
        receivers.append(publisher.call("PUBLISH", "big", PAYLOAD))
        assert reader.read_reply() == b"*3\r\n$7\r\nmessage\r\n$3\r\nbig\r\n$16384\r\n" + PAYLOAD + b"\r\n"
    # The slow subscriber was dropped on the way: later messages reach the reader only.
    assert receivers[0] == b":2\r\n" and receivers[-1] == b":1\r\n"
    assert publisher.call("PUBSUB", "NUMSUB", "big") == b"*2\r\n$3\r\nbig\r\n:1\r\n"
    # The server closed it: once what the kernel held is read, the connection ends.
    slow.settimeout(10)
    while slow.recv(1 << 20):
        pass
    slow.close()
    reader.close()
    publisher.close()
