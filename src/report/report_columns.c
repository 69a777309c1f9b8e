/* The table of per-epoch columns (report_columns.h): one entry per figure,
 * with how each renderer names and formats it and how to read it from a
 * run's measured epoch. The renderers in report.c walk this table; the order
 * here is the order of the text table, the CSV and the JSON objects. */
#include "report_columns.h"
#include "report_ddp.h"
#include "report_emulated.h"

#include <math.h>
#include <string.h>

#define EP (&run->epochs[k])

static double epoch(const struct run_result *run, int k) { return (double)EP->epoch; }
static double seconds(const struct run_result *run, int k) { return EP->seconds; }
static double samples_per_s(const struct run_result *run, int k) { return EP->samples_per_s; }
static double loss(const struct run_result *run, int k) { return EP->loss; }
static double wait_s(const struct run_result *run, int k) { return EP->st.wait_s; }
static double copy_s(const struct run_result *run, int k) { return EP->st.copy_s; }
static double compute_s(const struct run_result *run, int k) { return EP->st.compute_s; }
static double copy_bytes(const struct run_result *run, int k) { return EP->st.copy_bytes; }
static double hidden_s(const struct run_result *run, int k) { return EP->st.hidden_s; }
static double host_s(const struct run_result *run, int k) { return EP->st.host_s; }
static double samples(const struct run_result *run, int k) { return (double)EP->st.samples; }
static double accuracy(const struct run_result *run, int k) { return EP->accuracy; }
static double read_bytes(const struct run_result *run, int k) { return EP->read_bytes; }

static double copy_gbps(const struct run_result *run, int k)
{
    return EP->st.copy_s > 0 ? EP->st.copy_bytes / EP->st.copy_s / 1e9 : NAN;
}

/* the share of the copy time hidden behind compute */
static double overlap(const struct run_result *run, int k)
{
    return EP->st.copy_s > 0 ? EP->st.hidden_s / EP->st.copy_s : NAN;
}

static double read_mbps(const struct run_result *run, int k)
{
    return EP->read_bytes / 1e6 / EP->seconds;
}

static double world_size(const struct run_result *run, int k)
{
    (void)k;
    return run->world_size > 0 ? run->world_size : 1;
}

/* ddp with several ranks: the epoch's allreduce, mean over the ranks */
static double allreduce_s(const struct run_result *run, int k)
{
    double s, wait, busbw;
    report_ddp_epoch(run, k, &s, &wait, &busbw);
    return s;
}

static double allreduce_wait_s(const struct run_result *run, int k)
{
    double s, wait, busbw;
    report_ddp_epoch(run, k, &s, &wait, &busbw);
    return wait;
}

static double busbw_gbps(const struct run_result *run, int k)
{
    double s, wait, busbw;
    report_ddp_epoch(run, k, &s, &wait, &busbw);
    return busbw;
}

/* the emulated device's engines (report_emulated.c, docs/emulated.md) */
static bool emulated(const struct run_result *run) { return run->emulated; }
static double engine_compute_s(const struct run_result *run, int k) { return EP->st.engine_compute_s; }
static double p2p_s(const struct run_result *run, int k) { return EP->st.p2p_s; }
static double exposed_copy_s(const struct run_result *run, int k)
{
    return EP->st.copy_s - EP->st.hidden_s;
}
static double load_s(const struct run_result *run, int k) { return EP->st.load_s; }
static double au(const struct run_result *run, int k) { return EP->st.compute_s / EP->seconds; }
static double predicted_s(const struct run_result *run, int k)
{
    return emu_predict_epoch(run, EP->st.load_s, EP->st.host_s);
}

#define MS(header) .text_header = header, .text_unit = "ms", .text_fmt = "%.4f", .text_width = 11

