# dpbench build. `make` builds ./dpbench (objects under build/); `make run`
# runs the tutorial config; `make test` runs the test suite (its last stage,
# test-gpu, checks the cuda backend against the cpu on this machine's GPU,
# and is skipped without one); `make bench` writes benchmark results into
# bench_results/.
#
# The CUDA backend is built when the toolkit is found (CUDA_HOME, default
# /usr/local/cuda, with its nvcc for dpbench's kernels) unless CUDA=0; the
# CPU tool is built either way.

.DEFAULT_GOAL := all

ifeq ($(origin CC),default)
CC       := gcc
endif
CFLAGS   ?= -O2 -g
CFLAGS   += -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-format-truncation -pthread -MMD -MP
# Libraries come from pkg-config (build/deps.mk, written after
# scripts/install-deps.sh has checked they are installed): no fixed paths.
# libjpeg, libpng: image decoding; zlib: gzip'd idx files. libxsmm (the
# step's small products, src/backends/hostmm.c) where Debian has it (amd64): found, it
# adds -DDPBENCH_HAVE_XSMM; XSMM=0 builds without. -ldl: src/core/dl.c opens the
# CUDA, MPI and NCCL libraries at run time (in libc itself from glibc 2.34).
PC_MODULES := yaml-0.1 libcjson openblas libjpeg libpng zlib
XSMM ?= 1
# src/ is grouped by layer (docs/architecture.md): core/ data/ comm/ backends/
# train/ report/ tune/ app/ under main.c. Sources are named without their folder (objects
# stay flat under build/); vpath and src_path find them.
SRC_DIRS := src $(addprefix src/,core data comm backends train report tune app)
SRC_INC  := $(addprefix -I,$(SRC_DIRS))
vpath %.c $(SRC_DIRS)
src_path = $(foreach f,$(1),$(firstword $(wildcard $(addsuffix /$(f),$(SRC_DIRS)))))
# Dependency files written before src/ had folders name sources that moved: drop them once.
$(shell [ -f build/layout-2 ] || { mkdir -p build; find build -name '*.d' -delete; touch build/layout-2; })
CPPFLAGS += $(SRC_INC) $(PC_CFLAGS)
LDLIBS   += $(PC_LIBS) -lm -pthread -ldl
GIT      := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
CPPFLAGS += -DDPBENCH_GIT='"$(GIT)"'
# the one object that records the commit is rebuilt when HEAD moves
$(shell mkdir -p build; [ "$$(cat build/git-commit 2>/dev/null)" = "$(GIT)" ] || echo "$(GIT)" >build/git-commit)
build/render_json.o: build/git-commit

# The Python the tests and scripts run under: Debian's, with the Debian
# packages install-deps.sh installs (`python3` on PATH may be a pyenv or venv).
PYTHON ?= /usr/bin/python3
export PYTHON

CUDA_HOME ?= /usr/local/cuda
NVCC      ?= $(CUDA_HOME)/bin/nvcc
CUDA_HDR  := $(wildcard $(CUDA_HOME)/include/cuda_runtime.h)
CUDA      ?= $(if $(and $(CUDA_HDR),$(wildcard $(NVCC))),1,0)
# the cuda backend's files (cuda_backend.h says which does what)
CUDA_SRC  := backend_cuda.c cuda_ring.c cuda_step.c cuda_probe.c cuda_bandwidth.c cuda_module.c cuda_dl.c
# dpbench's own kernels (src/backends/cuda_kernels.cu), built by nvcc into a
# fatbin that cuda_module.c embeds: machine code for each GPU generation of
# CUDA_ARCHS that this nvcc knows (sm_90: H100, H200), and PTX of the newest
# for later GPUs (a driver at least as new as nvcc compiles it).
CUDA_ARCHS ?= 75 80 86 89 90 100 120
ifeq ($(CUDA),1)
NVCC_ARCHS := $(filter $(CUDA_ARCHS),$(patsubst compute_%,%,$(shell $(NVCC) --list-gpu-arch 2>/dev/null)))
NVCC_GENCODE := $(foreach a,$(NVCC_ARCHS),-gencode arch=compute_$(a),code=sm_$(a)) \
                $(foreach a,$(lastword $(NVCC_ARCHS)),-gencode arch=compute_$(a),code=compute_$(a))
endif

CPU_SRC := util.c rng.c config.c config_set.c config_yaml.c config_rules.c dataset.c chunk.c loader.c loss.c step.c backend_cpu.c devpipe.c backend_emulated.c backends.c train.c run_result.c \
           export.c blas_tune.c floor.c image.c transform.c dataset_files.c dataset_kinds.c files.c kind_random.c \
           kind_idx.c kind_cifar10.c kind_folder.c gen.c estimate.c \
           comm.c ddp.c report_ddp.c report_emulated.c report_columns.c emulate_profile.c allreduce_bw.c hostmm.c \
           stats.c progress.c compare.c compare_read.c effect.c machine.c dl.c rlimits.c signals.c \
           tune.c tune_run.c pipeline.c staging.c \
           summary.c render_text.c render_text_compare.c render_json.c render_csv.c render_markdown.c render_tune.c renderers.c \
           result_files.c \
           load.c rounds.c verdicts.c \
           cli.c sweep.c measure.c devices.c session.c registry.c mode_train.c mode_tune.c mode_export.c mode_h2d.c \
           mode_allreduce.c mode_compare.c mode_make_dataset.c
SRC      := $(CPU_SRC)
ifeq ($(CUDA),1)
SRC      += $(CUDA_SRC)
CPPFLAGS += -DDPBENCH_HAVE_CUDA -I$(CUDA_HOME)/include
LDFLAGS  += -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64
LDLIBS   += -ldl
BUILD_MSG := CUDA toolkit found in $(CUDA_HOME): building backends cpu cuda (kernels for sm_$(subst $() ,/,$(NVCC_ARCHS)))
else
BUILD_MSG := $(if $(CUDA_HDR),$(if $(wildcard $(NVCC)),CUDA=0,CUDA headers but no $(NVCC)),no CUDA toolkit in $(CUDA_HOME)): building backend cpu only
endif

# Open MPI for ddp runs (parallel.comm: mpi), found by mpicc or pkg-config's
# ompi-c; MPI=0 builds without. Only its headers are used here: comm_mpi.c
# opens libmpi with dlopen in ddp runs, so dp runs never map it.
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null || pkg-config --cflags ompi-c 2>/dev/null)
MPI        ?= $(if $(strip $(MPI_CFLAGS)),1,0)
ifeq ($(MPI),1)
SRC      += comm_mpi.c
CPPFLAGS += -DDPBENCH_HAVE_MPI
LDLIBS   += -ldl
MPI_MSG  := Open MPI headers found: comm mpi
else
MPI_MSG  := $(if $(strip $(MPI_CFLAGS)),MPI=0,no MPI (mpicc or pkg-config ompi-c)): no comm engine
endif

# NCCL (parallel.comm: nccl) is a library of its own, not part of the CUDA
# toolkit: NVIDIA's libnccl-dev installs nccl.h in /usr/include, some
# toolkit installs carry it under CUDA_HOME, NCCL_HOME names any other
# place. It needs MPI to bootstrap; opened with dlopen by ddp runs on cuda.
NCCL_H   := $(firstword $(wildcard $(foreach d,$(NCCL_HOME) $(CUDA_HOME) /usr,$(d)/include/nccl.h)))
NCCL_INC := $(filter-out -I/usr/include,$(patsubst %/,-I%,$(dir $(NCCL_H))))
NCCL ?= $(if $(and $(filter 1,$(CUDA)),$(filter 1,$(MPI)),$(NCCL_H)),1,0)
ifeq ($(NCCL),1)
SRC      += comm_nccl.c
CPPFLAGS += -DDPBENCH_HAVE_NCCL
MPI_MSG  += nccl ($(NCCL_H))
else ifeq ($(CUDA)$(MPI),11)
MPI_MSG  += (no nccl.h in $(CUDA_HOME)/include or /usr/include: install libnccl-dev or set NCCL_HOME for comm nccl)
endif

B    := build
OBJ  := $(SRC:%.c=$(B)/%.o)
$(B)/comm_mpi.o: CPPFLAGS += $(MPI_CFLAGS)
$(B)/comm_nccl.o: CPPFLAGS += $(NCCL_INC)
# the kernels' fatbin, rebuilt when the architectures change
FATBIN := $(abspath $(B))/cuda_kernels.fatbin
$(shell mkdir -p $(B); [ "$$(cat $(B)/cuda-archs 2>/dev/null)" = "$(NVCC_ARCHS)" ] || echo "$(NVCC_ARCHS)" >$(B)/cuda-archs)
$(FATBIN): src/backends/cuda_kernels.cu src/backends/cuda_kernels.h src/core/loss_rows.h $(B)/cuda-archs
	$(NVCC) -fatbin -O3 -Isrc/backends -Isrc/core $(NVCC_GENCODE) -o $@ $<
$(B)/cuda_module.o: $(FATBIN)
$(B)/cuda_module.o: CPPFLAGS += -DDPBENCH_FATBIN='"$(FATBIN)"'
# the image resize's integer loops vectorise at -O3 (-O2 leaves them scalar), and
# transform.c picks AVX2 clones of them at run time where the CPU has it
$(B)/transform.o: CFLAGS += -O3
# Objects depend on the flavour (CUDA=0/1, MPI=0/1), so switching rebuilds them.
FLAVOUR := $(B)/flavour
$(shell mkdir -p $(B); [ "$$(cat $(FLAVOUR) 2>/dev/null)" = "$(CUDA)$(MPI)$(NCCL)" ] || echo $(CUDA)$(MPI)$(NCCL) >$(FLAVOUR))
LIB  := $(filter-out $(B)/main.o,$(OBJ))

.PHONY: all run test test-build test-loop test-unit test-kernels native-kernel-tests test-cli test-results test-data-cli test-gpu test-asan test-asan-bin test-tsan \
        test-ubsan test-fuzz test-valgrind test-scripts test-ddp test-limits test-multinode test-cuda-emulated \
        test-docs test-samples test-layers test-tune test-fresh emu-1gpu emu-3gpu emu-cli emu-nccl emu-bench test-arm64 test-same-output bench bench-data bench-tune bench-verdicts bench-rounds bench-stats clean
all: dpbench

# The dependency check: scripts/install-deps.sh installs what is missing and
# lists the files that show each package is there (.pc files, programs); the
# check runs again when the script changes or one of those files is gone, and
# make restarts with the flags pkg-config gives. Not for clean, test-fresh or
# test-arm64 (they install inside their own roots).
NO_DEPS_GOALS := clean test-fresh test-arm64
ifneq ($(filter-out $(NO_DEPS_GOALS),$(or $(MAKECMDGOALS),all)),)
include $(B)/deps.mk
endif
$(shell mkdir -p $(B); [ "$$(cat $(B)/xsmm 2>/dev/null)" = "$(XSMM)" ] || echo $(XSMM) >$(B)/xsmm)
$(B)/deps.mk: scripts/install-deps.sh $(B)/xsmm
	@mkdir -p $(B)
	@scripts/install-deps.sh make --found $@.found
	@x=$$([ "$(XSMM)" = 1 ] && pkg-config --exists libxsmm && echo libxsmm); \
	 { echo "PC_CFLAGS := $$(pkg-config --cflags $$x $(PC_MODULES))$${x:+ -DDPBENCH_HAVE_XSMM}"; \
	   echo "PC_LIBS := $$(pkg-config --libs $$x $(PC_MODULES))"; \
	   echo "CMOCKA_CFLAGS := $$(pkg-config --cflags cmocka)"; \
	   echo "CMOCKA_LIBS := $$(pkg-config --libs cmocka)"; \
	   echo "$@: $$(tr '\n' ' ' <$@.found)"; \
	   sed 's/$$/:/' $@.found; } >$@.tmp
	@mv $@.tmp $@
	@touch $(B)/deps.stamp
$(B)/deps.stamp: $(B)/deps.mk
	@touch $@

$(B)/%.o: %.c $(B)/deps.stamp $(FLAVOUR)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The commit recorded in result files follows HEAD.
$(shell [ "$$(cat $(B)/git-rev 2>/dev/null)" = "$(GIT)" ] || echo $(GIT) >$(B)/git-rev)
$(B)/render_text.o $(B)/render_json.o $(B)/render_markdown.o: $(B)/git-rev

dpbench: $(OBJ) $(B)/main.o
	@echo "dpbench: $(BUILD_MSG); $(MPI_MSG)"
	$(CC) $(CFLAGS) $(LDFLAGS) $^ $(LDLIBS) -o $@

run: dpbench
	./dpbench --config configs/tutorial.yaml

# ---- tests ------------------------------------------------------------------
TESTS := $(patsubst tests/%.c,$(B)/tests/%,$(wildcard tests/test_*.c))

$(B)/tests/%: tests/%.c $(LIB) tests/testutil.h tests/sim_machine.h
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CMOCKA_CFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) $(CMOCKA_LIBS) -o $@

