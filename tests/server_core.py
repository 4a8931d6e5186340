"""A server core (node/server/core.py) running in a thread of the test process with its own
event loop, on a free loopback port: what a sentinel's shell builds, without the shell."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from bench.procs import free_port
from node.commands.context import ClientSession
from node.commands.table import CommandTable
from node.config import Config
from node.server.core import ServerCore
from node.server.server import wall_clock_ms


@dataclass
class RunningCore:
    core: ServerCore
    loop: asyncio.AbstractEventLoop

    @property
    def port(self) -> int:
        return self.core.port

    def call(self, fn: Callable[[], object]) -> object:
        """Runs `fn()` on the core's event loop (the only place the core may be touched)."""
        async def run() -> object:
            return fn()

        return asyncio.run_coroutine_threadsafe(run(), self.loop).result(10)


@contextmanager
def running_core(
    commands: CommandTable, mode: str = "standalone", setup: Callable[[ServerCore], None] | None = None,
    on_shutdown: Callable[[ClientSession | None, frozenset[str]], None] | None = None, **directives: str,
) -> Iterator[RunningCore]:
    """Starts a ServerCore with `commands` (`setup` may add sections...; `on_shutdown` is what
    SHUTDOWN calls) and stops it, clients closed, when the block ends."""
    config = Config()
    config.set("port", str(free_port()), startup=True)
    config.set("bind", "127.0.0.1", startup=True)
    for name, value in directives.items():
        config.set(name.replace("_", "-"), value, startup=True)
    loop = asyncio.new_event_loop()
    core = ServerCore(config, commands, wall_clock_ms, mode=mode, on_shutdown=on_shutdown)
    if setup is not None:
        setup(core)
    started = threading.Event()
    failure: list[BaseException] = []

    def run() -> None:
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(core.listen())
        except BaseException as exc:  # reported to the test below
            failure.append(exc)
            started.set()
            return
        started.set()
        loop.run_forever()

    thread = threading.Thread(target=run, name="server-core", daemon=True)
    thread.start()
    started.wait(10)
    if failure:
        raise failure[0]
    try:
        yield RunningCore(core, loop)
    finally:
        async def stop() -> None:
            core.stop_listening()
            await core.close_clients(time.monotonic() + 2)

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()
