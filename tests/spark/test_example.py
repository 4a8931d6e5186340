"""`make pipeline` end to end, in a subprocess as a user runs it (shortened): the cluster, the
producers, the streaming job, the report; every event produced is in the report, the windows
reached both the Rill stream and Parquet, and nothing is left running."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.conftest import ROOT


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


def test_the_example_pipeline_runs_end_to_end() -> None:
    done = subprocess.run([sys.executable, "-m", "pipeline.example", "--seconds", "30", "--rate", "200"],
                          cwd=ROOT, capture_output=True, text=True, timeout=280)
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
