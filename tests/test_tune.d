tests/test_tune: tests/test_tune.c tests/testutil.h src/app/app.h \
 src/report/report.h src/report/machine.h src/train/pipeline.h \
 src/core/config.h src/core/util.h src/train/train.h \
 src/backends/backend.h src/data/loader.h src/core/util.h src/core/loss.h \
 src/backends/blas_tune.h src/backends/hostmm.h src/train/floor.h \
 src/data/dataset.h src/core/load.h src/core/stats.h src/core/rounds.h \
 src/train/train.h src/app/sweep.h src/comm/comm.h src/app/devices.h \
 src/backends/hostmm.h tests/sim_machine.h src/core/rng.h src/tune/tune.h \
 src/train/estimate.h
tests/testutil.h:
src/app/app.h:
src/report/report.h:
src/report/machine.h:
src/train/pipeline.h:
src/core/config.h:
src/core/util.h:
src/train/train.h:
src/backends/backend.h:
src/data/loader.h:
src/core/util.h:
src/core/loss.h:
src/backends/blas_tune.h:
src/backends/hostmm.h:
src/train/floor.h:
src/data/dataset.h:
src/core/load.h:
src/core/stats.h:
src/core/rounds.h:
src/train/train.h:
src/app/sweep.h:
src/comm/comm.h:
src/app/devices.h:
src/backends/hostmm.h:
tests/sim_machine.h:
src/core/rng.h:
src/tune/tune.h:
src/train/estimate.h:
