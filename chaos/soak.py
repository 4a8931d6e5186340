"""The soak (`rill chaos soak`): one scenario (by default the composed nemesis, `random`)
against one target over many seeds, one run at a time, then a summary: every seed's verdict,
how many runs lost WAIT-majority writes or violated G2 (and the other safety checks), and for
each failing seed the command that reruns it exactly (`rill chaos run ... --seed K`).

Output in `out`: `<seed>/` per run (history, result, logs; the logs and history of passing runs
are dropped unless `keep` is set, so a soak of hundreds of seeds stays small), `summary.json`,
and `report.html` with the table of every seed (the plots only for the failing ones).
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import sys
import time
import traceback
from typing import Any

from chaos.report import summary_row, write_report

# The flags that say where a deployment target is (`runner.run`'s `deployment`).
_WHERE_FLAGS = {"compose_project": "--compose-project", "file": "--deployment", "password_env": "--password-env"}


def rerun_command(target: str, scenario: str, seed: int, duration: float, overrides: dict[str, object],
                  where: dict[str, str] | None = None) -> str:
    flags = "".join(f" --set {k}={v}" for k, v in sorted(overrides.items()))
    flags += "".join(f" {_WHERE_FLAGS[k]} {shlex.quote(v)}" for k, v in sorted((where or {}).items()))
    return f"rill chaos run --target {target} --scenario {scenario} --seed {seed} --duration {duration:g}{flags}"


def summarize(target: str, scenario: str, duration: float, overrides: dict[str, object],
              results: list[dict[str, Any]], where: dict[str, str] | None = None) -> dict[str, Any]:
    """The soak's verdict from its runs' results (pure: `rill chaos report` can redo it)."""
    done = [r for r in results if r.get("status") == "done"]
    broken = [r for r in results if r.get("status") != "done"]
    unsafe = [r for r in done if not r.get("safe")]
    reasons: dict[str, int] = {}
    for r in unsafe:
        for reason in r.get("unsafe_because", []):
            reasons[reason] = reasons.get(reason, 0) + 1

    def runs_with(key: str) -> int:
        return sum(1 for r in done if r["anomalies"].get(key))

    return {
        "target": target, "scenario": scenario, "duration": duration, "overrides": overrides,
        "seeds": [r.get("seed") for r in results],
        "runs": len(results), "done": len(done), "harness_errors": len(broken),
        "safe_runs": len(done) - len(unsafe), "unsafe_runs": len(unsafe),
        "runs_losing_wait_majority": runs_with("lost_wait_majority"),
        "runs_violating_g2": runs_with("g2"),
        "runs_losing_acked": runs_with("lost"),
        "unsafe_reasons": dict(sorted(reasons.items())),
        "totals": {k: sum(int(r["anomalies"].get(k, 0)) for r in done)
                   for k in ("lost", "lost_wait_majority", "g2", "redelivered_after_durable_ack")},
        "tilt_runs": sum(1 for r in done if r.get("sentinels", {}).get("tilt")),
        "failing": [{"seed": r.get("seed"), "why": r.get("unsafe_because") or [r.get("status"), r.get("reason")],
                     "rerun": rerun_command(target, scenario, int(r.get("seed", 0)), duration, overrides, where)}
                    for r in [*unsafe, *broken]],
        "per_seed": [{"seed": r.get("seed"), "status": r.get("status"), "safe": r.get("safe"),
                      "lost": r.get("anomalies", {}).get("lost"),
                      "lost_wait_majority": r.get("anomalies", {}).get("lost_wait_majority"),
                      "g2": r.get("anomalies", {}).get("g2"), "why": r.get("unsafe_because")} for r in results],
    }


def run_soak(target: str, scenario: str, seeds: list[int], duration: float, out: str,
             overrides: dict[str, object] | None = None, keep: bool = False,
             where: dict[str, str] | None = None) -> dict[str, Any]:
    from chaos.matrix import Bar
    from chaos.runner import run

    overrides = dict(overrides or {})
    os.makedirs(out, exist_ok=True)
    bar = Bar(len(seeds))
    results: list[dict[str, Any]] = []
    started = time.monotonic()
    for seed in seeds:
        run_dir = os.path.join(out, str(seed))
        bar.label = f"{target} {scenario} seed {seed}"
        try:
            result = run(target, scenario, seed, duration, run_dir, bar.show, overrides, where)
        except Exception as exc:  # one broken run must not lose the others' results
            result = {"target": target, "scenario": scenario, "seed": seed, "duration": duration,
                      "status": "error", "reason": f"{type(exc).__name__}: {exc}"}
            os.makedirs(run_dir, exist_ok=True)
            with open(os.path.join(run_dir, "error.txt"), "w", encoding="utf-8") as f:
                f.write(traceback.format_exc())
        if result.get("status") == "done" and result.get("safe") and not keep:
            shutil.rmtree(os.path.join(run_dir, "logs"), ignore_errors=True)
            history = os.path.join(run_dir, "history.jsonl")
            if os.path.exists(history):
                os.remove(history)
        failing = result.get("status") != "done" or not result.get("safe")
        results.append({**result, "dir": os.path.relpath(run_dir, out) if failing and
                        result.get("status") == "done" else None})
        bar.done += 1
        bar.show("", 0.0)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    summary = summarize(target, scenario, duration, overrides, results, where)
    summary["wall_s"] = round(time.monotonic() - started, 1)
    summary["rows"] = [summary_row(r) for r in results]
    with open(os.path.join(out, "summary.json"), "w", encoding="utf-8") as f:
        json.dump(summary, f, indent=1, default=str)
        f.write("\n")
    write_report(results, out)
    return summary
