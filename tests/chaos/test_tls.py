"""`rill chaos run --tls`: the lab's cluster serves TLS only and every lab client speaks it.

One short `rill kill-primary` run with `--tls`, run as a user runs it, must be a working run
(the harness checks of the smoke: the fault healed, the cluster settled, every node read, every
kind of write acknowledged, the consumers drained) — which no client could have done in clear
text — and its nodes and sentinels must have served TLS only: the configs they were started
from have `port 0` and a `tls-port`, and each refused the plaintext PING the lab sent it during
the run."""

from __future__ import annotations

import glob
import os

import pytest

from tests.chaos.test_smoke import _run, assert_the_harness_worked

NODES = [f"n{k}" for k in range(1, 6)]
SENTINELS = ["s1", "s2", "s3"]


def _conf(path: str) -> dict[str, str]:
    """A config file's `name value` lines (the first of each name)."""
    out: dict[str, str] = {}
    with open(path, encoding="utf-8") as f:
        for line in f:
            name, _, value = line.strip().partition(" ")
            if name and not name.startswith("#"):
                out.setdefault(name, value)
    return out


@pytest.mark.slow
def test_a_tls_run_works_and_its_nodes_and_sentinels_serve_tls_only(tmp_path: object) -> None:
    out = os.path.join(str(tmp_path), "run")
    result: dict = _run("rill", "kill-primary", out, "--tls")  # type: ignore[type-arg]
    assert_the_harness_worked(result, out)
    assert result["faults"][0]["promoted_s"] is not None or result["sentinels"]["tilt"], result["faults"]
    assert result["settings"]["tls"] == 1

    # every node and sentinel refused a plaintext client on its port during the run
    refused = result["tls"]["plaintext_refused"]
    assert sorted(refused) == sorted([*NODES, *SENTINELS]), refused

    # ... and was started TLS only: no plaintext port, TLS on the usual one, TLS links
    logs = os.path.join(out, "logs")
    for name, kind, port in [*((n, "node", "6379") for n in NODES), *((s, "sentinel", "26379") for s in SENTINELS)]:
        conf = _conf(os.path.join(logs, f"{name}-{kind}.conf"))
        assert conf["port"] == "0", (name, conf)
        assert conf["tls-port"] == port, (name, conf)
        assert conf["tls-replication"] == "yes" and conf["tls-auth-clients"] == "yes", (name, conf)
    # the certificates (their keys above all) left with the run's working directory
    assert not glob.glob(os.path.join(out, "**", "*.key"), recursive=True)
