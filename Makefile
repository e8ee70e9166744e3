# glucx — top-level commands. `make test` and `make demo` are the README's two commands.
BUILD      ?= build
ASAN_BUILD ?= build-asan
JOBS       ?= $(shell nproc)
CMAKE_ARGS ?=

.PHONY: all deps build test test-asan bench install clean format demo demo-cluster

all: build

deps:
	@scripts/install-deps.sh build test

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_ARGS)

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

# The Python package (adapters/torch: glucx, its extension, the start-up hook that registers the
# Gloo device "UCX", a torchrun for the venv) installed in a venv that sees Debian's torch.
# Re-installed when the package's sources or the libraries staged from $(BUILD) change.
PYTHON ?= /usr/bin/python3
VENV   ?= .venv
.PHONY: venv
venv: build
	@$(MAKE) --no-print-directory $(VENV)/.glucx-installed  # sees what `build` staged
$(VENV)/bin/python:
	$(PYTHON) -m venv --system-site-packages $(VENV)
$(VENV)/.glucx-installed: $(VENV)/bin/python \
		$(shell find adapters/torch -type f -not -path '*/__pycache__/*' 2>/dev/null) \
		$(wildcard $(BUILD)/adapters/torch/glucx/*)
	GLUCX_BUILD_DIR=$(abspath $(BUILD)) $(VENV)/bin/python -m pip install -q --no-build-isolation \
		--no-index --no-deps --force-reinstall ./adapters/torch
	touch $@

# Every test, through ctest.
test: build venv
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The same suite built with AddressSanitizer + UBSan (CI runs it). Its deadlines are scaled by 2
# (GLUCX_TEST_TIME_SCALE, tests/README.md): an unoptimized, instrumented build runs the C code
# 2-3x slower and LeakSanitizer scans every forked rank at exit, while the base values are set
# for the optimized build on a loaded 2-core machine. ASAN_TIME_SCALE=... overrides it.
ASAN_TIME_SCALE ?= 2
test-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DGLUCX_SANITIZE=ON -DGLUCX_BUILD_TORCH=OFF -DGLUCX_BUILD_DASHBOARD=OFF -DGLUCX_TEST_TIME_SCALE=$(ASAN_TIME_SCALE) $(CMAKE_ARGS)
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 ctest --output-on-failure -j $(JOBS) --timeout 900

# Collective benchmarks against Open MPI and Gloo TCP under the measurement protocol (see
# docs/perf.md, "Measurement protocol"); options for scripts/compare.sh in BENCH_ARGS, e.g.
# `make bench BENCH_ARGS="--load"` (under stress-ng --cpu <ncpu>) or BENCH_ARGS="--bind".
BENCH_ARGS ?=
bench: build venv
	@scripts/install-deps.sh bench
	scripts/compare.sh $(BENCH_ARGS)

# Gloo's own upstream test suite on Gloo TCP and on glucx (docs/conformance.md). A check tool,
# not part of `test`: it needs Debian's gloo source package and takes long. Options go in
# GLOO_UPSTREAM_ARGS, e.g. GLOO_UPSTREAM_ARGS="--filter 'SendRecv*' --timeout 60".
GLOO_UPSTREAM_ARGS ?=
.PHONY: gloo-upstream
gloo-upstream: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS) --target glucx_gloo
	scripts/gloo-upstream.sh --glucx-build $(BUILD) $(GLOO_UPSTREAM_ARGS)

install: build
	cmake --install $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h' '*.cc' '*.cpp')

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(VENV) demo-out demo-cluster-out

# The main job: DDP training on scikit-learn's digits, 4 local ranks over the glucx backend,
# traced by glucx-trace and explained by glucx-analyze (scripts/demo.sh; output in demo-out/).
# DEMO_ARGS passes options, e.g. DEMO_ARGS="--epochs 2 --backend gloo".
DEMO_ARGS ?=
demo: build venv
	BUILD=$(BUILD) VENV=$(VENV) scripts/demo.sh $(DEMO_ARGS)

# The same digits training on the emulated 2x2 torus (root): a ResNet-18 with scheduled data
# parallelism on 4 hosts x 2 ranks of glucx-cluster, traced per host, then glucx-analyze's verdict,
# bytes per link and schedule decisions (scripts/demo-cluster.sh; output in demo-cluster-out/).
# DEMO_CLUSTER_ARGS passes options, e.g. DEMO_CLUSTER_ARGS="--max-steps 6 --mode ddp".
DEMO_CLUSTER_ARGS ?=
demo-cluster: build venv
	BUILD=$(BUILD) VENV=$(VENV) scripts/demo-cluster.sh $(DEMO_CLUSTER_ARGS)
