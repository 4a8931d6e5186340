"""An in-process TCP proxy on loopback that a test can cut or pause, to drop or stall a
replication link without touching either end."""

from __future__ import annotations

import asyncio
import contextlib
from typing import cast


class _Pipe(asyncio.Protocol):
    def __init__(self, proxy: LinkProxy) -> None:
        self.proxy = proxy
        self.transport: asyncio.Transport | None = None
        self.peer: _Pipe | None = None
        self.pending: list[bytes] = []
        self.upstream = False  # True for the primary-facing side

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not subclasses
        transport = self.transport
        self.proxy.pipes.add(self)
        if self.proxy.paused_both:
            transport.pause_reading()

    def data_received(self, data: bytes) -> None:
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.write(data)
        else:
            self.pending.append(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.proxy.pipes.discard(self)
        if self.peer is not None and self.peer.transport is not None:
            self.peer.transport.close()


class LinkProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target_port = target_port
        self.target_host = target_host
        self.pipes: set[_Pipe] = set()
        self.paused = False
        self.paused_both = False
        self.connections = 0
        self._server: asyncio.Server | None = None

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> int:
        loop = asyncio.get_running_loop()
        self._server = await loop.create_server(self._accept, host, port)
        return int(self._server.sockets[0].getsockname()[1])

    def _accept(self) -> _Pipe:
        downstream = _Pipe(self)
        self.connections += 1
        asyncio.ensure_future(self._connect_upstream(downstream))
        return downstream

    async def _connect_upstream(self, downstream: _Pipe) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, upstream = await loop.create_connection(lambda: _Pipe(self), self.target_host, self.target_port)
        except OSError:
            if downstream.transport is not None:
                downstream.transport.close()
            return
        upstream.upstream = True
        if self.paused and upstream.transport is not None:
            upstream.transport.pause_reading()
        upstream.peer, downstream.peer = downstream, upstream
        for source, sink in ((downstream, upstream), (upstream, downstream)):
            for data in source.pending:
                if sink.transport is not None:
                    sink.transport.write(data)
            source.pending.clear()

    def cut(self) -> None:
        """Drops every connection through the proxy (a network failure)."""
        for pipe in list(self.pipes):
            if pipe.transport is not None:
                pipe.transport.abort()

    def pause(self, *, both_ways: bool = False) -> None:
        """Stops forwarding what the primary sends (the replica looks like it stopped reading);
        with both_ways, what the replica sends too (its acks stop: a frozen replica)."""
        self.paused = True
        self.paused_both = both_ways
        for pipe in self.pipes:
            if pipe.transport is not None and (pipe.upstream or both_ways):
                pipe.transport.pause_reading()

    def resume(self) -> None:
        self.paused = self.paused_both = False
        for pipe in self.pipes:
            if pipe.transport is not None:
                pipe.transport.resume_reading()

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
