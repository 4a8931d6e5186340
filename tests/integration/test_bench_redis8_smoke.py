"""The Redis 8 stream suite of the benchmark harness runs end to end: `python -m bench --suite
redis8 --quick` starts both servers, runs each job each way once on 600 entries, checks that
every entry was handled (the suite itself refuses a run that left any), writes its JSON and
stops its servers. No timing is asserted; round trips are counted, not timed, so their ratios
are: XACKDEL takes one round trip where XACK + XDEL take two."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT


def test_quick_redis8_suite_counts_the_round_trips_it_saves(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "bench", "--suite", "redis8", "--quick", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=180)  # fmt: skip
    assert done.returncode == 0, f"bench failed:\n{done.stdout}\n{done.stderr}"
    doc = json.loads((tmp_path / "redis8" / "latest.json").read_text(encoding="utf-8"))
    rows = {(r["job"], r["server"], r["way"]): r for r in doc["rows"]}
    assert set(rows) == {(j, s, w) for j in ("recover", "ackdel") for s, w in (("redis", "old"), ("rill", "old"), ("rill", "new"))}
    assert all(r["entries"] == 600 and r["server_cpu_us_per_entry"] >= 0 for r in rows.values())
    assert doc["ratios"]["ackdel"]["round_trips_rill_new_over_redis_old"] == 0.5
    assert doc["ratios"]["recover"]["round_trips_rill_new_over_redis_old"] < 1
