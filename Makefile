# dpbench build. `make` builds ./dpbench (objects under build/); `make run`
# runs the tutorial config; `make test` runs the test suite; `make test-gpu`
# checks the cuda backend against the cpu (skips without a GPU); `make bench`
# writes benchmark results into bench_results/.
#
# The CUDA backend is built when the toolkit is found (CUDA_HOME, default
# /usr/local/cuda) unless CUDA=0; the CPU tool is built either way.

ifeq ($(origin CC),default)
CC       := gcc
endif
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-format-truncation -pthread -MMD -MP
CPPFLAGS += -Isrc -I/usr/include/x86_64-linux-gnu/openblas-pthread
LDLIBS   += -lyaml -lcjson -lopenblas -lm -pthread
GIT      := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
CPPFLAGS += -DDPBENCH_GIT='"$(GIT)"'

CUDA_HOME ?= /usr/local/cuda
CUDA      ?= $(if $(wildcard $(CUDA_HOME)/include/cuda_runtime.h),1,0)

SRC  := util.c rng.c config.c dataset.c chunk.c loader.c backend_cpu.c backends.c train.c report.c
ifeq ($(CUDA),1)
SRC      += backend_cuda.c
CPPFLAGS += -DDPBENCH_HAVE_CUDA -I$(CUDA_HOME)/include
LDFLAGS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
LDLIBS   += -lcublas -lcudart
BUILD_MSG := CUDA toolkit found in $(CUDA_HOME): building backends cpu cuda
else
BUILD_MSG := no CUDA toolkit (CUDA_HOME=$(CUDA_HOME), CUDA=$(CUDA)): building backend cpu only
endif

B    := build
OBJ  := $(SRC:%.c=$(B)/%.o)
LIB  := $(filter-out $(B)/main.o,$(OBJ))

.PHONY: all run test test-unit test-cli test-gpu bench clean deps
all: dpbench

$(B)/deps.stamp: scripts/install-deps.sh
	@mkdir -p $(B)
	@scripts/install-deps.sh
	@echo "dpbench: $(BUILD_MSG)"
	@touch $@

$(B)/%.o: src/%.c $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

dpbench: $(OBJ) $(B)/main.o
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

run: dpbench
	./dpbench --config configs/tutorial.yaml

# ---- tests ------------------------------------------------------------------
TESTS := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/test_*.c))

$(B)/tests/%: tests/%.c $(LIB) tests/testutil.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) -lcmocka -o $@

test-unit: $(TESTS)
	@set -e; for t in $(TESTS); do echo "== $$t"; $$t; done

test-cli: dpbench
	@tests/cli_test.sh ./dpbench

test: test-unit test-cli

# GPU tests stay out of TESTS so `make test` needs no GPU; without a usable
# device the binary prints why and exits 0.
GPU_TEST := $(B)/tests/gpu_test
ifeq ($(CUDA),1)
$(GPU_TEST): tests/gpu_test.c $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) -lcmocka -o $@

test-gpu: $(GPU_TEST)
	@$(GPU_TEST)
else
test-gpu:
	@echo "skipped: no CUDA device (dpbench was built without the CUDA toolkit)"
endif

bench: dpbench
	scripts/bench.sh

clean:
	rm -rf $(B) dpbench

-include $(OBJ:.o=.d) $(B)/main.d
