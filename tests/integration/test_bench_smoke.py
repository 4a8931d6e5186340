"""The benchmark harness runs end to end: `python -m bench --quick` on a tiny request count
starts both servers, measures every test at both pipeline depths, writes the JSON and stops
its servers. No timing is asserted: the numbers only have to be there and be positive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

# The commands the benchmark is about: Rill must run these, not skip them.
CORE_TESTS = ("ping", "set", "get", "xadd")
ALL_TESTS = ("ping", "set", "get", "get-volatile", "xadd", "xrange", "xreadgroup", "xack", "xlen")
PIPELINES = (1, 16)


def _run_bench(out_dir: Path) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "--quick", "-n", "2000", "--tests", ",".join(ALL_TESTS),
         "--out", str(out_dir)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the harness stops its servers on SIGTERM
        proc.communicate(timeout=30)
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 0, f"bench failed:\n{stdout}\n{stderr}"
    with open(out_dir / "throughput" / "latest.json", encoding="utf-8") as f:
        return done, json.load(f)


def test_quick_bench_writes_a_measured_row_per_test_and_pipeline(tmp_path: Path) -> None:
    done, doc = _run_bench(tmp_path)
    rows = {(row["test"], row["pipeline"]): row for row in doc["rows"]}
    assert set(rows) == {(t, p) for t in ALL_TESTS for p in PIPELINES}
    for (test, pipeline), row in rows.items():
        assert row["redis"] is not None, f"redis-server failed {test} -P {pipeline}: {row.get('skipped')}"
        assert row["redis"]["rps"] > 0
        assert row["redis"]["cpu_us_per_req"] >= 0
        if test in CORE_TESTS:
            assert "skipped" not in row, f"rill skipped {test} -P {pipeline}: {row['skipped']}"
        if "skipped" in row:
            # Only a server's error reply may skip a row, and the reason says which.
            assert "replied an error" in row["skipped"]
            assert row["skipped"] in done.stdout
            continue
        assert row["rill"]["rps"] > 0
        assert row["rill"]["cpu_us_per_req"] >= 0
        assert row["rps_ratio"] > 0
    # CPU time is read in 10 ms ticks, so a tiny run may show 0 for one row, never for all.
    assert sum(row["rill"]["cpu_s"] for row in doc["rows"] if row["rill"]) > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["throughput"]
    assert sorted(p.name for p in (tmp_path / "throughput").iterdir()) == ["history.jsonl", "latest.json"]
    [run] = (tmp_path / "throughput" / "history.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(run)["stamp"] == doc["timestamp"] and json.loads(run)["rows"] == doc["rows"]
    assert "rill/redis" in done.stdout  # the table was printed


def test_bench_stops_both_servers_when_it_ends(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench", "--quick", "-n", "500", "--tests", "ping", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    # The harness announces "redis-server pid N port P, rill pid M port Q; ...".
    words = next(line for line in done.stderr.splitlines() if " pid " in line).replace(",", "").split()
    pids = [int(words[i + 1]) for i, word in enumerate(words) if word == "pid"]
    assert len(pids) == 2
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"server pid {pid} still running after the bench"


def test_replication_bench_reports_every_row_and_each_process_cpu(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.replication", "-n", "3000", "--wait-samples", "50", "--lag-rate", "1000",
         "--lag-seconds", "0.5", "--rounds", "2", "--max-steal", "0", "--attempts", "2", "--out", str(tmp_path)],
        cwd=ROOT, capture_output=True, text=True, timeout=180,
    )
    assert done.returncode == 0, done.stderr
    with open(tmp_path / "latest.json", encoding="utf-8") as f:
        doc = json.load(f)
    for n in (0, 1, 2):
        for kind in ("redis", "rill"):
            row = doc["throughput"][str(n)][kind]
            assert row["rps"] > 0
            assert row["primary_cpu_us_per_req"] >= 0
            assert len(row["replica_cpu_us_per_req"]) == n
            # redis-benchmark's own CPU (3,000 requests take it well over a clock tick).
            assert row["client_cpu_us_per_req"] > 0 and 0 < row["cores_busy"] <= (os.cpu_count() or 1) + 0.5
            assert all(0 <= v <= 100 for v in row["steal_percent_rounds"]) and len(row["steal_percent_rounds"]) == 2
            # With --max-steal 0 a run any steal disturbed is run again, once (--attempts 2).
            for steal, attempts in zip(row["steal_percent_rounds"], row["attempts_rounds"]):
                assert attempts == 2 or (attempts == 1 and steal == 0)
            assert len(row["rps_rounds"]) == 2 and min(row["rps_rounds"]) <= row["rps"] <= max(row["rps_rounds"])
    for variant in ("2-no-busy-batching", "2-apply-slicing"):
        off = doc["throughput"][variant]["rill"]
        assert off["rps"] > 0 and len(off["replica_cpu_us_per_req"]) == 2
    for kind in ("redis", "rill"):
        assert doc["wait"][kind]["samples"] == 50 and doc["wait"][kind]["p50_ms"] > 0
        assert doc["lag"][kind]["entries"] > 0
    for heading in ("CPU µs per XADD", "rill/rill(0)", "each round", "ceiling", "host steal", "2* = ", "2† = "):
        assert heading in done.stdout
