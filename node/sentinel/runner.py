"""The sentinel's engine room: it owns the policy and carries out what the policy asks, in
order — open, write to and close links, log and publish events, rewrite the configuration
file, queue scripts, crash on request — and feeds it what happened: link events as they
arrive and a timer tick every `next_tick_ms()`. Inputs carry CLOCK_BOOTTIME in milliseconds
(node/sentinel/clock.py), which no wall-clock step moves: every duration the policy measures
comes from it; a tick also carries the wall clock, which TILT watches as Redis watches
mstime().

Everything runs in the event loop's thread, one input at a time, so a command handler can
call the policy and then `execute` its actions before its reply is queued: a FlushConfig in
those actions (a vote, a new master) is on disk before the client reads the answer.
"""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable

from node.sentinel import config as sentinel_config
from node.sentinel.clock import SYSTEM_CLOCK, Clock
from node.sentinel.links import Links
from node.sentinel.messages import (
    DEBUG,
    NOTICE,
    VERBOSE,
    WARNING,
    Action,
    Close,
    Closed,
    Connect,
    Connected,
    Crash,
    Event,
    FlushConfig,
    Input,
    Log,
    Message,
    Reply,
    ScriptRun,
    Send,
    Tick,
    Value,
)
from node.sentinel.policy import Sentinel
from node.sentinel.scripts import ScriptQueue

log = logging.getLogger("rill.sentinel")

# Python logging levels for the policy's (Redis's LL_*); VERBOSE sits between DEBUG and INFO.
LOG_LEVELS = {DEBUG: logging.DEBUG, VERBOSE: 15, NOTICE: logging.INFO, WARNING: logging.WARNING}

# The `loglevel` names, as Python logging levels ("nothing" logs nothing).
REDIS_LOG_LEVELS = {
    "debug": logging.DEBUG, "verbose": 15, "notice": logging.INFO, "warning": logging.WARNING,
    "nothing": logging.CRITICAL + 10,
}

# Publishes `payload` on `channel` to this sentinel's subscribers; returns the receiver count.
Publish = Callable[[bytes, bytes], int]


class Runner:
    """One sentinel's policy and the I/O it asks for."""

    def __init__(
        self,
        sentinel: Sentinel,
        options: sentinel_config.ServerOptions,
        config_path: str,
        *,
        clock: Clock = SYSTEM_CLOCK,
        crash: Callable[[int], None] = os._exit,
        publish: Publish | None = None,
        acl_lines: Callable[[], list[str]] | None = None,
    ) -> None:
        self.sentinel = sentinel
        self.options = options
        self.config_path = config_path
        self.clock = clock
        self._crash = crash
        self.links = Links(self)
        self.scripts = ScriptQueue(sentinel.timings)
        # Where the policy's published events go (the shell's Pub/Sub); None: only logged.
        self._publish = publish
        # The running sentinel's ACL users as `user` lines, for rewrites of its file (None: the
        # users the file describes).
        self._acl_lines = acl_lines
        self._timer: asyncio.TimerHandle | None = None
        self.ticks = 0
        self.events: dict[str, int] = {}  # events raised, by type (the metrics' counters)
        # Scripts running and waiting, as of the last timer run (INFO's sentinel section).
        self.script_counts = (0, 0)

    def now(self) -> int:
        """The policy's time: CLOCK_BOOTTIME (durations), never the wall clock."""
        return self.clock.monotonic_ms()

    def log_warning(self, text: str) -> None:
        log.warning("%s", text)

    def set_loglevel(self, name: str) -> None:
        """SENTINEL CONFIG SET loglevel: the option is rewritten, the log filters at once."""
        self.options.loglevel = name
        logging.getLogger("rill").setLevel(REDIS_LOG_LEVELS[name])

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """sentinelIsRunning: log our id, announce the monitored masters, start the timer."""
        log.log(LOG_LEVELS[NOTICE], "Sentinel ID is %s", self.sentinel.myid)
        self.execute(self.sentinel.started(self.now()))
        self._schedule()

    def stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        self.links.close_all()
        self.scripts.kill_all()

    def _schedule(self) -> None:
        delay = self.sentinel.next_tick_ms() / 1000
        self._timer = asyncio.get_running_loop().call_later(delay, self._tick)

    def _tick(self) -> None:
        self.ticks += 1
        now = self.now()
        try:
            self.step(Tick(now, self.clock.wall_ms()))
            self.execute(list(self.scripts.tick(now)))
            self.script_counts = (self.scripts.running, len(self.scripts.jobs))
        finally:
            self._schedule()

    # ------------------------------------------------------------------ inputs

    def step(self, msg: Input) -> None:
        self.execute(self.sentinel.step(msg))

    def link_connected(self, conn: int, local_ip: str) -> None:
        self.step(Connected(self.now(), conn, local_ip))

    def link_closed(self, conn: int) -> None:
        self.step(Closed(self.now(), conn))

    def link_reply(self, conn: int, request: int, value: Value) -> None:
        self.step(Reply(self.now(), conn, request, value))

    def link_message(self, conn: int, channel: bytes, payload: bytes) -> None:
        self.step(Message(self.now(), conn, channel, payload))

    # ------------------------------------------------------------------ actions

    def execute(self, actions: list[Action]) -> bool:
        """Carry out `actions` in order; False if a configuration rewrite among them failed
        (the commands that flush then answer Redis's error)."""
        flushed = True
        for action in actions:
            if isinstance(action, Send):
                self.links.send(action.conn, action.request, action.argv)
            elif isinstance(action, Event):
                self._event(action)
            elif isinstance(action, Connect):
                self.links.connect(action.conn, action.host, action.port, action.pubsub)
            elif isinstance(action, Close):
                self.links.close(action.conn)
            elif isinstance(action, FlushConfig):
                flushed = self.flush_config() and flushed
            elif isinstance(action, Log):
                log.log(LOG_LEVELS[action.level], "%s", action.text)
            elif isinstance(action, ScriptRun):
                self.scripts.schedule(action.path, action.args)
            elif isinstance(action, Crash):
                logging.shutdown()
                self._crash(99)
                return flushed
        return flushed

    def _event(self, event: Event) -> None:
        self.events[event.type] = self.events.get(event.type, 0) + 1
        log.log(LOG_LEVELS[event.level], "%s %s", event.type, event.message)
        if event.published and self._publish is not None:
            self._publish(event.type.encode(), event.message.encode("utf-8", "surrogateescape"))

    def flush_config(self) -> bool:
        """sentinelFlushConfig: rewrite the file from the policy's state, durably."""
        try:
            users = self._acl_lines() if self._acl_lines is not None else None
            sentinel_config.flush(self.config_path, self.sentinel, self.options, users)
        except OSError as exc:
            log.warning("WARNING: Sentinel was not able to save the new configuration on disk!!!: %s", exc.strerror)
            return False
        log.log(LOG_LEVELS[NOTICE], "Sentinel new configuration saved on disk")
        return True
