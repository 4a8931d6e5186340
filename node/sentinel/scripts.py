"""Notification and client-reconfig scripts, run as sentinel.c runs them: queued, at most 16
at a time, at most 256 waiting (the oldest waiting one is dropped past that), killed after
SCRIPT-MAX-RUNTIME, and retried up to 10 times when killed by a signal or exiting with 1 —
after SCRIPT-RETRY-DELAY, doubled for every further retry. Other exit codes end the job, with
a `-script-error` event unless the code is 0.

The timer drives the queue (`tick`), as sentinelTimer calls sentinelRunPendingScripts,
sentinelCollectTerminatedScripts and sentinelKillTimedoutScripts; events come back as the
policy's `Event` actions so the runner logs and publishes them like the policy's own.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from node.sentinel.messages import DEBUG, WARNING, Event
from node.sentinel.timings import Timings

log = logging.getLogger("rill.sentinel")

MAX_QUEUE: Final = 256
MAX_RUNNING: Final = 16
MAX_RETRY: Final = 10
MAX_ARGS: Final = 16  # the path included (SENTINEL_SCRIPT_MAX_ARGS)


@dataclass(eq=False)
class ScriptJob:
    argv: list[str]
    retry_num: int = 0
    start_time: int = 0  # running: when it started; waiting for a retry: when it may run
    proc: subprocess.Popen[bytes] | None = field(default=None, repr=False)

    @property
    def running(self) -> bool:
        return self.proc is not None

    @property
    def pid(self) -> int:
        return self.proc.pid if self.proc is not None else 0


class ScriptQueue:
    def __init__(self, timings: Timings) -> None:
        self.timings = timings
        self.jobs: list[ScriptJob] = []

    @property
    def running(self) -> int:
        return sum(1 for job in self.jobs if job.running)

    def schedule(self, path: str, args: Sequence[str]) -> None:
        """sentinelScheduleScriptExecution."""
        self.jobs.append(ScriptJob([path, *args][:MAX_ARGS]))
        if len(self.jobs) > MAX_QUEUE:
            for job in self.jobs:
                if not job.running:
                    self.jobs.remove(job)
                    break

    def tick(self, now: int) -> list[Event]:
        events: list[Event] = []
        self._run_pending(now, events)
        self._collect_terminated(now, events)
        self._kill_timed_out(now, events)
        return events

    def _run_pending(self, now: int, events: list[Event]) -> None:
        running = self.running
        for job in list(self.jobs):
            if running >= MAX_RUNNING:
                break
            if job.running or (job.start_time and job.start_time > now):
                continue
            job.start_time = now
            job.retry_num += 1
            try:
                job.proc = subprocess.Popen(
                    job.argv, stdin=subprocess.DEVNULL, close_fds=True, start_new_session=True
                )
            except OSError as exc:
                # execve failed: Redis's child exits with 2, which is not retried.
                log.warning("Could not run script %s: %s", job.argv[0], exc)
                events.append(Event(WARNING, "-script-error", f"{job.argv[0]} 0 2"))
                self.jobs.remove(job)
                continue
            running += 1
            events.append(Event(DEBUG, "+script-child", str(job.proc.pid)))

    def _collect_terminated(self, now: int, events: list[Event]) -> None:
        for job in list(self.jobs):
            proc = job.proc
            if proc is None:
                continue
            code = proc.poll()
            if code is None:
                continue
            by_signal = -code if code < 0 else 0
            exit_code = code if code >= 0 else 0
            events.append(Event(DEBUG, "-script-child", f"{proc.pid} {exit_code} {by_signal}"))
            job.proc = None
            if (by_signal or exit_code == 1) and job.retry_num != MAX_RETRY:
                job.start_time = now + self.retry_delay(job.retry_num)
            else:
                if by_signal or exit_code != 0:
                    events.append(Event(WARNING, "-script-error", f"{job.argv[0]} {by_signal} {exit_code}"))
                self.jobs.remove(job)

    def retry_delay(self, retry_num: int) -> int:
        """sentinelScriptRetryDelay: the delay doubles with every retry after the first."""
        delay = self.timings.script_retry_delay
        while retry_num > 1:
            delay *= 2
            retry_num -= 1
        return delay

    def _kill_timed_out(self, now: int, events: list[Event]) -> None:
        for job in self.jobs:
            if job.proc is not None and now - job.start_time > self.timings.script_max_runtime:
                events.append(Event(WARNING, "-script-timeout", f"{job.argv[0]} {job.proc.pid}"))
                try:
                    os.kill(job.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def pending(self, now: int) -> list[dict[bytes, Any]]:
        """SENTINEL PENDING-SCRIPTS: one map per job, in queue order."""
        out: list[dict[bytes, Any]] = []
        for job in self.jobs:
            entry: dict[bytes, Any] = {
                b"argv": [a.encode() for a in job.argv],
                b"flags": b"running" if job.running else b"scheduled",
                b"pid": str(job.pid).encode(),
            }
            if job.running:
                entry[b"run-time"] = str(now - job.start_time).encode()
            else:
                delay = max(0, job.start_time - now) if job.start_time else 0
                entry[b"run-delay"] = str(delay).encode()
            entry[b"retry-num"] = str(job.retry_num).encode()
            out.append(entry)
        return out

    def kill_all(self) -> None:
        """At shutdown: scripts still running are killed (Redis's children die with it)."""
        for job in self.jobs:
            if job.proc is not None and job.proc.poll() is None:
                job.proc.kill()
                job.proc.wait()
        self.jobs.clear()