test-unit: $(TESTS)
	@tests/run_unit.sh $(TESTS)

# The numerical tests on every kernel path this CPU can execute
# (tests/kernel_paths.sh): each OpenBLAS core type and libxsmm target, both
# libraries forced, and a build with a user's own CFLAGS in its own folder.
KERNEL_TESTS  := test_hostmm test_step test_train test_data
NATIVE_CFLAGS := -O3 -g -march=native -ffp-contract=fast
# (the paths side by side, one a core: tests/kernel_paths.sh)
test-kernels: $(KERNEL_TESTS:%=$(B)/tests/%) native-kernel-tests
	@tests/kernel_paths.sh --native $(B)/native/tests $(KERNEL_TESTS:%=$(B)/tests/%)
native-kernel-tests:
	@CFLAGS='$(NATIVE_CFLAGS)' $(MAKE) -s --no-print-directory B=$(B)/native CUDA=0 MPI=0 \
	    $(KERNEL_TESTS:%=$(B)/native/tests/%)

test-cli: dpbench
	@tests/cli_test.sh ./dpbench

# statistics, --repeat, dpbench compare, honest sweeps, progress, result files
test-results: dpbench
	@tests/results_test.sh ./dpbench

# labelled datasets end to end: generator, kinds, bad data, Fashion-MNIST
test-data-cli: dpbench
	@tests/data_cli_test.sh ./dpbench

# Sanitizer builds (clang): the unit tests under ASan + UBSan, the threaded
# loader and replica tests under TSan, and a bounded libFuzzer run on the
# config reader. CPU sources only: no GPU runs here.
SAN_CC    := clang
SAN_FLAGS  = -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -pthread $(SRC_INC) \
             $(PC_CFLAGS) $(CMOCKA_CFLAGS)
ASAN      := -fsanitize=address,undefined -fno-sanitize-recover=undefined
TSAN      := -fsanitize=thread
FUZZ_SECONDS ?= 30

# The CPU sources are compiled once per sanitizer and linked into each test.
ASAN_OBJ := $(CPU_SRC:%.c=$(B)/asan-obj/%.o)
TSAN_OBJ := $(CPU_SRC:%.c=$(B)/tsan-obj/%.o)
$(B)/asan-obj/%.o: %.c $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) $(ASAN) -MMD -MP -c $< -o $@

$(B)/tsan-obj/%.o: %.c $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) $(TSAN) -MMD -MP -c $< -o $@

# kept: make would delete them as intermediates of the pattern rules below
# after a fresh build, and the next stage compiled them all again
.SECONDARY: $(ASAN_OBJ) $(TSAN_OBJ)

$(B)/asan/%: tests/%.c $(ASAN_OBJ) tests/testutil.h $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) $(ASAN) $< $(ASAN_OBJ) $(LDLIBS) $(CMOCKA_LIBS) -o $@

$(B)/tsan/%: tests/%.c $(TSAN_OBJ) tests/testutil.h $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) $(TSAN) $< $(TSAN_OBJ) $(LDLIBS) $(CMOCKA_LIBS) -o $@

# config.c reads the plug-in tables (losses, backends, comm engines) for the
# allowed values, so the fuzzer links the CPU sources: the config reader's
# compiled with the fuzzer's coverage (what guides it), the others as
# test-asan's objects (compiling them all again took the build's longest
# single step, about 50 s)
FUZZ_SRC := config.c config_set.c config_yaml.c config_rules.c util.c
FUZZ_OBJ := $(FUZZ_SRC:%.c=$(B)/fuzz-obj/%.o)
$(B)/fuzz-obj/%.o: %.c $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) $(ASAN) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@

$(B)/fuzz_config: tests/fuzz_config.c $(FUZZ_OBJ) $(filter-out $(FUZZ_SRC:%.c=$(B)/asan-obj/%.o),$(ASAN_OBJ)) \
                  $(B)/deps.stamp
	$(SAN_CC) $(SAN_FLAGS) $(ASAN) -fsanitize=fuzzer $< $(filter %.o,$^) $(LDLIBS) -o $@

# test_verdicts is arithmetic over 18,000 simulated runs, its code covered by
# the others: left out of the sanitizer pass (a minute there)
ASAN_TESTS := $(patsubst tests/%.c,$(B)/asan/%,$(filter-out tests/test_verdicts.c,$(wildcard tests/test_*.c)))
test-asan: $(ASAN_TESTS)
	@LABEL=asan ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 tests/run_unit.sh $^

