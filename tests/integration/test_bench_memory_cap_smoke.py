"""bench.memory_cap runs end to end on its two quick cases (maxmemory, multibulk): both
servers start, each case records its peak, and the servers are stopped. The figures only
have to be there; the bounds themselves are asserted by tests/memory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_memory_cap_bench_runs_and_records_both_servers(tmp_path: Path) -> None:
    out = tmp_path / "memory_cap.json"
    done = subprocess.run(
        [sys.executable, "-m", "bench.memory_cap", "--cases", "maxmemory,multibulk", "--json", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=240,
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    results = json.loads(out.read_text())
    assert set(results) == {"maxmemory", "multibulk"}
    for kind in ("redis", "rill"):
        assert results["maxmemory"][kind]["refused"] is True
        assert results["maxmemory"][kind]["accepted_entries"] > 0
        assert results["multibulk"][kind]["peak_growth"] > 0
