/* `dpbench compare A.json B.json [--format text|json]`: B against A, point by
 * point, faster / slower / same from the epoch samples (compare.c). */
#ifndef DPBENCH_COMPARE_H
#define DPBENCH_COMPARE_H

/* argv[0] is "compare"; returns the exit status (0 compared, 2 unusable). */
int compare_main(int argc, char **argv);

#endif
