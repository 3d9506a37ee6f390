# Drives CMake. `make test` builds and runs every test: the release build
# (everything, real programs included), a debug build with expensive
# assertions (all but the real programs), ThreadSanitizer (the threaded unit
# tests) and AddressSanitizer + UndefinedBehaviorSanitizer (the unit tests).
JOBS   ?= $(shell nproc)
BUILD  ?= build
CMAKE  ?= cmake

.PHONY: all build test test-release test-debug test-tsan test-asan run bench clean

all: build

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS)

test: test-release test-debug test-tsan test-asan

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-debug:
	$(CMAKE) -S . -B $(BUILD)-debug -DCMAKE_BUILD_TYPE=Debug -DPCMALLOC_DEBUG=3 -DPCMALLOC_BENCH=OFF
	$(CMAKE) --build $(BUILD)-debug -j $(JOBS)
	cd $(BUILD)-debug && ctest --output-on-failure -j $(JOBS) -LE "programs|install|bench"

# ThreadSanitizer runs the tests labelled "tsan" (the multi-threaded ones).
test-tsan:
	$(CMAKE) -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCMALLOC_SANITIZE=thread -DPCMALLOC_BENCH=OFF
	$(CMAKE) --build $(BUILD)-tsan -j $(JOBS)
	cd $(BUILD)-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) -L tsan

test-asan:
	$(CMAKE) -S . -B $(BUILD)-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCMALLOC_SANITIZE=address,undefined -DPCMALLOC_BENCH=OFF
	$(CMAKE) --build $(BUILD)-asan -j $(JOBS)
	cd $(BUILD)-asan && UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ctest --output-on-failure -j $(JOBS) -L unit

# The main job: see README.md.
run: build
	./tools/run-main.sh $(BUILD)

# The main job: every seed's experiment and pcmalloc beside glibc, jemalloc,
# mimalloc and tcmalloc (tools/bench.py; BENCH_ARGS="--full", "--only pcp",
# "--reps 5", ...). Installs the peers and matplotlib first (.ci/deps.sh),
# and builds only the library and the benchmarks (not the tests).
BENCH_ARGS ?=
bench:
	sh .ci/deps.sh
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS) --target bench-programs
	/usr/bin/python3.11 tools/bench.py --build $(BUILD) $(BENCH_ARGS)

clean:
	rm -rf $(BUILD) $(BUILD)-debug $(BUILD)-tsan $(BUILD)-asan
