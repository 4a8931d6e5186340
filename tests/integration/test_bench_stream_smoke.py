"""The stream suites of the benchmark harness run end to end: `python -m bench --suite
scaling,latency --quick` starts both servers, measures every row on a tiny plan (streams of
10^3 and 10^4 entries, a 2,000-entry PEL, 2 rounds; 1 s of latency test per server at
1,000 msg/s),
writes each suite's JSON and stops its servers. No timing is asserted: the numbers only have
to be there and be positive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.conftest import ROOT

SERVERS = ("redis", "rill")
FIGURES = ("cpu_us_per_op", "cmd_us_per_op", "wall_us_per_op")


def _run(out_dir: Path) -> subprocess.CompletedProcess[str]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench", "--suite", "scaling,latency", "--quick", "--out", str(out_dir)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        proc.terminate()  # the harness stops its servers on SIGTERM
        proc.communicate(timeout=30)
        raise
    done = subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr)
    assert done.returncode == 0, f"bench failed:\n{stdout}\n{stderr}"
    return done


def _load(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


def test_quick_stream_suites_report_positive_numbers_for_both_servers(tmp_path: Path) -> None:
    done = _run(tmp_path)

    scaling = _load(tmp_path / "scaling" / "latest.json")
    rows = scaling["rows"]
    sizes = scaling["params"]["sizes"]
    assert {(r["test"], r.get("entries")) for r in rows if r["test"] in ("xadd", "xrange")} == {
        (test, size) for test in ("xadd", "xrange") for size in sizes
    }
    cycles = {r["pending"]: r for r in rows if r["test"] == "xreadgroup_cycle"}
    assert set(cycles) == {0, scaling["params"]["pel"]}
    for row in rows:
        if row["test"] == "pel_build":
            assert all(row[kind]["seconds"] >= 0 for kind in SERVERS)
            continue
        for kind in SERVERS:
            assert row[kind]["ops"] > 0
            for figure in FIGURES:
                assert row[kind][figure] > 0, f"{kind} {row['test']} {figure}: {row[kind][figure]}"
        assert row["cpu_ratio"] > 0
    # The PEL the second cycle phase ran with is really there, on both servers.
    assert all(cycles[scaling["params"]["pel"]][kind]["pending_held"] == scaling["params"]["pel"] for kind in SERVERS)
    assert all(r[kind]["entries_per_reply"] > 0 for r in rows if r["test"] == "xrange" for kind in SERVERS)
    for test in ("xadd", "xrange", "xreadgroup_cycle"):
        assert all(scaling["max_over_min"][test][kind]["cpu_us_per_op"] >= 1 for kind in SERVERS)

    latency = _load(tmp_path / "latency" / "latest.json")
    by_server = {r["server"]: r for r in latency["rows"]}
    assert set(by_server) == set(SERVERS)
    for kind, row in by_server.items():
        assert row["sent"] > 0 and row["received"] == row["sent"], f"{kind} lost messages: {row}"
        hist = row["latency"]
        assert hist["count"] == row["received"]
        assert abs(sum(hist["buckets_percent"].values()) - 100) < 0.1
        assert 0 < hist["p50_ms"] <= hist["p99_ms"] <= hist["p999_ms"] <= hist["max_ms"]
        assert row["server_cpu_percent"] > 0 and row["client_cpu_percent"] > 0

    assert "max/min across sizes" in done.stdout and "end-to-end latency" in done.stdout
    # Each suite announces "redis-server pid N port P, rill pid M port Q; ..." and stops both.
    pids = [int(words[i + 1]) for line in done.stderr.splitlines() if " pid " in line
            for words in [line.replace(",", "").split()] for i, w in enumerate(words) if w == "pid"]
    assert len(pids) == 4
    for pid in pids:
        assert not os.path.exists(f"/proc/{pid}"), f"server pid {pid} still running after the bench"
