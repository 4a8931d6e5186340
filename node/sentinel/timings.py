"""Sentinel's timing constants and per-master defaults (sentinel.c, 7.2).

The periods are Redis's defaults; `SENTINEL DEBUG` may change them at run time, so they live
in one mutable object per sentinel rather than in module constants. All times are
milliseconds.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Final

DEFAULT_PORT: Final = 26379
HELLO_CHANNEL: Final = "__sentinel__:hello"
DEFAULT_SLAVE_PRIORITY: Final = 100
DEFAULT_PARALLEL_SYNCS: Final = 1
# Commands that may wait for a reply on one link before periodic ones are skipped.
MAX_PENDING_COMMANDS: Final = 100
# The random part of a failover's start time (and of the delay a vote imposes on the voter).
MAX_DESYNC: Final = 1000
DEFAULT_DENY_SCRIPTS_RECONFIG: Final = True
DEFAULT_RESOLVE_HOSTNAMES: Final = False
DEFAULT_ANNOUNCE_HOSTNAMES: Final = False
# SENTINEL SIMULATE-FAILURE flags (SENTINEL_SIMFAILURE_*).
SIMFAILURE_CRASH_AFTER_ELECTION: Final = 1 << 0
SIMFAILURE_CRASH_AFTER_PROMOTION: Final = 1 << 1
# The run id length of Redis instances and sentinels (CONFIG_RUN_ID_SIZE).
RUN_ID_SIZE: Final = 40


@dataclass(slots=True)
class Timings:
    """The periods SENTINEL DEBUG shows and sets, with Redis's names in comments."""

    info_period: int = 10_000  # INFO-PERIOD
    ping_period: int = 1_000  # PING-PERIOD
    ask_period: int = 1_000  # ASK-PERIOD
    publish_period: int = 2_000  # PUBLISH-PERIOD
    default_down_after: int = 30_000  # DEFAULT-DOWN-AFTER
    default_failover_timeout: int = 180_000  # DEFAULT-FAILOVER-TIMEOUT
    tilt_trigger: int = 2_000  # TILT-TRIGGER
    tilt_period: int = 30_000  # TILT-PERIOD
    slave_reconf_timeout: int = 10_000  # SLAVE-RECONF-TIMEOUT
    min_link_reconnect_period: int = 15_000  # MIN-LINK-RECONNECT-PERIOD
    election_timeout: int = 10_000  # ELECTION-TIMEOUT
    script_max_runtime: int = 60_000  # SCRIPT-MAX-RUNTIME
    script_retry_delay: int = 30_000  # SCRIPT-RETRY-DELAY

    def debug_fields(self) -> list[tuple[str, int]]:
        """(SENTINEL DEBUG name, value) in the order Redis lists them."""
        return [(_DEBUG_NAMES[f.name], getattr(self, f.name)) for f in fields(self)]


_DEBUG_NAMES: Final = {
    "info_period": "INFO-PERIOD",
    "ping_period": "PING-PERIOD",
    "ask_period": "ASK-PERIOD",
    "publish_period": "PUBLISH-PERIOD",
    "default_down_after": "DEFAULT-DOWN-AFTER",
    "default_failover_timeout": "DEFAULT-FAILOVER-TIMEOUT",
    "tilt_trigger": "TILT-TRIGGER",
    "tilt_period": "TILT-PERIOD",
    "slave_reconf_timeout": "SLAVE-RECONF-TIMEOUT",
    "min_link_reconnect_period": "MIN-LINK-RECONNECT-PERIOD",
    "election_timeout": "ELECTION-TIMEOUT",
    "script_max_runtime": "SCRIPT-MAX-RUNTIME",
    "script_retry_delay": "SCRIPT-RETRY-DELAY",
}
