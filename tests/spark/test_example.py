"""`make pipeline` end to end, in a subprocess as a user runs it (shortened): the cluster, the
producers, the streaming job, the report, and nothing left running; and against a cluster the
test starts itself (`--url`, `--replica-url`), that the job read every event exactly once: each
10-second window it wrote to Rill counts exactly the events of the final `shop:events` stream
that fall into it (recomputed here with redis-py, not Spark), no window is written twice, and
every window the watermark closed was written."""

from __future__ import annotations

import datetime
import re
import subprocess
import sys
from collections import Counter

import redis

from tests.conftest import ROOT, Server

WINDOW_MS = 10_000
WATERMARK_MS = 10_000


def _failure(done: subprocess.CompletedProcess[str]) -> str:
    """What a failed run printed, root cause first: a task's Python traceback (in Spark's log
    on stderr, then pages of JVM frames and the query plan that bury it), then the ends of
    stdout and stderr."""
    parts = []
    for name, text in (("stderr", done.stderr), ("stdout", done.stdout)):
        start = text.find("Traceback (most recent call last)")
        if start >= 0:
            end = text.find("\n\tat ", start)
            parts.append(f"--- first Python traceback ({name}) ---\n" + text[start:end if end >= 0 else start + 6000])
            break
    parts.append("--- end of stdout ---\n" + done.stdout[-3000:])
    parts.append("--- end of stderr ---\n" + done.stderr[-3000:])
    return "\n".join(parts)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipeline.example", "--seconds", "30", "--rate", "200", *args],
                          cwd=ROOT, capture_output=True, text=True, timeout=400)


def test_the_example_pipeline_runs_end_to_end() -> None:
    done = _run()
    out = done.stdout
    assert done.returncode == 0, _failure(done)
    assert "Rill local cluster: 1 primary, 2 replica(s)" in out
    assert "the streaming job reads the replicas" in out
    produced = max(int(n) for n in re.findall(r"produced=\s*(\d+)", out))
    reported = re.search(r"Batch report: (\d+) events", out)
    windows = re.search(r"Windowed aggregates: (\d+) rows in stream .*?, (\d+) rows in Parquet", out)
    assert reported and windows, _failure(done)
    assert int(reported.group(1)) == produced > 2000
    assert int(windows.group(1)) == int(windows.group(2)) > 0
    port = re.search(r"rill cluster --port (\d+)", out)
    assert port
    for pattern in (f"node.main cluster --port {port.group(1)}", *(f"--port {int(port.group(1)) + k} " for k in range(3))):
        left = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True).stdout.strip()
        assert left == "", f"still running: {pattern} (pids {left})"


def _ms(iso: str) -> int:
    return int(datetime.datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def test_every_event_is_counted_exactly_once(rill_trio: list[Server]) -> None:
    primary, a, b = rill_trio
    done = _run("--url", f"redis://127.0.0.1:{primary.port}/0", "--replica-url", f"redis://127.0.0.1:{a.port}/0",
                "--replica-url", f"redis://127.0.0.1:{b.port}/0")
    assert done.returncode == 0, _failure(done)
    with redis.Redis(port=primary.port, decode_responses=True) as c:
        events = [fields for _, fields in c.xrange("shop:events")]
        windows = [fields for _, fields in c.xrange("shop:revenue-10s")]
    assert len(events) > 2000 and windows
    expected: Counter[tuple[int, str]] = Counter()
    orders: Counter[tuple[int, str]] = Counter()
    for e in events:
        at = _ms(e["event_time"])
        key = (at - at % WINDOW_MS, e["category"])
        expected[key] += 1
        orders[key] += e["kind"] == "order"
    written = Counter((_ms(w["window_start"]), w["category"]) for w in windows)
    twice = [key for key, n in written.items() if n > 1]
    assert not twice, f"windows written more than once: {twice}"
    wrong = {(start, cat): (int(w["events"]), expected[(start, cat)])
             for w in windows for start, cat in [(_ms(w["window_start"]), w["category"])]
             if int(w["events"]) != expected[(start, cat)] or int(w["orders"]) != orders[(start, cat)]}
    assert not wrong, f"windows whose counts are not the events': (written, events) {wrong}"
    # Every window the final watermark closed was written (a window ending within a second of
    # the watermark may be either side of it).
    watermark = max(_ms(e["event_time"]) for e in events) - WATERMARK_MS
    closed = {key for key in expected if key[0] + WINDOW_MS <= watermark - 1000}
    missing = sorted(closed - set(written))
    assert not missing, f"closed windows never written: {missing}"
