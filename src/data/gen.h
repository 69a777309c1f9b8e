/* dpbench --make-dataset KIND DIR [options]: writes a learnable labelled
 * dataset (folder of JPEG/PNG, cifar10 binary or idx) for tests, benchmarks
 * and users without data at hand. */
#ifndef DPBENCH_GEN_H
#define DPBENCH_GEN_H

#include <stdio.h>

/* argv[0] is "--make-dataset"; returns the exit status (0, 1 or 2). */
int gen_main(int argc, char **argv);
void gen_usage(FILE *f);

#endif
