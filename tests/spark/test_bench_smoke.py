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
