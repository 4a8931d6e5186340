"""What every part of the policy reads: the sentinel's identity, the time of the input being
handled, its current epoch, the masters it monitors (with their replicas and sentinels) and
its global options.

The parts receive this object when they are built and read it; the epoch is raised by the
parts that learn or start a newer one (hello gossip, voting, a failover's start), `now` and
TILT by the entry point (`Sentinel.step`), and the options only by `options.configure`.
"""

from __future__ import annotations

import functools
import ipaddress
import random
from typing import Final

from node.sentinel.instance import Instance
from node.sentinel.timings import (
    DEFAULT_ANNOUNCE_HOSTNAMES,
    DEFAULT_DENY_SCRIPTS_RECONFIG,
    DEFAULT_RESOLVE_HOSTNAMES,
    Timings,
)

# Fenced mode: the default clock drift bound, in parts per thousand of a duration.
DEFAULT_DRIFT_PERMILLE: Final = 50


class SentinelError(Exception):
    """A command the policy refuses; `message` is Redis's error text without the '-'."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@functools.lru_cache(maxsize=1024)
def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class State:
    """One sentinel's shared state (sentinel.c's `sentinel` struct, less its I/O)."""

    def __init__(self, myid: str, *, now: int, rng: random.Random, port: int, timings: Timings | None,
                 requirepass: str | None) -> None:
        self.myid = myid
        self.port = port
        self.now = now
        self.rng = rng
        self.timings = timings if timings is not None else Timings()
        self.current_epoch = 0
        self.masters: dict[str, Instance] = {}
        self.tilt = False
        self.tilt_start_time = 0
        self.previous_time = now
        # The wall clock at the last tick (None before the first), and wall minus monotonic
        # then: dates in log lines are the monotonic time shifted by it.
        self.previous_wall: int | None = None
        self.wall_offset = 0
        self.announce_ip: str | None = None
        self.announce_port = 0
        self.deny_scripts_reconfig = DEFAULT_DENY_SCRIPTS_RECONFIG
        self.resolve_hostnames = DEFAULT_RESOLVE_HOSTNAMES
        self.announce_hostnames = DEFAULT_ANNOUNCE_HOSTNAMES
        self.sentinel_auth_user: str | None = None
        self.sentinel_auth_pass: str | None = None
        # The server's requirepass: also what we authenticate to other sentinels with when no
        # sentinel-pass is set (all sentinels share one password, Redis's compatibility rule).
        self.requirepass = requirepass
        self.simfailure_flags = 0
        # Fenced mode's bound on the relative rate error of any two clocks, per thousand.
        self.drift_permille = DEFAULT_DRIFT_PERMILLE

    def valid_host(self, host: str) -> bool:
        """An address Redis would accept: an IP literal, or any name with resolve-hostnames
        (the shell resolves it when it connects)."""
        if self.resolve_hostnames:
            return bool(host)
        return _is_ip(host)
