/* One training run: the loader feeding a backend's DataParallel steps for
 * warmup + measured epochs, timed per epoch. */
#ifndef DPBENCH_TRAIN_H
#define DPBENCH_TRAIN_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "backend.h"
#include "blas_tune.h"
#include "floor.h"
#include "config.h"
#include "dataset.h"
#include "load.h"
#include "stats.h"

struct epoch_result {
    long epoch;             // 1-based among measured epochs
    double seconds;         // wall time of the epoch, host clock
    double samples_per_s;
    double loss;            // sample-weighted mean of the batch losses
    double accuracy;        // share of samples predicted right, NAN for unlabelled data
    double read_bytes;      // bytes read from dataset files during the epoch
    struct epoch_stats st;  // where the time went
};

/* An emulated run's figures (report_emulated.c), means over measured epochs. */
struct emu_summary {
    bool on;                  // the run was on the emulated device
    double h2d_busy_s;        // copy engines' busy seconds per epoch, summed over devices
    double compute_busy_s;    // compute engines' busy seconds per epoch, summed over devices
    double p2p_s;             // gradient reduce seconds per epoch
    double exposed_copy_s;    // copy seconds per epoch not hidden behind compute
    double load_s;            // loader seconds per epoch (summed over its threads)
    double host_step_s;       // host seconds per step (the real math and the issuing)
    double device_step_s;     // device seconds per step (compute engine of device 0)
    double busy_share[3];     // of the epoch: device idle (input), copy engine, compute engine
    int bound;                // 0 input-, 1 copy-, 2 compute-bound: the largest share
    double predicted_s;       // the pipeline model's epoch, median over epochs
    double deviation;         // median epoch / predicted - 1
    bool flagged;             // |deviation| > EMU_MODEL_TOLERANCE
};

/* One round of a point (app/sweep.c runs the points in interleaved rounds):
 * its epochs' place among the run's and what the round measured. */
struct run_round {
    int round;              // 0-based
    int position;           // the point's place in the round's order (0-based)
    int first_epoch;        // index of its first measured epoch in run->epochs
    int n_epochs;
    double median_s;        // its median epoch, seconds
    struct load load;       // the machine while the point ran (setup, warmup, epochs)
};

/* Figures derived once from the measured epochs, for every renderer. */
struct run_summary {
    double median_s, min_s, max_s; // the headline median epoch (the median of the round
                                   // medians with 2 rounds or more), fastest, slowest
    double ci95_ms[2];             // the headline median's 95% interval, ms: over the rounds'
                                   // medians with rounds, else the epochs' (epoch_ms.ci95)
    bool ci_exact;                 // ci95_ms reaches 95% (6 rounds or epochs at least)
    struct stats epoch_ms;         // statistics of the measured epochs' times, ms
    struct stats round_ms;         // ... of the rounds' median epochs, ms (n 0 or 1: none)
    char warning[320];             // stats_noise_warning's text, "" when the spread is fine
    double samples_per_s;          // at the median epoch time
    double wait_share;             // of the summed epoch time, waiting for data
    double copy_share;             // ... copying (exposed and hidden)
    double compute_share;          // ... in DataParallel steps
    double overlap;                // hidden copy / copy, NAN without copies
    double copy_gbps;              // copy bandwidth, GB/s, NAN without copies
    double host_us;                // host µs per step issuing device work, NAN on the cpu
    double final_loss;             // last measured epoch's loss
    double au;                     // accelerator utilisation: compute time / epoch time
    double speedup;                // the first point's time / this one's: 1 / the paired
                                   // per-round ratio (first run = 1)
    double speedup_ci95[2];        // its 95% interval (NAN with fewer than 6 rounds)
    enum verdict speedup_verdict;  // this point against the first: faster / slower / same /
                                   // undecided, beyond or within the noise threshold
    int speedup_rounds_needed;     // undecided: the rounds a decision would need (-1: none)
    char load_warning[256];        // load_warning's text for the run's load, "" if none
    double floor_ratio;            // median / floor, NAN without report.floor
    /* ddp, several ranks (NAN otherwise) */
    double allreduce_s;            // gradient allreduce seconds per epoch, mean over ranks
    double allreduce_wait_s;       // of those, waiting for the last rank to arrive
    double algbw_gbps, busbw_gbps; // its bandwidth, nccl-tests' definitions
    double straggler;              // slowest / fastest rank's median epoch
    struct emu_summary emu;        // parallel.device emulated
};

/* One rank's figures in a ddp run, gathered on rank 0. */
struct rank_result {
    int rank;
    char host[64];
    struct epoch_result *epochs; // (n_epochs) this rank's measured epochs
};

