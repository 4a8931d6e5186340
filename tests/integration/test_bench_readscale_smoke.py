"""The read-scaling suite runs end to end: `python -m bench --suite readscale --quick` starts
a primary with two replicas of each server per run, drives writers and readers (on the
primary, then on the replicas), writes the JSON and stops everything. No timing is asserted:
the numbers only have to be there and be positive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.readscale import KINDS, PLACEMENTS
from tests.conftest import ROOT


def test_quick_readscale_reports_both_placements_for_both_servers(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--suite", "readscale", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"bench failed:\n{done.stdout}\n{done.stderr}"
    with open(tmp_path / "readscale" / "latest.json", encoding="utf-8") as f:
        doc = json.load(f)
    for placement in PLACEMENTS:
        for kind in KINDS:
            row = doc["results"][placement][kind]
            where = f"{kind}, reads on the {placement}"
            for figure in ("xadd_per_s", "tail_entries_per_s", "scan_calls_per_s", "scan_entries_per_s"):
                assert row[figure] > 0, f"{where}: {figure} {row[figure]}"
            assert 0 <= row["staleness_p50_ms"] <= row["staleness_p99_ms"], where
            assert row["cpu_percent"]["primary"] > 0 and row["cpu_percent"]["writers"] > 0, where
            if placement == "replicas":  # the replicas served the reads
                assert row["cpu_percent"]["replica-1"] > 0 and row["cpu_percent"]["replica-2"] > 0, where
    assert "rill/redis" in done.stdout
