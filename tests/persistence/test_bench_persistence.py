"""The persistence benchmarks run end to end on tiny sizes: both servers measured side by
side, results written, every server stopped."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_aof_throughput_bench_measures_both_servers_per_policy(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.persistence", "-n", "1000", "--policies", "always,everysec",
         "--tests", "set,xadd", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads((tmp_path / "latest.json").read_text())
    rows = {row["test"]: row for row in doc["rows"]}
    assert set(rows) == {"set/always", "xadd/always", "set/everysec", "xadd/everysec"}
    for row in rows.values():
        assert "skipped" not in row, row
        assert row["redis"]["rps"] > 0 and row["rill"]["rps"] > 0 and row["rps_ratio"] > 0
    assert "rill/redis" in done.stdout


def test_load_bench_restarts_both_servers_from_their_files(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.persistence_load", "--entries", "3000", "--pending", "300",
         "--repeat", "1", "--cases", "snapshot,aof-log", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["history.jsonl", "latest.json"]
    results = json.loads((tmp_path / "latest.json").read_text())["results"]
    for case in ("snapshot", "aof-log"):
        for kind in ("redis", "rill"):
            assert results[case][kind]["load_s"] is not None, (case, kind, done.stderr)
            assert results[case][kind]["ready_s"] > 0
        assert results[case]["ready_ratio"] > 0