# dpbench itself under ASan + UBSan (the CPU build, with the mpi engine
# where MPI is found), over the CLI, data-CLI and fuzz corpora
# (tests/asan_bin_test.sh)
# (comm.c's table of engines, and main.c, compiled with it)
ASAN_BIN_SRC := src/main.c $(if $(filter 1,$(MPI)),$(call src_path,comm.c comm_mpi.c))
ASAN_BIN_OBJ := $(if $(filter 1,$(MPI)),$(filter-out $(B)/asan-obj/comm.o,$(ASAN_OBJ)),$(ASAN_OBJ))
$(B)/asan/dpbench: $(ASAN_BIN_SRC) $(ASAN_BIN_OBJ) $(B)/deps.stamp
	@mkdir -p $(dir $@)
	$(SAN_CC) $(SAN_FLAGS) $(ASAN) $(if $(filter 1,$(MPI)),-DDPBENCH_HAVE_MPI $(MPI_CFLAGS)) \
	    -DDPBENCH_GIT='"$(GIT)"' $(ASAN_BIN_SRC) $(ASAN_BIN_OBJ) $(LDLIBS) -o $@

test-asan-bin: $(B)/asan/dpbench
	@tests/asan_bin_test.sh $<

TSAN_TESTS := $(B)/tsan/test_loader $(B)/tsan/test_train $(B)/tsan/test_step $(B)/tsan/test_data \
              $(B)/tsan/test_emulated
test-tsan: $(TSAN_TESTS)
	@LABEL=tsan TSAN_OPTIONS="halt_on_error=1" tests/run_unit.sh $^

# dpbench itself under UBSan: size arithmetic over odd shapes, replicas and
# workers must not overflow (an int product would abort the run). The ASan
# build's: its -fsanitize=undefined has every check a UBSan-only build had
# (float-cast-overflow too) and halts on the first report (leaks are
# test-asan-bin's to find).
test-ubsan: $(B)/asan/dpbench
	@ASAN_OPTIONS=detect_leaks=0 tests/ubsan_test.sh $<

