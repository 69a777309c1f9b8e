/* The emulated device's part of the report (parallel.device: emulated): AU,
 * each engine's busy time, the exposed copy time, a verdict from the
 * engines' busy time, and the pipeline model's prediction of the epoch next
 * to the measurement (docs/emulated.md derives the model). */
#ifndef DPBENCH_REPORT_EMULATED_H
#define DPBENCH_REPORT_EMULATED_H

#include <stdio.h>

#include "train.h"

#define EMU_MODEL_TOLERANCE 0.15 // a measurement further than this from the model is flagged
#define EMU_RESOLUTION_S 1e-4    // shortest modelled step the sleeps reproduce (docs/emulated.md)

struct cJSON;

/* The model's epoch time for run's config and splits, given the epoch's
 * measured load time (load_s, summed over the threads that filled batches)
 * and host time in steps (host_s). Seconds. */
double emu_predict_epoch(const struct run_result *run, double load_s, double host_s);

/* Fills run->sum.emu (nothing unless the run is emulated). */
void report_emulated_summarize(struct run_result *run);
/* Text: a block of lines for one run, or one line per sweep point. */
void report_emulated_text(FILE *f, const struct run_result *run);
/* JSON: the run's summary into sum (its per-epoch fields are report_columns.c's). */
void report_emulated_json(struct cJSON *sum, const struct run_result *run);
/* " [emulated]" for an emulated run's time lines, else "". */
const char *report_emulated_tag(const struct run_result *run);

#endif