struct run_result {
    struct config cfg;      // the resolved config of this run
    char label[512];        // "key=value ..." for a sweep point, "" otherwise
    const char *backend;    // backend name
    bool emulated;          // the backend's device times are modelled (emulate.*)
    int replicas;
    bool shared_devices;    // several replicas on one device
    long n_batches;         // batches per epoch
    long *splits;           // (n_batches, replicas) rows per replica, first epoch
    long n_split_batches;   // batches of the first epoch that ran (n_batches unless cut short)
    int world_size;         // ddp ranks; 1 for dp
    struct rank_result *ranks; // (world_size) ddp with several ranks, on rank 0; else NULL
    double allreduce_bytes; // payload of one gradient allreduce (ddp)
    const char *comm;       // ddp's comm engine name
    struct epoch_result *epochs; // (n_epochs) measured epochs
    int n_epochs;
    float *w, *b;           // (out, in), (out) final parameters
    bool interrupted;       // stopped (signal, or a failure mid-run) before all epochs ran
    bool failed;            // stopped by an error mid-run; the epochs before it are kept
    bool together;          // ddp, failed: every rank stopped after the same step (a loss
                            // not finite) and rank 0 holds the job's figures: no rank waits
    const char *loss;       // the loss trained with (mse, cross_entropy)
    struct {
        bool done;          // an eval split was evaluated
        double loss, accuracy;
        long samples;
    } eval;                 // held-out split after the last epoch, final parameters
    char notes[512];        // e.g. knobs that have no effect on this backend
    struct blas_choice blas; // OpenBLAS threads per replica and what was measured (cpu)
    struct run_floor floor; // report.floor: this machine's floor for the run's shapes
    char stopped[256];      // why the run stopped early (a non-finite loss), "" if not
    bool same;              // not run: its effective settings equal run same_as's
    int same_as;            // index into the results' runs when `same`
    struct run_round *rounds; // (n_rounds) the point's rounds; its epochs are all of theirs
    int n_rounds;
    struct load load;       // the machine over all its rounds (seconds 0: not measured)
    struct run_summary sum; // filled by report_summarize
};

struct comm;
/* When set, progress goes to stderr during epochs (progress.c: a live line
 * on a terminal, "progress:" lines otherwise). */
extern bool train_progress;

/* Trains c on d with backend be, then evaluates d->eval if any. cm is a ddp
 * run's communicator (main opens it), NULL for a world of one; a dp run
 * ignores it. Trace lines (report.trace) go to `trace`. On a failure after
 * training started, returns -1 with out->failed set and the measured epochs
 * kept. */
int train_run(const struct config *c, const struct dataset *d, const struct backend *be,
              struct comm *cm, struct run_result *out, FILE *trace, struct error *e);
/* A dp run held open between calls (--tune's trials: each keeps its loader,
 * workers and replicas warm from one round to the next). train_open sets it
 * up (out gets its description and parameters; NULL with e set, out freed).
 * train_more runs n more measured epochs (after the config's warm-up ones,
 * at the first call), added to out: the one train_open had or the run its
 * results moved into. 0, 1 stopped, -1 with e set. Past `cycle` epochs
 * (warm-up included; 0: c's), it starts them over, the initial parameters and
 * epoch 0's order: given its config's own, a run held open never trains
 * longer than that config does (a learning rate that diverges only later
 * fails no trial). train_close finishes it into out (its final parameters)
 * and frees it. */
struct train;
struct train *train_open(const struct config *c, const struct dataset *d,
                         const struct backend *be, long cycle, struct run_result *out,
                         struct error *e);
int train_more(struct train *t, struct run_result *out, long n, struct error *e);
int train_close(struct train *t, struct run_result *out, struct error *e);

void run_result_free(struct run_result *r);
/* The median of n epochs' times (seconds), NAN for none. */
double epochs_median(const struct epoch_result *ep, int n);
/* A run's round r (its k-th point) into the run: more (freed here) becomes
 * the run when it has nothing yet (its parameters, splits and evaluation
 * stand for all, the rounds being the same training again; the label and
 * rounds stay), else adds its epochs; a record of the round, or with r < 0
 * none (epochs that are no round: --tune's profile). 0, -1 with e set. */
int run_result_add_round(struct run_result *run, struct run_result *more, int r, int k,
                         const struct load *load, struct error *e);
/* Round r (its k-th point): the run's epochs from `from` on (none with r < 0:
 * the load only). 0, -1 with e set. */
int run_result_mark_round(struct run_result *run, int from, int r, int k,
                          const struct load *load, struct error *e);

/* The initial Linear parameters for a seed: U(-1/sqrt(in), 1/sqrt(in)), as
 * PyTorch's default init draws them. */
void train_init_params(unsigned long seed, int in, int out, float *w, float *b);

#endif
