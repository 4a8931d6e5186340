"""The matrix's report: report.html with a table (one row per scenario and target) and
matplotlib PNG plots: per run, operations over time and write latency over time, with the fault
windows shaded and role changes marked; for the matrix, lost writes per scenario and target.
Also results.json (every run's summary row) for docs and scripts.
"""

from __future__ import annotations

import html
import json
import os
from collections import defaultdict
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

from chaos.checker import faults_of, finals_of, pair_ops, reference_final  # noqa: E402
from chaos.g2 import promotions_of  # noqa: E402
from chaos.history import Event, read_history  # noqa: E402

BIN = 0.5  # seconds per bar in the operations plot
COLUMNS = [
    ("scenario", "scenario"), ("target", "target"), ("seed", "seed"), ("verdict", "verdict"), ("ok writes", "ok"),
    ("lost acked", "lost"), ("lost WAIT-acked", "lost_wait"), ("lost WAIT-majority", "lost_wait_majority"),
    ("G2 violations", "g2"),
    ("promoted s", "promoted_s"), ("new primary's first write s", "failover_s"), ("unavailable s", "unavailable_s"),
    ("longest gap s", "longest_gap_s"),
    ("other anomalies", "other"), ("notes", "notes"),
]


def summary_row(result: dict[str, Any]) -> dict[str, Any]:
    """The table's row for one run (also what docs/safety.md quotes)."""
    row: dict[str, Any] = {"scenario": result.get("scenario"), "target": result.get("target"),
                           "seed": result.get("seed"), "status": result.get("status"), "reason": result.get("reason"), "dir": result.get("dir")}
    if result.get("status") != "done":
        return row
    writes = result["writes"]
    def slowest(field: str) -> float | None:
        values = [f[field] for f in result.get("faults", []) if f.get(field) is not None]
        return max(values) if values else None

    other = {k: v for k, v in result["anomalies"].items() if v and k not in ("lost", "lost_wait_majority", "g2")}
    sentinels = result.get("sentinels", {})
    notes = []
    if sentinels.get("tilt"):
        notes.append(f"sentinels in TILT at {sentinels['tilt'][0]} s (CPU starved)")
    if sentinels.get("elections_split"):
        notes.append(f"{sentinels['elections_split']} split elections")
    row.update({
        "ok": writes["ok"],
        "lost": writes["lost"]["acked"],
        "lost_wait": writes["lost"]["wait_acked"],
        "lost_wait_majority": writes["lost"]["wait_majority_acked"],
        "g2": result.get("g2", {}).get("count"),
        "verdict": "safe" if result.get("safe") else "UNSAFE: " + ", ".join(result.get("unsafe_because", [])),
        "promoted_s": slowest("promoted_s"),
        "failover_s": slowest("failover_s"),
        "unavailable_s": result["unavailability"]["seconds_without_ok_write"],
        "longest_gap_s": result["unavailability"]["longest_gap_s"],
        "other": ", ".join(f"{k} {v}" for k, v in other.items()) or "none",
        "notes": "; ".join(notes),
        "steal": result.get("timings", {}).get("steal"),
    })
    return row


def load_results(out: str) -> list[dict[str, Any]]:
    """Every run's result.json under a matrix directory (for `rill chaos report DIR`)."""
    from chaos.scenarios import SCENARIOS
    from chaos.targets import TARGETS

    results = []
    for target in sorted(os.listdir(out), key=lambda t: list(TARGETS).index(t) if t in TARGETS else len(TARGETS)):
        target_dir = os.path.join(out, target)
        if not os.path.isdir(target_dir) or target == "plots":
            continue
        order = list(SCENARIOS)
        for scenario in sorted(os.listdir(target_dir), key=lambda n: order.index(n) if n in order else len(order)):
            path = os.path.join(target_dir, scenario, "result.json")
            if os.path.exists(path):
                with open(path, encoding="utf-8") as f:
                    result = json.load(f)
                done = result.get("status") == "done"
                results.append({**result, "dir": os.path.relpath(os.path.dirname(path), out) if done else None})
    return results