const struct report_column epoch_columns[] = {
    {"measured epoch, from 1", "", epoch, .text_header = "epoch", .text_unit = "",
     .text_fmt = "%.0f", .text_width = 6, .csv_key = "epoch", .csv_fmt = "%.0f", .json_key = "epoch"},
    {"wall time of the epoch", "s", seconds, MS("time"), .csv_key = "seconds", .csv_fmt = "%.6g",
     .json_key = "seconds"},
    {"samples per second", "1/s", samples_per_s, .text_header = "samples/s", .text_unit = "",
     .text_fmt = "%.0f", .text_width = 12, .csv_key = "samples_per_second", .csv_fmt = "%.6g",
     .json_key = "samples_per_second"},
    {"mean training loss", "", loss, .text_header = "loss", .text_unit = "", .text_fmt = "%.6g",
     .text_width = 12, .csv_key = "loss", .csv_fmt = "%.9g", .json_key = "loss"},
    {"waiting for data", "s", wait_s, MS("wait"), .csv_key = "wait_seconds", .csv_fmt = "%.6g",
     .json_key = "wait_seconds"},
    {"host-to-device copies", "s", copy_s, MS("copy"), .csv_key = "copy_seconds",
     .csv_fmt = "%.6g", .json_key = "copy_seconds"},
    {"DataParallel steps", "s", compute_s, MS("compute"), .csv_key = "compute_seconds",
     .csv_fmt = "%.6g", .json_key = "compute_seconds"},
    {"bytes copied host-to-device", "B", copy_bytes, .csv_key = "copy_bytes", .csv_fmt = "%.9g",
     .json_key = "copy_bytes"},
    {"copy bandwidth", "GB/s", copy_gbps, .json_key = "copy_gbps"},
    {"share of the copy time hidden behind compute", "share", overlap, .text_header = "overlap",
     .text_unit = "%", .text_fmt = "%.0f", .text_width = 8, .json_key = "overlap",
     .flags = COL_BLANK_NAN},
    {"copy time hidden behind compute", "s", hidden_s, .csv_key = "hidden_copy_seconds",
     .csv_fmt = "%.6g"},
    {"host time issuing device work", "s", host_s, .csv_key = "host_seconds", .csv_fmt = "%.6g",
     .json_key = "host_seconds", .flags = COL_JSON_ZERO_NULL},
    {"samples trained on", "", samples, .json_key = "samples"},
    {"share of samples predicted right", "share", accuracy, .text_header = "accuracy",
     .text_unit = "%", .text_fmt = "%.2f", .text_width = 8, .text_if = report_labelled,
     .csv_key = "accuracy", .csv_fmt = "%.6g", .json_key = "accuracy", .flags = COL_BLANK_NAN},
    {"bytes read from dataset files", "B", read_bytes, .text_header = "read", .text_unit = "MB",
     .text_fmt = "%.2f", .text_width = 10, .text_if = report_labelled, .csv_key = "read_bytes",
     .csv_fmt = "%.0f", .json_key = "read_bytes"},
    {"dataset file reads", "MB/s", read_mbps, .text_header = "read", .text_unit = "MB/s",
     .text_fmt = "%.1f", .text_width = 9, .text_if = report_labelled, .json_key = "read_mbps",
     .flags = COL_JSON_ZERO_NULL},
    {"processes (ddp ranks)", "", world_size, .csv_key = "world_size", .csv_fmt = "%.0f"},
    {"gradient allreduce, mean over the ranks", "s", allreduce_s,
     .csv_key = "allreduce_seconds", .csv_fmt = "%.6g", .flags = COL_BLANK_NAN},
    {"of the allreduce, waiting for the last rank", "s", allreduce_wait_s,
     .csv_key = "allreduce_wait_seconds", .csv_fmt = "%.6g", .flags = COL_BLANK_NAN},
    {"allreduce bus bandwidth", "GB/s", busbw_gbps, .csv_key = "busbw_gbps", .csv_fmt = "%.6g",
     .flags = COL_BLANK_NAN},
    {"the emulated device", "", NULL, .json_key = "device", .json_string = "emulated",
     .json_if = emulated},
    {"copy engines' busy time", "s", copy_s, .json_key = "h2d_engine_busy_seconds",
     .json_if = emulated},
    {"compute engines' busy time", "s", engine_compute_s,
     .json_key = "compute_engine_busy_seconds", .json_if = emulated},
    {"gradient reduce between devices", "s", p2p_s, .json_key = "p2p_seconds",
     .json_if = emulated},
    {"copy time not hidden behind compute", "s", exposed_copy_s,
     .json_key = "exposed_copy_seconds", .json_if = emulated},
    {"loader time, summed over its threads", "s", load_s, .json_key = "load_seconds",
     .json_if = emulated},
    {"AU: compute time over the epoch", "share", au, .json_key = "au", .json_if = emulated},
    {"the pipeline model's epoch", "s", predicted_s, .json_key = "predicted_seconds",
     .json_if = emulated},
};

const int n_epoch_columns = (int)(sizeof epoch_columns / sizeof *epoch_columns);