test-fuzz: $(B)/fuzz_config
	@mkdir -p $(B)/fuzz-corpus
	@cp configs/*.yaml $(B)/fuzz-corpus/
	@$(B)/fuzz_config -max_total_time=$(FUZZ_SECONDS) -max_len=4096 -timeout=10 \
	    -print_final_stats=1 $(B)/fuzz-corpus >$(B)/fuzz.log 2>&1 \
	    || { tail -60 $(B)/fuzz.log; echo "fuzz: 0 passed, 1 failed"; exit 1; }
	@grep -E "^stat::(number_of_executed_units|new_units_added)" $(B)/fuzz.log
	@echo "fuzz: 1 passed, 0 failed"

test-valgrind: dpbench
	valgrind -q --error-exitcode=1 --suppressions=tests/valgrind-cuda.supp --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect ./dpbench --config configs/tutorial.yaml >/dev/null
	valgrind -q --error-exitcode=1 --suppressions=tests/valgrind-cuda.supp --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect ./dpbench --config configs/tutorial.yaml \
	    --set parallel.replicas=3 --set loader.num_workers=2 --format json >/dev/null
	rm -rf $(B)/valgrind-export
	valgrind -q --error-exitcode=1 --suppressions=tests/valgrind-cuda.supp --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect ./dpbench --config configs/tutorial.yaml \
	    --sweep parallel.replicas=1,3 --export $(B)/valgrind-export 2>/dev/null
	./dpbench --config configs/tutorial.yaml --sweep loader.num_workers=0,1 \
	    --sweep loader.prefetch_factor=2,4 --format json >$(B)/valgrind-sweep.json 2>/dev/null
	valgrind -q --error-exitcode=1 --suppressions=tests/valgrind-cuda.supp --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect ./dpbench compare $(B)/valgrind-sweep.json $(B)/valgrind-sweep.json >/dev/null
	rm -rf $(B)/valgrind-tune
	valgrind -q --error-exitcode=1 --suppressions=tests/valgrind-cuda.supp --leak-check=full --errors-for-leak-kinds=definite,indirect \
	    --show-leak-kinds=definite,indirect ./dpbench --tune -c configs/tutorial.yaml --set dataset.length=300 \
	    --set dataset.sample_cost_us=20 --set tune.budget_s=3 --set tune.max_workers=2 --out $(B)/valgrind-tune \
	    --format json >/dev/null 2>&1
	# a trial that fails (the config diverges: in its first call, then later): exit 1, no leak
	for lr in 5 3; do valgrind -q --error-exitcode=99 --suppressions=tests/valgrind-cuda.supp --leak-check=full \
	    --errors-for-leak-kinds=definite,indirect --show-leak-kinds=definite,indirect ./dpbench --tune \
	    -c configs/tutorial.yaml --set dataset.length=300 --set dataset.sample_cost_us=20 --set tune.budget_s=3 \
	    --set tune.max_workers=2 --set train.lr=$$lr --format json >/dev/null 2>&1; test $$? -eq 1 || exit 1; done
	@echo "valgrind: 7 passed, 0 failed"

# PyTorch side-by-side scripts: skipped when Debian's python3-torch is absent.
test-scripts: dpbench
	@tests/scripts_test.sh ./dpbench

# The docs against the code: docs/configuration.md is what
# scripts/gen-config-doc.sh makes of `dpbench --help-config` (regenerate it
# when a key changes), README.md at most 350 lines, no link to a missing file.
test-docs: dpbench
	@printf 'docs: '; tests/docs_test.sh ./dpbench

# The structure docs/architecture.md states (tests/layers_test.py): no
# #include edge between src/ folders to a higher layer, no cycle, no source
# file over 700 lines, no function over 60. Under a second.
test-layers:
	@$(PYTHON) tests/layers_test.py src docs/architecture.md

# The sample outputs that README.md and docs/ show (tests/samples_test.py,
# docs/testing.md): each block marked <!-- sample: NAME --> is a run of the
# committed bench_results/sample/NAME, and scripts/readme-sample.sh run again
# with this binary gives every sample in the same form (numbers masked), so a
# change of output fails here until the samples are regenerated. Seconds.
test-samples: dpbench
	@$(PYTHON) tests/samples_test.py --bin ./dpbench

# DDP over MPI with mpirun on this machine (skips without mpirun or MPI).
test-ddp: dpbench
	@printf 'ddp: '; tests/ddp_test.sh ./dpbench

# resource limits (ulimit -v/-u/-f, as root and as nobody) and signals while
# results are written: every case under a hard timeout
test-limits: dpbench
	@tests/limits_test.sh ./dpbench

# dpbench --tune end to end on small real pipelines (about a minute)
test-tune: dpbench
	@tests/tune_test.sh ./dpbench

# DDP across two hosts made of network namespaces (root, iproute2, Open MPI;
# skips otherwise); CI runs it after make test.
test-multinode: dpbench
	@printf 'multinode: '; tests/multinode_test.sh ./dpbench

# `make test`: every stage, even after a failure, then one table and the total
# (tests/run_stages.sh). A new stage is one more word here.
TEST_STAGES := test-build test-unit test-kernels test-cli test-results test-data-cli test-docs test-samples test-layers test-asan test-tsan \
               test-ubsan test-fuzz test-asan-bin test-valgrind test-scripts test-tune test-ddp test-limits \
               test-cuda-emulated test-gpu
test:
	@MAKE='$(MAKE)' tests/run_stages.sh $(TEST_STAGES)

# make test's first stage: every binary the stages run, built on every core
# (the stages run one after another, and compiling was half their time)
TEST_BINS += dpbench $(TESTS) $(ASAN_TESTS) $(B)/asan/dpbench $(TSAN_TESTS) \
             $(B)/fuzz_config native-kernel-tests
test-build:
	@$(MAKE) --no-print-directory -j$(shell nproc) $(TEST_BINS)

# The stages that start processes, send signals or wait on time, N runs each
# with every core kept busy (tests/loop_stages.sh): `make test-loop N=20`.
N ?= 20
LOOP_STAGES ?= test-ddp test-cli test-results test-data-cli test-limits $(B)/tests/test_loader test-cuda-emulated test-multinode
test-loop: dpbench $(B)/tests/test_loader
	@MAKE='$(MAKE)' tests/loop_stages.sh $(N) $(LOOP_STAGES)

# The GPU tests on the machine's own GPU (a stage of `make test`); without a
# usable device the binary prints why and the stage counts as skipped.
GPU_TEST := $(B)/tests/gpu_test
ifeq ($(CUDA),1)
TEST_BINS += $(GPU_TEST)
$(GPU_TEST): tests/gpu_test.c tests/testutil.h $(LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CMOCKA_CFLAGS) $(CFLAGS) $(LDFLAGS) $< $(LIB) $(LDLIBS) $(CMOCKA_LIBS) -o $@

test-gpu: $(GPU_TEST)
	@LABEL=gpu tests/run_unit.sh $(GPU_TEST)
else
test-gpu:
	@echo "skipped: no CUDA device (dpbench was built without the CUDA toolkit)"
endif

# The GPU tests against tests/fakecuda.c and its siblings, a host-only
# emulation of the CUDA runtime, driver, cuBLAS and NCCL: checks the cuda
# backend's logic (CPU agreement, splits, virtual replicas, sync/async,
# pinned/pageable, teardown, the classes of misuse fakecuda.h lists), ddp on
# it, and scripts/gpu-bench.sh end to end, where no GPU is. Needs the
# toolkit's headers and nvcc.
EMU := $(B)/emu
# With NCCL: the emulation's NCCL calls run over MPI, and the emulated dpbench
# has its comm engines, so that ddp with comm nccl runs under mpirun here.
FAKE_SRC := tests/fakecuda.c tests/fakecublas.c tests/fakedriver.c
ifeq ($(NCCL),1)
FAKE_SRC      += tests/fakenccl.c
EMU_COMM      := -DDPBENCH_HAVE_MPI -DDPBENCH_HAVE_NCCL $(MPI_CFLAGS) $(NCCL_INC) \
                 $(call src_path,comm_mpi.c comm_nccl.c)
endif
ifneq ($(wildcard $(CUDA_HOME)/include/cublas_v2.h),)
TEST_BINS += $(EMU)/gpu_test $(EMU)/dpbench
$(EMU)/libfakecuda.so: $(FAKE_SRC) tests/fakecuda.h src/backends/cuda_kernels.h src/core/loss_rows.h
	@mkdir -p $(EMU)
	$(CC) -O1 -g -std=c11 -D_GNU_SOURCE -pthread -fPIC -shared -I$(CUDA_HOME)/include $(NCCL_INC) \
	    -Isrc/backends -Isrc/core -Wall -Wextra -Werror -Wno-unused-parameter $(FAKE_SRC) -lm -lrt -o $@

ifeq ($(CUDA),1)
# the build's own gpu_test and dpbench: they open the CUDA libraries at run
# time, where DPBENCH_CUDART and its siblings name the emulation
# (a link keeps its source's time: the emulation is order-only, not a reason to link again)
$(EMU)/gpu_test: $(GPU_TEST) | $(EMU)/libfakecuda.so
	@ln -f $< $@
$(EMU)/dpbench: dpbench | $(EMU)/libfakecuda.so
	@ln -f $< $@
else
$(EMU)/gpu_test: tests/gpu_test.c tests/testutil.h $(EMU)/libfakecuda.so $(call src_path,$(SRC)) \
                 $(call src_path,$(CUDA_SRC)) $(FATBIN) $(B)/deps.stamp
	@mkdir -p $(EMU)
	$(CC) $(SRC_INC) $(PC_CFLAGS) $(CMOCKA_CFLAGS) -I$(CUDA_HOME)/include \
	    -DDPBENCH_HAVE_CUDA -DDPBENCH_GIT='"emulated"' -DDPBENCH_FATBIN='"$(FATBIN)"' \
	    $(filter-out -MMD -MP,$(CFLAGS)) $< $(call src_path,$(CPU_SRC)) $(call src_path,$(CUDA_SRC)) \
	    $(PC_LIBS) -lm -pthread -ldl $(CMOCKA_LIBS) -o $@

# dpbench itself on the emulation: the command line's cuda path
$(EMU)/dpbench: src/main.c $(call src_path,$(CPU_SRC)) $(call src_path,$(CUDA_SRC) comm_mpi.c comm_nccl.c) $(EMU)/gpu_test
	$(CC) $(SRC_INC) $(PC_CFLAGS) $(CMOCKA_CFLAGS) -I$(CUDA_HOME)/include \
	    -DDPBENCH_HAVE_CUDA -DDPBENCH_GIT='"emulated"' -DDPBENCH_FATBIN='"$(FATBIN)"' \
	    $(filter-out -MMD -MP,$(CFLAGS)) src/main.c $(call src_path,$(CPU_SRC)) $(call src_path,$(CUDA_SRC)) $(EMU_COMM) \
	    $(PC_LIBS) -lm -pthread -ldl -o $@
endif

# The five parts run side by side (mostly waits on process start-up; their
# timing checks hold with every core busy), each one's output kept together.
# dpbench opens cudart, cuBLAS, the driver and NCCL on first use; here every
# name points at the emulation (make emu-cli alone too)
EMU_PARTS := emu-bench emu-nccl emu-cli emu-3gpu emu-1gpu
test-cuda-emulated $(EMU_PARTS): export DPBENCH_CUDART = $(abspath $(EMU))/libfakecuda.so
test-cuda-emulated $(EMU_PARTS): export DPBENCH_CUBLAS = $(abspath $(EMU))/libfakecuda.so
test-cuda-emulated $(EMU_PARTS): export DPBENCH_LIBCUDA = $(abspath $(EMU))/libfakecuda.so
test-cuda-emulated $(EMU_PARTS): export DPBENCH_NCCL = $(abspath $(EMU))/libfakecuda.so
test-cuda-emulated: $(EMU)/gpu_test $(EMU)/dpbench
	@$(MAKE) --no-print-directory -k -j3 -Otarget $(EMU_PARTS)
emu-1gpu emu-3gpu: $(EMU)/gpu_test
	@LABEL=cuda-emulated-$(@:emu-%=%) FAKE_ABORT=1 FAKE_CUDA_DEVICES=$(@:emu-%gpu=%) \
	    tests/run_unit.sh $(EMU)/gpu_test
emu-cli: $(EMU)/dpbench
	@printf 'cuda-emulated-cli: '; tests/cuda_cli_test.sh $(EMU)/dpbench
emu-nccl: $(EMU)/dpbench
	@printf 'cuda-emulated-nccl: '; tests/nccl_emulated_test.sh $(EMU)/dpbench
emu-bench: $(EMU)/gpu_test $(EMU)/dpbench
	@printf 'cuda-emulated-bench: '; tests/gpu_bench_test.sh $(EMU)
else
test-cuda-emulated:
	@echo "skipped: no CUDA headers in $(CUDA_HOME)"
endif

# After a change meant to keep behaviour (a move of code between files): this
# tree's dpbench against BASE's (a commit, built in its own worktree) on the
# same seeded commands, timings masked (tests/same_output.py).
BASE ?= HEAD
test-same-output: dpbench
	@rm -rf $(B)/base-src; git worktree prune
	@git worktree add -q --detach $(B)/base-src $(BASE)
	@$(MAKE) -s --no-print-directory -C $(B)/base-src dpbench >/dev/null
	@tests/same_output.py $(B)/base-src/dpbench ./dpbench; rc=$$?; \
	    git worktree remove --force $(B)/base-src; exit $$rc

# make run + make test on a clean Debian 12 root built with debootstrap,
# without and with the host's CUDA toolkit (needs root and the Debian mirror)
test-fresh:
	@scripts/test-fresh.sh

# make run and the unit, kernel, CLI, results and data tests on a clean Debian 12
# arm64 root under qemu-user with binfmt_misc (root, the mirror; tens of minutes
# on 2 cores, so outside make test and CI: docs/testing.md)
test-arm64:
	@scripts/test-fresh.sh --arch arm64

bench: dpbench
	@scripts/install-deps.sh make bench
	scripts/bench.sh

# the real-data benchmarks (generated JPEGs, Fashion-MNIST) into bench_results/data/
bench-data: dpbench
	@scripts/install-deps.sh make bench
	scripts/data-bench.sh

# --tune against the exhaustive sweep over the same ranges, into bench_results/tune/
bench-tune: dpbench
	@scripts/install-deps.sh make bench
	scripts/bench-tune.sh

# the verdicts' error rates measured for real, under busy loops that come
# and go, into bench_results/verdicts/ (15 to 80 minutes)
bench-verdicts: dpbench
	@scripts/install-deps.sh make bench
	scripts/bench-verdicts.sh

# what the rounds cost against a dpbench from before them (OLD=...), into
# bench_results/rounds/; the statistics' time on long runs, into bench_results/stats/
bench-rounds: dpbench
	@scripts/install-deps.sh make bench
	scripts/bench-rounds.sh

bench-stats: dpbench
	@scripts/install-deps.sh make bench
	scripts/bench-stats-scale.sh

clean:
	rm -rf $(B) dpbench

-include $(OBJ:.o=.d) $(B)/main.d $(ASAN_OBJ:.o=.d) $(TSAN_OBJ:.o=.d) $(FUZZ_OBJ:.o=.d)
