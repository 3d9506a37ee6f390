# Drives CMake. `make test` builds and runs every test: the release build, a
# debug build with expensive assertions, and ThreadSanitizer.
JOBS   ?= $(shell nproc)
BUILD  ?= build
CMAKE  ?= cmake

.PHONY: all build test test-release test-debug test-tsan run bench clean

all: build

build:
	$(CMAKE) -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	$(CMAKE) --build $(BUILD) -j $(JOBS)

test: test-release test-debug test-tsan

test-release: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-debug:
	$(CMAKE) -S . -B $(BUILD)-debug -DCMAKE_BUILD_TYPE=Debug -DPCMALLOC_DEBUG=3 -DPCMALLOC_BENCH=OFF
	$(CMAKE) --build $(BUILD)-debug -j $(JOBS)
	cd $(BUILD)-debug && ctest --output-on-failure -j $(JOBS)

# ThreadSanitizer runs the tests labelled "tsan" (the multi-threaded ones).
test-tsan:
	$(CMAKE) -S . -B $(BUILD)-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPCMALLOC_SANITIZE=thread -DPCMALLOC_BENCH=OFF
	$(CMAKE) --build $(BUILD)-tsan -j $(JOBS)
	cd $(BUILD)-tsan && TSAN_OPTIONS=halt_on_error=1 ctest --output-on-failure -j $(JOBS) -L tsan

# The main job: see README.md.
run: build
	./tools/run-main.sh $(BUILD)

bench: build
	./tools/run-bench.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-debug $(BUILD)-tsan
