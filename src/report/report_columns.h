/* The report's figures as tables of columns. The text epoch table, the
 * per-epoch CSV and the JSON "epochs" objects all walk epoch_columns[] in its
 * order, each showing the columns it has a key for; the sweep's point table
 * and the JSON "summary" walk point_columns[] the same way. Adding a figure
 * is one entry (and its value function) in report_columns.c. */
#ifndef DPBENCH_REPORT_COLUMNS_H
#define DPBENCH_REPORT_COLUMNS_H

#include <stdbool.h>

#include "train.h"

enum {
    COL_BLANK_NAN = 1,  // a missing value (NAN) is "-" in the text table, empty in the CSV
    COL_JSON_ZERO_NULL = 2, // 0 means nothing was measured: null in the JSON, empty in the CSV
    COL_TEXT_AS_IS = 4,     // the value is in text_unit already: the text table does not scale it
};

struct report_column {
    const char *name; // what it is, in words
    const char *unit; // of value(): "s", "B", "1/s", "B/s", "GB/s", "share" (0..1), "" (a count)
    /* measured epoch k's figure (epoch_columns), or the run's (point_columns: k is -1);
     * NAN: none */
    double (*value)(const struct run_result *run, int k);
    /* text table: header, unit line and width; the unit line also scales the value:
     * "ms" shows seconds * 1e3, "%" a share * 100, "MB" bytes / 1e6, any other as is.
     * text_fmt NULL: not in the text table. */
    const char *text_header, *text_unit, *text_fmt;
    int text_width;
    const char *csv_key, *csv_fmt; // NULL: not in the CSV
    const char *json_key;          // NULL: not in the JSON
    const char *json_string;       // a constant string instead of value() (the "device")
    /* NULL: every run has the column; else only the runs it is true for. The CSV
     * has one header for all its runs: a column there is in every row (flags). */
    bool (*text_if)(const struct run_result *run);
    bool (*json_if)(const struct run_result *run);
    unsigned flags; // COL_*
};

extern const struct report_column epoch_columns[];
extern const int n_epoch_columns;
/* A run's summary: the text point table (after the point's label; the speed-up
 * follows) and the first fields of the JSON "summary". */
extern const struct report_column point_columns[];
extern const int n_point_columns;

/* The value of column c as the text table shows it (c->text_unit's scale). */
double report_column_text_value(const struct report_column *c, double v);

/* Labelled data (not the random dataset): accuracy and file reads (report.c). */
bool report_labelled(const struct run_result *run);

#endif
