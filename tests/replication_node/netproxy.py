"""A node reached through another loopback address: a proxy thread listening on `ip` at the
node's RESP and replication ports, forwarding to the node on 127.0.0.1, which a test can
pause (a partition: nothing passes, nothing is closed) and resume. Replicas told `replicaof ip
port` discover the replication port through it and connect to it there too, so every byte
between them and the node crosses the proxy (as the chaos lab's proxies do across network
namespaces). Built on tests/replication/proxy.py's LinkProxy."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable

from tests.replication.proxy import LinkProxy


class NodeProxy:
    def __init__(self, ip: str, ports: tuple[int, ...]) -> None:
        self.ip = ip
        self._loop = asyncio.new_event_loop()
        self._proxies = [LinkProxy(port) for port in ports]
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        for proxy, port in zip(self._proxies, ports):
            asyncio.run_coroutine_threadsafe(proxy.start(ip, port), self._loop).result(10)

    def _each(self, action: Callable[[LinkProxy], None]) -> None:
        async def run() -> None:
            for proxy in self._proxies:
                action(proxy)

        asyncio.run_coroutine_threadsafe(run(), self._loop).result(10)

    def partition(self) -> None:
        """Nothing passes either way any more (connections stay open, as in a partition)."""
        self._each(lambda proxy: proxy.pause(both_ways=True))

    def heal(self) -> None:
        self._each(lambda proxy: proxy.resume())

    def close(self) -> None:
        async def stop() -> None:
            for proxy in self._proxies:
                await proxy.stop()

        asyncio.run_coroutine_threadsafe(stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()
