"""Notification and client-reconfig scripts: real child processes run under Redis's rules
(retries on exit code 1 or a signal with a doubling delay, an error event otherwise, a kill
past the maximum run time, the queue's limits)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Iterator

import pytest

from node.sentinel.messages import DEBUG, WARNING, Event
from node.sentinel.scripts import MAX_QUEUE, MAX_RUNNING, ScriptQueue
from node.sentinel.timings import Timings


@pytest.fixture
def script_dir(tmp_path: object) -> Iterator[str]:
    yield str(tmp_path)


def _script(d: str, name: str, body: str) -> str:
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, stat.S_IRWXU)
    return path


def _run_until_idle(q: ScriptQueue, now: int, timeout: float = 10.0) -> list[Event]:
    """Tick until no job runs (the clock passed in stays `now`)."""
    events: list[Event] = []
    deadline = time.monotonic() + timeout
    events += q.tick(now)
    while q.running and time.monotonic() < deadline:
        time.sleep(0.01)
        events += q.tick(now)
    assert not q.running, "a script is still running"
    return events


def test_a_script_that_succeeds_leaves_the_queue_with_its_arguments(script_dir: str) -> None:
    out = os.path.join(script_dir, "args")
    path = _script(script_dir, "ok.sh", f'echo "$@" > {out}')
    q = ScriptQueue(Timings())
    q.schedule(path, ("+sdown", "master mymaster 127.0.0.1 6379"))
    events = _run_until_idle(q, 1000)
    assert q.jobs == []
    assert [e.type for e in events if e.level != DEBUG] == []
    with open(out) as f:
        assert f.read() == "+sdown master mymaster 127.0.0.1 6379\n"


def test_exit_code_2_is_an_error_event_and_no_retry(script_dir: str) -> None:
    path = _script(script_dir, "fail.sh", "exit 2")
    q = ScriptQueue(Timings())
    q.schedule(path, ("a",))
    events = _run_until_idle(q, 1000)
    assert Event(WARNING, "-script-error", f"{path} 0 2") in events
    assert q.jobs == []


def test_exit_code_1_is_retried_after_a_doubling_delay(script_dir: str) -> None:
    path = _script(script_dir, "retry.sh", "exit 1")
    timings = Timings(script_retry_delay=100)
    q = ScriptQueue(timings)
    q.schedule(path, ())
    _run_until_idle(q, 1000)
    [job] = q.jobs
    assert job.retry_num == 1 and job.start_time == 1100
    assert q.pending(1050)[0][b"run-delay"] == b"50"
    _run_until_idle(q, 1099)  # too early: nothing runs
    assert job.retry_num == 1
    _run_until_idle(q, 1100)
    assert job.retry_num == 2 and job.start_time == 1100 + 200
    assert [q.retry_delay(n) for n in (1, 2, 3, 4)] == [100, 200, 400, 800]


def test_the_tenth_failure_ends_the_job_with_an_error(script_dir: str) -> None:
    path = _script(script_dir, "retry.sh", "exit 1")
    q = ScriptQueue(Timings(script_retry_delay=1))
    q.schedule(path, ())
    now = 0
    events: list[Event] = []
    for _ in range(10):
        now += 10_000
        events += _run_until_idle(q, now)
    assert q.jobs == []
    assert Event(WARNING, "-script-error", f"{path} 0 1") in events


def test_a_script_past_its_maximum_run_time_is_killed(script_dir: str) -> None:
    path = _script(script_dir, "slow.sh", "exec sleep 30")
    q = ScriptQueue(Timings(script_max_runtime=50))
    q.schedule(path, ())
    events = q.tick(1000)
    [job] = q.jobs
    pid = job.pid
    assert q.pending(1020)[0][b"flags"] == b"running"
    events += q.tick(1051)
    assert Event(WARNING, "-script-timeout", f"{path} {pid}") in events
    events += _run_until_idle(q, 1051)
    # Killed by a signal: retried later, as Redis retries a script killed by SIGKILL.
    assert q.jobs and q.jobs[0].retry_num == 1 and not q.jobs[0].running
    q.kill_all()


def test_a_missing_script_is_an_error_not_a_retry(script_dir: str) -> None:
    q = ScriptQueue(Timings())
    q.schedule(os.path.join(script_dir, "nope.sh"), ())
    events = q.tick(0)
    assert [e.type for e in events] == ["-script-error"]
    assert q.jobs == []


def test_at_most_16_run_at_once_and_256_wait(script_dir: str) -> None:
    path = _script(script_dir, "slow.sh", "exec sleep 30")
    q = ScriptQueue(Timings())
    try:
        for i in range(MAX_QUEUE + 10):
            q.schedule(path, (str(i),))
        assert len(q.jobs) == MAX_QUEUE
        assert q.jobs[0].argv[1] == "10"  # the oldest waiting ones were dropped
        q.tick(0)
        assert q.running == MAX_RUNNING
        pending = q.pending(0)
        assert [p[b"flags"] for p in pending[: MAX_RUNNING + 1]] == [b"running"] * MAX_RUNNING + [b"scheduled"]
    finally:
        q.kill_all()
    assert q.jobs == []
