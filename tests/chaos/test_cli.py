"""The lab's front door and a user's settings: without the lab's extra every `rill chaos`
command names `make chaos-deps` (no traceback); settings come from a file and flags, checked;
a soak's summary counts unsafe runs and gives each failing seed its rerun command."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

import pytest

from chaos.cli import _overrides
from chaos.soak import summarize
from chaos.targets import Settings, settings_with

WITHOUT_TOXIPROXY = "import sys; sys.modules['toxiproxy'] = None; from node.main import main; sys.exit(main({argv}))"


@pytest.mark.parametrize("argv", [["chaos", "scenarios"], ["chaos", "run", "--target", "fenced"], ["chaos"]])
def test_without_the_extra_every_command_says_what_to_run(argv: list[str]) -> None:
    result = subprocess.run([sys.executable, "-c", WITHOUT_TOXIPROXY.format(argv=argv)], capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 2
    assert "make chaos-deps" in result.stderr and "toxiproxy" in result.stderr
    assert "Traceback" not in result.stderr


def _args(**values: object) -> argparse.Namespace:
    base: dict[str, object] = {"options": None, "set": [], "nodes": None, "down_after_ms": None, "lease_ms": None,
                               "appendfsync": None}
    return argparse.Namespace(**{**base, **values})


def test_settings_from_a_file_then_set_then_flags(tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "mine.conf")
    with open(path, "w", encoding="utf-8") as f:
        f.write("# my cluster\nnodes 3\nlease-ms = 2000\nappendfsync everysec\n")
    overrides = _overrides(_args(options=path, set=["appendfsync=always", "quorum=3"], down_after_ms=5000,
                                 lease_ms=1500))
    assert overrides == {"nodes": "3", "lease-ms": "2000", "appendfsync": "always", "quorum": "3",
                         "down_after_ms": 5000, "lease_ms": 1500}
    settings = settings_with(Settings(min_replicas_to_write=2), {k: v for k, v in overrides.items() if k != "lease-ms"})
    assert (settings.nodes, settings.lease_ms, settings.appendfsync, settings.quorum, settings.down_after_ms,
            settings.min_replicas_to_write) == (3, 1500, "always", 3, 5000, 2)


@pytest.mark.parametrize(("overrides", "message"), [
    ({"nodes": 2}, "out of range"), ({"appendfsync": "sometimes"}, "always, everysec or no"),
    ({"lease": 5}, "unknown setting 'lease'"), ({"quorum": "two"}, "whole number")])
def test_bad_settings_get_a_clear_error(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        settings_with(Settings(), overrides)


def test_a_soak_summary_counts_unsafe_runs_and_says_how_to_rerun_them() -> None:
    def result(seed: int, **anomalies: int) -> dict[str, object]:
        broken = sorted(k for k in ("g2", "lost_wait_majority") if anomalies.get(k))
        return {"seed": seed, "status": "done", "safe": not broken, "unsafe_because": broken,
                "anomalies": {"lost": 0, "lost_wait_majority": 0, "g2": 0, **anomalies}, "sentinels": {"tilt": []}}

    results = [result(1), result(2, g2=5, lost=7), result(3, lost_wait_majority=2, lost=2),
               {"seed": 4, "status": "error", "reason": "RunError: boom"}]
    summary = summarize("fenced", "random", 24.0, {"lease_ms": 2000}, results)
    assert (summary["runs"], summary["safe_runs"], summary["unsafe_runs"], summary["harness_errors"]) == (4, 1, 2, 1)
    assert (summary["runs_violating_g2"], summary["runs_losing_wait_majority"]) == (1, 1)
    assert summary["totals"]["lost"] == 9
    assert [f["seed"] for f in summary["failing"]] == [2, 3, 4]
    assert summary["failing"][0]["rerun"] == ("rill chaos run --target fenced --scenario random --seed 2 "
                                              "--duration 24 --set lease_ms=2000")


def test_a_soak_on_a_deployment_says_how_to_rerun_against_it() -> None:
    failing = {"seed": 3, "status": "done", "safe": False, "unsafe_because": ["g2"],
               "anomalies": {"lost": 1, "lost_wait_majority": 0, "g2": 4}, "sentinels": {"tilt": []}}
    summary = summarize("compose", "random", 24.0, {}, [failing], {"compose_project": "my cluster"})
    assert summary["failing"][0]["rerun"] == ("rill chaos run --target compose --scenario random --seed 3 "
                                              "--duration 24 --compose-project 'my cluster'")
