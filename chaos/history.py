"""The history format: one JSON object per line, one line per operation phase, as Jepsen and
Maelstrom record them.

Every client operation is an `invoke` event followed by exactly one completion from the same
`process`: `ok` (it happened, with what it returned), `fail` (it certainly did not happen: the
server refused it or it was never sent) or `info` (unknown: a timeout or a connection lost after
sending; the checker treats it as possibly happened, never as failed). Other event types:

- `nemesis`: a fault's `start` / `stop` (`f`), with the fault's `name` and what it did.
- `monitor`: what the lab observed of the cluster: a sentinel event (`f` = `+switch-master`,
  `+sdown`, ...) or a node's role (`f` = `role`).
- `final`: a node's whole stream read once the cluster is healed and quiet.
- `meta`: the run's parameters (first line) and phase marks (`f` = `drained`, ...).

Common fields: `type`, `f` (the operation), `process`, `time` (seconds since the run started, on
the machine's monotonic clock, so events from several worker processes merge in order). Write
operations (`f` = `xadd`) carry `key`, `value`, `mode` (`nowait`, `wait1`, `waitmaj`) and
`wait` (replicas asked of WAIT, 0 for none); their `ok` carries `id`, `node` (who answered) and
`acks` (WAIT's reply). Reads (`xread`, `xreadgroup`, `xautoclaim`) carry `entries` as
`[id, value]` pairs and `node`; `xack` carries `id` and `count`.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from typing import IO, Any

Event = dict[str, Any]

EVENT_TYPES = frozenset({"invoke", "ok", "fail", "info", "nemesis", "monitor", "final", "meta"})
COMPLETIONS = frozenset({"ok", "fail", "info"})


class HistoryError(Exception):
    """A history file that cannot be read as one (the message names the line)."""


class Recorder:
    """Appends events to a JSON-lines file, safe to share between threads. Times are seconds
    since `t0`, a reading of time.monotonic() the runner hands every worker process."""

    def __init__(self, path: str, t0: float) -> None:
        self.t0 = t0
        self._lock = threading.Lock()
        self._file: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed in close())

    def now(self) -> float:
        return time.monotonic() - self.t0

    def record(self, event: Event) -> Event:
        """Stamps the event with the time (unless it has one) and writes it out at once, so a
        worker killed by the runner's deadline loses no completed event."""
        event.setdefault("time", round(self.now(), 6))
        line = json.dumps(event, separators=(",", ":"))
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()
        return event

    def close(self) -> None:
        with self._lock:
            self._file.close()


def parse_lines(lines: Iterable[str], source: str = "history") -> Iterator[Event]:
    """The events of a JSON-lines history; a line that is not an event is an error naming it
    (a torn last line, as a killed writer leaves, is skipped)."""
    pending: tuple[int, str] | None = None
    for number, line in enumerate(lines, 1):
        if pending is not None:
            raise HistoryError(f"{source}:{pending[0]}: {pending[1]}")
        text = line.strip()
        if not text:
            continue
        try:
            event = json.loads(text)
        except json.JSONDecodeError as exc:
            # Only the last line may be torn; remember the error until we know it is not last.
            pending = (number, f"not JSON ({exc.msg})")
            continue
        if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
            raise HistoryError(f"{source}:{number}: not an event (needs a 'type' among {sorted(EVENT_TYPES)})")
        if not isinstance(event.get("time", 0.0), (int, float)):
            raise HistoryError(f"{source}:{number}: 'time' must be a number")
        yield event


def read_history(path: str) -> list[Event]:
    with open(path, encoding="utf-8") as f:
        return list(parse_lines(f, os.path.basename(path)))


def merge_files(paths: Iterable[str], out: str) -> list[Event]:
    """Merges several workers' histories into one file ordered by time (stable: events of one
    process keep their order)."""
    events: list[Event] = []
    for path in paths:
        if os.path.exists(path):
            events.extend(read_history(path))
    events.sort(key=lambda e: float(e.get("time", 0.0)))
    write_history(out, events)
    return events


def write_history(path: str, events: Iterable[Event]) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for event in events:
            f.write(json.dumps(event, separators=(",", ":")) + "\n")
