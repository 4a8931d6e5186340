"""The sentinel's outbound links (node/sentinel/links.py) on real loopback sockets: a connect
that a closed port refuses is reported closed before `connect` returns, as hiredis's
nonblocking connect fails inside sentinelReconnectInstance (so SENTINEL MASTER never shows
such a link connected); a connect that succeeds delivers what was written before it and the
replies, in order."""

from __future__ import annotations

import asyncio
import socket

from node.sentinel.links import Links
from node.sentinel.messages import Value


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[object, ...]] = []
        self.replied = asyncio.Event()

    def link_connected(self, conn: int, local_ip: str) -> None:
        self.events.append(("connected", conn, local_ip))

    def link_closed(self, conn: int) -> None:
        self.events.append(("closed", conn))

    def link_reply(self, conn: int, request: int, value: Value) -> None:
        self.events.append(("reply", conn, request, value))
        self.replied.set()

    def link_message(self, conn: int, channel: bytes, payload: bytes) -> None:
        self.events.append(("message", conn, channel, payload))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_refused_connect_is_reported_before_connect_returns() -> None:
    async def main() -> None:
        recorder = Recorder()
        links = Links(recorder)
        links.connect(7, "127.0.0.1", _closed_port(), pubsub=False)
        assert recorder.events == [("closed", 7)]
        assert len(links) == 0
        links.send(7, 1, ["PING"])  # a command on the forgotten connection goes nowhere
        await asyncio.sleep(0.05)
        assert recorder.events == [("closed", 7)]

    asyncio.run(main())


def test_a_connect_that_succeeds_sends_what_was_queued_and_reads_the_replies() -> None:
    async def main() -> None:
        received = bytearray()
        served = asyncio.Event()

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            received.extend(await reader.readexactly(len(b"*1\r\n$4\r\nPING\r\n")))
            writer.write(b"+PONG\r\n")
            await writer.drain()
            await reader.read()  # until the link closes
            writer.close()
            served.set()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        recorder = Recorder()
        links = Links(recorder)
        links.connect(3, "127.0.0.1", port, pubsub=False)
        links.send(3, 11, ["PING"])
        assert recorder.events == []  # the connect is under way: nothing reported yet
        await asyncio.wait_for(recorder.replied.wait(), 5)
        assert received == b"*1\r\n$4\r\nPING\r\n"
        assert recorder.events == [("connected", 3, "127.0.0.1"), ("reply", 3, 11, "PONG")]
        links.close_all()
        await asyncio.wait_for(served.wait(), 5)
        server.close()
        await server.wait_closed()

    asyncio.run(main())
