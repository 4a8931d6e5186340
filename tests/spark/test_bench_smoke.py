"""`python -m bench.spark_source --quick` runs and reports every figure, for Rill and
redis-server (no timing assertions)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile

from tests.conftest import ROOT


def test_spark_bench_quick_run_reports_every_figure() -> None:
    out = tempfile.mkdtemp(prefix="rill-bench-spark-")
    try:
        done = subprocess.run([sys.executable, "-m", "bench.spark_source", "--quick", "--out", out], cwd=ROOT,
                              capture_output=True, text=True, timeout=280)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        with open(os.path.join(out, "latest.json")) as f:
            rows = json.load(f)["rows"]
    finally:
        shutil.rmtree(out, ignore_errors=True)
    assert [r["server"] for r in rows] == ["rill", "redis"]
    for row in rows:
        for key in ("read_arrow_entries_per_s", "read_rows_entries_per_s", "read_xrange_loop_entries_per_s",
                    "write_entries_per_s", "write_xadd_loop_entries_per_s", "latency_p50_ms", "latency_p99_ms"):
            assert row[key] > 0, (key, row)
        assert row["latency_samples"] > 0


def test_spark_committed_bench_quick_run_reports_every_figure() -> None:
    out = tempfile.mkdtemp(prefix="rill-bench-spark-committed-")
    try:
        done = subprocess.run([sys.executable, "-m", "bench.spark_committed", "--quick", "--out", out], cwd=ROOT,
                              capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        with open(os.path.join(out, "latest.json")) as f:
            rows = {row["server"]: row for row in json.load(f)["rows"]}
    finally:
        shutil.rmtree(out, ignore_errors=True)
    for name in ("rill", "redis"):
        assert rows[name]["filtered_1pct_s"] > 0 and rows[name]["full_read_s"] > 0
    replicated = rows["rill-replicated"]
    for key in ("replica_read_committed_entries_per_s", "replica_read_all_entries_per_s", "latency_committed_p50_ms",
                "latency_all_p50_ms"):
        assert replicated[key] > 0, (key, replicated)
