"""The matrix (`make chaos`): every scenario against every target with the same seed and
duration, one run at a time (they would compete for the two cores), a progress bar on stderr,
then the report (report.html with plots) in the output directory.
"""

from __future__ import annotations

import os
import sys
import time
import traceback
from typing import Any

from chaos.report import write_report
from chaos.scenarios import SCENARIOS
from chaos.targets import TARGETS, availability


class Bar:
    """A one-line progress bar on stderr: redrawn in place on a terminal; otherwise a line per
    phase and every 10 s (a log stays short)."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.done = 0
        self.label = ""
        self.started = time.monotonic()
        self._last_line = 0.0
        self._last_phase: tuple[str, int] = ("", -1)
        self._tty = sys.stderr.isatty()

    def show(self, phase: str, fraction: float) -> None:
        overall = (self.done + min(max(fraction, 0.0), 1.0)) / max(self.total, 1)
        width = 30
        filled = int(overall * width)
        elapsed = time.monotonic() - self.started
        eta = f", ~{int(elapsed / overall - elapsed)}s left" if overall > 0.02 else ""
        line = f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {self.label} {phase}{eta}"
        if self._tty:
            sys.stderr.write("\r\033[K" + line)
            sys.stderr.flush()
        elif time.monotonic() - self._last_line > 10 or (phase, self.done) != self._last_phase:
            print(line, file=sys.stderr, flush=True)
            self._last_line = time.monotonic()
        self._last_phase = (phase, self.done)


def run_matrix(targets: list[str], scenarios: list[str], seed: int, duration: float, out: str,
               overrides: dict[str, object] | None = None) -> int:
    """Returns 0 when every available run completed (anomalies are results, not failures)."""
    from chaos.runner import run

    for name in targets:
        if name not in TARGETS:
            print(f"unknown target {name!r} (targets: {', '.join(TARGETS)})", file=sys.stderr)
            return 2
    for name in scenarios:
        if name not in SCENARIOS:
            print(f"unknown scenario {name!r}", file=sys.stderr)
            return 2
    os.makedirs(out, exist_ok=True)
    runnable = [t for t in targets if availability(TARGETS[t]) is None]
    bar = Bar(len(runnable) * len(scenarios))
    results: list[dict[str, Any]] = []
    broken = 0
    for target in targets:
        reason = availability(TARGETS[target])
        for scenario in scenarios:
            run_dir = os.path.join(out, target, scenario)
            if reason:
                results.append({**run(target, scenario, seed, duration, run_dir), "dir": None})
                continue
            bar.label = f"{target} {scenario}"
            try:
                result = run(target, scenario, seed, duration, run_dir, bar.show, overrides)
                results.append({**result, "dir": os.path.relpath(run_dir, out)})
            except Exception as exc:  # one broken run must not lose the others' results
                broken += 1
                results.append({"target": target, "scenario": scenario, "seed": seed, "duration": duration,
                                "status": "error", "reason": f"{type(exc).__name__}: {exc}", "dir": None})
                with open(os.path.join(out, f"error-{target}-{scenario}.txt"), "w", encoding="utf-8") as f:
                    f.write(traceback.format_exc())
            bar.done += 1
            bar.show("", 0.0)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    report = write_report(results, out)
    print(f"report: {report}")
    return 1 if broken else 0
