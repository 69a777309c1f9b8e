/* --make-dataset KIND DIR [...]: writes a learnable labelled dataset
 * (src/data/gen.c and each kind's writer). */
#include "app.h"
#include "gen.h"

const struct mode mode_make_dataset = {.name = "make-dataset", .command = "--make-dataset",
                                       .command_main = gen_main};