double report_column_text_value(const struct report_column *c, double v)
{
    if (c->flags & COL_TEXT_AS_IS)
        return v;
    if (strcmp(c->text_unit, "ms") == 0)
        return 1e3 * v;
    if (strcmp(c->text_unit, "%") == 0)
        return 100 * v;
    if (strcmp(c->text_unit, "MB") == 0)
        return v / 1e6;
    return v;
}

/* ---- per point: the run's summary (report_summarize_run) ---- */

#define SUM (&run->sum)

static double median_s(const struct run_result *run, int k) { (void)k; return SUM->median_s; }
static double min_s(const struct run_result *run, int k) { (void)k; return SUM->min_s; }
static double max_s(const struct run_result *run, int k) { (void)k; return SUM->max_s; }
static double sum_samples_per_s(const struct run_result *run, int k)
{
    (void)k;
    return SUM->samples_per_s;
}
static double wait_share(const struct run_result *run, int k) { (void)k; return SUM->wait_share; }
static double copy_share(const struct run_result *run, int k) { (void)k; return SUM->copy_share; }
static double compute_share(const struct run_result *run, int k)
{
    (void)k;
    return SUM->compute_share;
}
static double sum_overlap(const struct run_result *run, int k) { (void)k; return SUM->overlap; }
static double sum_copy_gbps(const struct run_result *run, int k) { (void)k; return SUM->copy_gbps; }
static double host_us(const struct run_result *run, int k) { (void)k; return SUM->host_us; }
static double host_us_per_replica(const struct run_result *run, int k)
{
    (void)k;
    return SUM->host_us / run->replicas;
}
static double final_loss(const struct run_result *run, int k) { (void)k; return SUM->final_loss; }

/* half the width of the median's 95% interval, ms (over the rounds with rounds) */
static double median_half_ci(const struct run_result *run, int k)
{
    (void)k;
    return 0.5 * (SUM->ci95_ms[1] - SUM->ci95_ms[0]);
}
static double rounds(const struct run_result *run, int k) { (void)k; return run->n_rounds; }
/* other processes' share of the CPUs while the point ran */
static double others_cpu(const struct run_result *run, int k)
{
    (void)k;
    return run->load.seconds > 0 ? run->load.others_cpu : NAN;
}

#define POINT_MS(header, width) \
    .text_header = header, .text_unit = "ms", .text_fmt = "%.4f", .text_width = width

const struct report_column point_columns[] = {
    {"median epoch time", "s", median_s, POINT_MS("median", 10), .json_key = "median_seconds"},
    {"half the median's 95% interval", "ms", median_half_ci, POINT_MS("±", 8),
     .flags = COL_TEXT_AS_IS},
    {"fastest epoch", "s", min_s, POINT_MS("min", 10), .json_key = "min_seconds"},
    {"slowest epoch", "s", max_s, POINT_MS("max", 10), .json_key = "max_seconds"},
    {"samples per second at the median", "1/s", sum_samples_per_s, .text_header = "samples/s",
     .text_unit = "", .text_fmt = "%.0f", .text_width = 12, .json_key = "samples_per_second"},
    {"share of the epochs waiting for data", "share", wait_share, .text_header = "wait",
     .text_unit = "%", .text_fmt = "%.0f", .text_width = 6, .json_key = "wait_share"},
    {"share of the epochs copying", "share", copy_share, .json_key = "copy_share"},
    {"share of the epochs in DataParallel steps", "share", compute_share,
     .json_key = "compute_share"},
    {"share of the copy time hidden behind compute", "share", sum_overlap,
     .text_header = "overlap", .text_unit = "%", .text_fmt = "%.0f", .text_width = 8,
     .json_key = "overlap", .flags = COL_BLANK_NAN},
    {"copy bandwidth", "GB/s", sum_copy_gbps, .json_key = "copy_gbps"},
    {"host time issuing a step's device work", "us", host_us, .json_key = "host_us_per_step"},
    {"the same per replica", "us", host_us_per_replica,
     .json_key = "host_us_per_step_per_replica"},
    {"loss of the last epoch", "", final_loss, .text_header = "loss", .text_unit = "",
     .text_fmt = "%.6g", .text_width = 12, .json_key = "final_loss"},
    {"rounds the point ran", "", rounds, .text_header = "rounds", .text_unit = "",
     .text_fmt = "%.0f", .text_width = 6},
    {"other processes' share of the CPUs meanwhile", "share", others_cpu,
     .text_header = "others", .text_unit = "%", .text_fmt = "%.0f", .text_width = 6,
     .flags = COL_BLANK_NAN},
};

const int n_point_columns = (int)(sizeof point_columns / sizeof *point_columns);
