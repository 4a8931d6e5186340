"""The `rill sentinel` process: the server core (node/server/core.py) with a sentinel's
command table — the commands redis-sentinel shares with a node, plus SENTINEL, ROLE and its
own PUBLISH — and INFO section, the runner driving the policy, and the process's lifecycle
(start-up as redis-sentinel, SIGTERM/SIGINT and SHUTDOWN stop it after closing its clients).

Events the policy raises go to the core's Pub/Sub, where clients subscribe to them by name.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import time
from typing import Any, Final

from node.commands.context import ClientSession
from node.commands.table import CommandTable
from node.config import Config
from node.metrics.exporter import MetricsExporter
from node.sentinel import commands, replies
from node.sentinel.clock import wall_clock_ms
from node.sentinel.metrics import start_metrics
from node.sentinel.runner import Runner
from node.sentinel.server_options import core_config
from node.sentinel.startup import Loaded, StartupError, ensure_id, load, setup_logging
from node.server.core import ServerCore
from node.server.info import Fields

log = logging.getLogger("rill.sentinel")

# How long a stopping sentinel waits for its clients to read what it already answered.
_CLOSE_TIMEOUT: Final = 2.0


def server_config(loaded: Loaded) -> Config:
    """The core's settings from the sentinel's file: where to listen, the password, the ACL
    users, TLS."""
    config = core_config(loaded.options)
    config.config_file = loaded.config_path
    return config


class SentinelShell:
    """One sentinel process: its server and its runner."""

    def __init__(self, loaded: Loaded) -> None:
        self.loaded = loaded
        # The runner is built first (the core's command table binds it): what it needs of the
        # core it reaches through these methods, which it calls only once it runs.
        self.runner = Runner(loaded.sentinel, loaded.options, loaded.config_path, publish=self._publish,
                             acl_lines=self._acl_lines)
        self.core = ServerCore(server_config(loaded), self._table(), wall_clock_ms, mode="sentinel",
                               on_shutdown=self._shutdown_requested)
        self.core.info_sections.add("sentinel", "Sentinel", self._info_fields)
        self._stop = asyncio.Event()
        self.metrics_exporter: MetricsExporter | None = None  # `metrics-port`, when set

    def _publish(self, channel: bytes, payload: bytes) -> int:
        """The runner's published events, to this sentinel's subscribers."""
        return self.core.pubsub.publish(channel, payload)

    def _acl_lines(self) -> list[str]:
        """The running sentinel's ACL users, which rewrites of sentinel.conf write."""
        return self.core.acl.config_lines()

    def _bind(self, handler: commands.Handler) -> Any:
        runner = self.runner

        def run(session: ClientSession, argv: list[bytes]) -> Any:
            return handler(runner, argv)

        return run

    def _table(self) -> CommandTable:
        return commands.command_table(self._bind)

    def _info_fields(self) -> Fields:
        return replies.info_fields(self.runner.sentinel, self.runner.now(), self.runner.script_counts)

    def _shutdown_requested(self, session: ClientSession | None, flags: frozenset[str]) -> None:
        log.warning("User requested shutdown...")
        self._stop.set()

    def _signal(self, signum: int) -> None:
        log.warning("Received %s scheduling shutdown...", signal.Signals(signum).name)
        self._stop.set()

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._signal, sig)
        await self.core.listen()
        self.runner.links.tls = self.core.tls.client_context()
        try:
            self.metrics_exporter = await start_metrics(self.core, self.runner, self.loaded.options.metrics_port)
        except OSError:
            self.core.stop_listening()
            raise
        log.info("Running mode=sentinel, port=%d.", self.core.port)
        self.runner.start()
        try:
            await self._stop.wait()
        finally:
            if self.metrics_exporter is not None:
                self.metrics_exporter.stop()
            self.runner.stop()
            self.core.stop_listening()
            await self.core.close_clients(time.monotonic() + _CLOSE_TIMEOUT)
            log.warning("Sentinel is now ready to exit, bye bye...")


def run(argv: list[str]) -> int:
    """`rill sentinel CONF [--directive value …]`: 0 after a clean stop, 1 when it cannot
    start, 99 after SENTINEL SIMULATE-FAILURE."""
    try:
        loaded = load(argv)
        setup_logging(loaded.options)
        ensure_id(loaded)
    except StartupError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"Can't open the log file: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # the stdlib loop works, only slower
        pass
    log.info("oO0OoO0OoO0Oo Rill sentinel is starting oO0OoO0OoO0Oo (pid %d, config %s)", os.getpid(),
             loaded.config_path)
    try:
        asyncio.run(SentinelShell(loaded).serve())
    except OSError as exc:
        log.error("Could not start: %s", exc)
        print(f"Could not start: {exc}", file=sys.stderr)
        return 1
    return 0
