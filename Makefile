# The two entry points: `make demo` and `make test`. Both do all set-up themselves.
BUILD_DIR ?= build
BUILD_TYPE ?= RelWithDebInfo
SANITIZER ?=
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
# OFF leaves out the tests (CMake then needs no GoogleTest) or the benchmark programs; read
# when BUILD_DIR is first configured, e.g. `make install TESTS=OFF BENCH=OFF BUILD_DIR=build-install`.
TESTS ?= ON
BENCH ?= ON
# `make format` formats the lines changed since the branch left FORMAT_BASE, not the whole tree.
FORMAT_BASE ?= main

.PHONY: all bootstrap configure build test demo bench install clean format fuzz

all: build

bootstrap:
	@scripts/bootstrap

$(BUILD_DIR)/build.ninja:
	@cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DSANITIZER=$(SANITIZER) \
	  -DSHOAL_BUILD_TESTS=$(TESTS) -DSHOAL_BUILD_BENCH=$(BENCH) >/dev/null

configure: bootstrap $(BUILD_DIR)/build.ninja

build: configure
	@ninja -C $(BUILD_DIR) -j $(JOBS)

test: build
	@ctest --test-dir $(BUILD_DIR) --output-on-failure -j 2 --timeout 600

demo: build
	@scripts/demo $(BUILD_DIR)/shoal

bench: build
	@bench/run $(if $(QUICK),--quick,)

install: build
	@cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR)

# `make fuzz [SECONDS=60] [HARNESS=name] [MERGE=1]`: every fuzz harness (fuzz/, docs/fuzzing.md)
# for SECONDS each, one at a time, in build-fuzz (clang 16, ASan + UBSan). Exits non-zero on a crash.
SECONDS ?= 60
HARNESS ?=
MERGE ?= 0
fuzz:
	@scripts/fuzz $(SECONDS) "$(HARNESS)" $(MERGE)

# git clang-format exits 1 when it changed something.
format:
	@git clang-format --force --extensions h,cc $$(git merge-base $(FORMAT_BASE) HEAD); [ $$? -le 1 ]
