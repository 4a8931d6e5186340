"""The security suite runs end to end: `python -m bench --suite security --quick` starts
redis-server and a Rill node with a TLS port each, creates the restricted user on both, runs
XADD over TCP, over TLS, as default and as the restricted user, writes the JSON and stops
everything. No timing is asserted: the numbers only have to be there and be positive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench.security import CASES
from tests.conftest import ROOT


def test_quick_security_reports_every_case_for_both_servers(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--suite", "security", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, f"bench failed:\n{done.stdout}\n{done.stderr}"
    with open(tmp_path / "security" / "latest.json", encoding="utf-8") as f:
        doc = json.load(f)
    rows = {(row["test"], row["pipeline"]): row for row in doc["rows"]}
    for case in CASES:
        for pipeline in (1, 16):
            row = rows[(f"xadd-{case}", pipeline)]
            for kind in ("redis", "rill"):
                assert row[kind]["rps"] > 0 and row[kind]["cpu_us_per_req"] >= 0, (case, pipeline, kind)
    assert all(value is not None and value > 0 for value in doc["derived"].values()), doc["derived"]
    assert "rill/redis" in done.stdout