def write_report(results: list[dict[str, Any]], out: str) -> str:
    rows = [summary_row(r) for r in results]
    with open(os.path.join(out, "results.json"), "w", encoding="utf-8") as f:
        json.dump(rows, f, indent=1)
        f.write("\n")
    plots_dir = os.path.join(out, "plots")
    os.makedirs(plots_dir, exist_ok=True)
    run_plots: dict[tuple[str, str, str], list[str]] = {}
    for row in rows:
        if row["status"] != "done" or not row.get("dir"):
            continue
        history = read_history(os.path.join(out, row["dir"], "history.jsonl"))
        stem = f"{row['target']}-{row['scenario']}-{row['seed']}"
        title = f"{row['scenario']} on {row['target']}, seed {row['seed']}"
        run_plots[(row["target"], row["scenario"], str(row["seed"]))] = [
            plot_operations(history, os.path.join(plots_dir, f"{stem}-ops.png"), title),
            plot_latency(history, os.path.join(plots_dir, f"{stem}-latency.png"), title),
        ]
    lost_png = plot_lost(rows, os.path.join(plots_dir, "lost.png"))
    path = os.path.join(out, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(_html(rows, run_plots, lost_png, out, results))
    return path


def _shade(ax: Any, history: list[Event]) -> None:
    """Fault windows shaded; role changes (a node becoming primary) as vertical lines."""
    for fault in faults_of(history):
        end = fault.stop if fault.stop is not None else ax.get_xlim()[1]
        ax.axvspan(fault.start, end, color="tab:red", alpha=0.12, lw=0)
        ax.text(fault.start, 1.0, " " + fault.name.split("#")[0], transform=ax.get_xaxis_transform(),
                va="top", fontsize=7, color="tab:red")
    for i, promotion in enumerate(promotions_of(history)):  # promotions, not restarts as primary
        ax.axvline(promotion.time, color="tab:purple", lw=0.8, ls="--")
        ax.text(promotion.time, 0.9 - 0.08 * (i % 3), f" {promotion.node} promoted",
                transform=ax.get_xaxis_transform(), fontsize=7, color="tab:purple", va="top")


def plot_operations(history: list[Event], path: str, title: str) -> str:
    """Writes per half second by outcome, stacked: ok, ok but lost (absent from the final
    primary), unknown, failed."""
    counts: dict[str, dict[int, int]] = {k: defaultdict(int) for k in ("ok", "lost", "fail", "info")}
    reference, _ = reference_final(finals_of(history))
    present = {value for _, value in (reference.entries or [])} if reference is not None else set()
    last = 0
    for op in pair_ops(history):
        if op.f != "xadd":
            continue
        when = op.end if op.completion is not None else op.start
        slot = int(when / BIN)
        lost = op.outcome == "ok" and str(op.invoke.get("value")) not in present
        counts["lost" if lost else op.outcome][slot] += 1
        last = max(last, slot)
    xs = [i * BIN for i in range(last + 1)]
    fig, ax = plt.subplots(figsize=(9, 3.2))
    bottom = [0] * len(xs)
    for outcome, color, label in (("ok", "tab:green", "ok"), ("lost", "black", "ok, then lost"),
                                  ("info", "tab:orange", "unknown (info)"), ("fail", "tab:red", "failed")):
        ys = [counts[outcome].get(i, 0) for i in range(last + 1)]
        ax.bar(xs, ys, width=BIN, bottom=bottom, align="edge", color=color, label=label, lw=0)
        bottom = [b + y for b, y in zip(bottom, ys)]
    _shade(ax, history)
    ax.set_xlabel("seconds into the run")
    ax.set_ylabel(f"writes per {BIN} s")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="lower left", fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_latency(history: list[Event], path: str, title: str) -> str:
    """Each write's latency (invoke to completion, WAIT included) by producer mode; info
    (timeouts) as crosses."""
    fig, ax = plt.subplots(figsize=(9, 3.2))
    series: dict[str, tuple[list[float], list[float]]] = defaultdict(lambda: ([], []))
    for op in pair_ops(history):
        if op.f != "xadd" or op.completion is None:
            continue
        key = op.outcome if op.outcome != "ok" else str(op.invoke.get("mode"))
        series[key][0].append(op.start)
        series[key][1].append((op.end - op.start) * 1000)
    colors = {"nowait": "tab:blue", "wait1": "tab:cyan", "waitmaj": "tab:green", "info": "tab:orange",
              "fail": "tab:red"}
    for key, (xs, ys) in sorted(series.items()):
        ax.scatter(xs, ys, s=3, color=colors.get(key, "gray"), label=key,
                   marker="x" if key in ("info", "fail") else "o")
    ax.set_yscale("log")
    _shade(ax, history)
    ax.set_xlabel("seconds into the run")
    ax.set_ylabel("write latency, ms")
    ax.set_title(title, fontsize=10)
    ax.legend(loc="upper left", fontsize=7, markerscale=3)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def plot_lost(rows: list[dict[str, Any]], path: str) -> str:
    """Lost acknowledged writes per scenario, one group of bars per target."""
    done = [r for r in rows if r["status"] == "done"]
    scenarios = list(dict.fromkeys(r["scenario"] for r in done)) or ["(none)"]
    targets = list(dict.fromkeys(r["target"] for r in done))
    fig, ax = plt.subplots(figsize=(10, 3.8))
    width = 0.8 / max(1, len(targets) * 2)
    for t, target in enumerate(targets):
        for k, (field, label, hatch) in enumerate((("lost", "acked", ""), ("lost_wait", "WAIT-acked", "//"))):
            ys = [next((r[field] for r in done if r["scenario"] == s and r["target"] == target), 0) for s in scenarios]
            xs = [i + (t * 2 + k) * width for i in range(len(scenarios))]
            ax.bar(xs, ys, width=width, label=f"{target}: lost {label}", hatch=hatch, color=f"C{t}",
                   alpha=1.0 if k == 0 else 0.6)
    ax.set_xticks([i + 0.4 - width / 2 for i in range(len(scenarios))])
    ax.set_xticklabels(scenarios, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("acknowledged writes lost")
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path


def _seeds_text(seeds: list[str]) -> str:
    """Seeds as a list, or as a range when they are many consecutive ones (a soak)."""
    numbers = sorted(int(s) for s in seeds if s.lstrip("-").isdigit())
    if len(numbers) > 5 and numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"{numbers[0]}-{numbers[-1]}"
    return ", ".join(seeds)


def _html(rows: list[dict[str, Any]], run_plots: dict[tuple[str, str, str], list[str]], lost_png: str, out: str,
          results: list[dict[str, Any]]) -> str:
    esc = html.escape
    seeds = sorted({str(r.get("seed")) for r in results})
    durations = sorted({str(r.get("duration")) for r in results})
    head = "".join(f"<th>{esc(title)}</th>" for title, _ in COLUMNS)
    # A target that cannot run is one line, not a row per scenario; the rest side by side,
    # grouped by scenario.
    skipped = {str(r["target"]): str(r.get("reason")) for r in rows if r["status"] == "not available"}
    scenario_order = list(dict.fromkeys(str(r["scenario"]) for r in rows))
    target_order = list(dict.fromkeys(str(r["target"]) for r in rows))
    ran = sorted((r for r in rows if r["status"] != "not available"),
                 key=lambda r: (scenario_order.index(str(r["scenario"])), target_order.index(str(r["target"]))))
    not_run = "".join(f"<li>{esc(t)}: not available: {esc(reason)}</li>" for t, reason in skipped.items())
    body = []
    for row in ran:
        if row["status"] != "done":
            cells = (f"<td>{esc(str(row['scenario']))}</td><td>{esc(str(row['target']))}</td>"
                     f"<td colspan={len(COLUMNS) - 2}>{esc(str(row['status']))}: {esc(str(row.get('reason')))}</td>")
        else:
            cells = "".join(f"<td>{esc('' if row.get(key) is None else str(row.get(key)))}</td>"
                            for _, key in COLUMNS)
            if row.get("dir"):  # a soak keeps only its failing runs' directories
                cells = cells.replace(f"<td>{esc(str(row['scenario']))}</td>",
                                      f"<td><a href='{esc(row['dir'])}/result.json'>{esc(str(row['scenario']))}</a></td>",
                                      1)
        body.append(f"<tr>{cells}</tr>")
    sections = []
    for (target, scenario, seed), pngs in run_plots.items():
        description = next((r.get("description", "") for r in results
                            if r.get("target") == target and r.get("scenario") == scenario), "")
        imgs = "".join(f"<img src='{esc(os.path.relpath(p, out))}'>" for p in pngs)
        sections.append(f"<h3>{esc(scenario)} on {esc(target)}, seed {esc(seed)}</h3><p>{esc(str(description))}</p>"
                        f"{imgs}")
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>Rill chaos report</title>
<style>body{{font-family:sans-serif;margin:2em;max-width:1100px}}table{{border-collapse:collapse;font-size:13px}}
td,th{{border:1px solid #ccc;padding:3px 6px;text-align:right}}td:first-child,td:nth-child(2){{text-align:left}}
img{{max-width:100%;display:block;margin:4px 0}}</style></head><body>
<h1>Chaos report</h1>
<p>Seed {esc(_seeds_text(seeds))}, {esc(", ".join(durations))} s of workload per run. Lost = acknowledged
(the XADD returned an ID) but absent from every node's final read once the cluster healed; WAIT-acked =
WAIT met its target (1 replica, or a majority); G2 violations = operations acknowledged by a node after
another node's newer promotion (sent after the monitor saw it); verdict = safe when fenced mode's
guarantees held (no WAIT-majority write lost, no G2 violation, no durably XACKed entry delivered again,
the cluster settled with the same data and group state on every node); promoted = fault start to another node becoming
primary; new primary's first write = fault start to the first write another node acknowledged (clients
that still reach the old primary keep writing there until it is demoted); unavailable = whole seconds
without an acknowledged write. Each run's history and
result are linked from its scenario name; <code>rill chaos check HISTORY</code> rechecks one.</p>
<table><tr>{head}</tr>{''.join(body)}</table>
{f"<p>Not run:</p><ul>{not_run}</ul>" if not_run else ""}
<h2>Lost writes per scenario and target</h2><img src='{esc(os.path.relpath(lost_png, out))}'>
<h2>Runs</h2>
<p>Writes per half second (green acknowledged, black acknowledged and then lost, orange unknown,
red failed) and each write's latency; shaded: the fault; dashed: a node was promoted.</p>
{''.join(sections)}
</body></html>
"""
