/* The command line: getopt_long over argv into the options and the config
 * (the file first, then --set, --sweep, --format and --out on top). */
#ifndef DPBENCH_CLI_H
#define DPBENCH_CLI_H

#include "app.h"
#include "config.h"

/* -1 with e set on bad usage, 1 when a help or version text was printed. */
int cli_parse(int argc, char **argv, struct options *opts, struct config *c, struct error *e);
/* "3%" or "0.03" as the share 0.03 (--threshold, --precision, compare's
 * --fail-on); -1 when it is neither, or negative. */
double cli_share(const char *in);

#endif
