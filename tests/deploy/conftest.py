"""Fixtures of the deploy tests: a Docker engine (engine.py), the local base image
(base_image.py), and deploy/compose.yaml brought up from freshly built images, taken down at
the end with its containers, volumes, network and images.

The phases are logged with their durations (`pytest tests/deploy -o log_cli=true
--log-cli-level=INFO` shows them as they happen).
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Iterator

import pytest

from chaos.topology import toxiproxy_binary
from tests.deploy.base_image import ensure_base_image
from tests.deploy.engine import Engine, docker_engine
from tests.deploy.project import CHAOS_FILE, NODES, ROOT, SENTINELS, TLS_FILE, Project

log = logging.getLogger("deploy")

HERE = os.path.dirname(os.path.abspath(__file__))
_BUILD_TIMEOUT_S = 1500.0  # the compiled build is 1-3 minutes of CPU on 2 cores


@contextlib.contextmanager
def timed(what: str) -> Iterator[None]:
    started = time.monotonic()
    yield
    log.info("%s: %.1f s", what, time.monotonic() - started)


@pytest.fixture(scope="session")
def engine() -> Iterator[Engine]:
    started = time.monotonic()
    with docker_engine() as found:
        log.info("docker engine %s (private: %s, storage: %s) ready in %.1f s", found.server_version,
                 found.private, found.storage_driver or "its own", time.monotonic() - started)
        yield found
        started = time.monotonic()
        # The builder stage's layers (a shared engine keeps them as untagged images), kept until
        # now: the next project of the session builds the Rill image from them in seconds.
        found.docker("image", "prune", "--force", "--filter", "label=rill.stage=builder", check=False)
    log.info("docker engine released in %.1f s", time.monotonic() - started)


@pytest.fixture(scope="session")
def base_image(engine: Engine) -> str:
    with timed("base image (debootstrap or cache, docker import)"):
        return ensure_base_image(engine)


def _build_toxiproxy_image(engine: Engine, base: str, tag: str) -> None:
    """The `chaos` profile's image, from the toxiproxy-server the chaos lab uses (`make
    deploy-deps` builds it; chaos.topology says where it is)."""
    with tempfile.TemporaryDirectory(prefix="rill-toxiproxy-") as context:
        shutil.copy(toxiproxy_binary(), os.path.join(context, "toxiproxy-server"))
        engine.docker("build", "--quiet", "--file", os.path.join(ROOT, "deploy", "toxiproxy.Dockerfile"),
                      "--build-arg", f"BASE={base}", "--tag", tag, context, timeout=600)


def _up(engine: Engine, base_image: str, overrides: tuple[str, ...] = (),
        profiles: tuple[str, ...] = ()) -> Iterator[Project]:
    workdir = tempfile.mkdtemp(prefix="rill-compose-")
    project = Project.create(engine, workdir, base_image, overrides)
    try:
        with timed("rill image (docker-compose build)"):
            project.compose("build", "primary", timeout=_BUILD_TIMEOUT_S)
        with timed("toxiproxy and client images"):
            _build_toxiproxy_image(engine, base_image, project.image("toxiproxy"))
            engine.docker("build", "--quiet", "--file", os.path.join(HERE, "client.Dockerfile"),
                          "--build-arg", f"BASE={base_image}",
                          "--build-arg", f"REDIS_PY_VERSION={importlib.metadata.version('redis')}",
                          "--tag", project.image("client"), HERE, timeout=600)
        with timed("docker-compose up -d, all nodes and sentinels healthy"):
            project.compose("up", "-d", profiles=profiles)
            project.wait_healthy((*NODES, *SENTINELS))
        yield project
    finally:
        with timed("docker-compose down, images removed"):
            try:
                project.down()
            finally:
                engine.docker("rmi", "--force", project.image("client"), check=False)
                shutil.rmtree(workdir, ignore_errors=True)


@pytest.fixture(scope="module")
def project(engine: Engine, base_image: str) -> Iterator[Project]:
    yield from _up(engine, base_image)


@pytest.fixture(scope="module")
def chaos_project(engine: Engine, base_image: str) -> Iterator[Project]:
    """The chaos lab's cluster: deploy/compose.chaos.yaml over compose.yaml, with the chaos
    profile's toxiproxies (every link of the cluster through them)."""
    yield from _up(engine, base_image, (CHAOS_FILE,), ("chaos",))


@pytest.fixture(scope="module")
def tls_project(engine: Engine, base_image: str) -> Iterator[Project]:
    """The TLS profile: deploy/compose.yaml with deploy/compose.tls.yaml over it."""
    yield from _up(engine, base_image, (TLS_FILE,))
