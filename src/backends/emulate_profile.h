/* A GPU's host-to-device profile: recorded by `dpbench --h2d-bandwidth --out
 * DIR` on a GPU machine, replayed by the emulated device (emulate.profile). */
#ifndef DPBENCH_EMULATE_PROFILE_H
#define DPBENCH_EMULATE_PROFILE_H

#include "config.h"
#include "util.h"

#define H2D_PROFILE_MAX_ROWS 32
#define H2D_PROFILE_FILE "h2d-profile.json"

struct h2d_profile {
    char device[512];  // the backend's device line: names, driver and runtime versions
    int n;             // rows measured
    struct {
        double bytes;         // copy size
        double pinned_gbps;   // cudaMemcpyAsync from page-locked memory, GB/s
        double pageable_gbps; // from malloc'd memory, GB/s
    } rows[H2D_PROFILE_MAX_ROWS];
};

/* Writes p as JSON to DIR/h2d-profile.json (a temp file renamed into place). */
int h2d_profile_write(const struct h2d_profile *p, const char *dir, char *path, size_t n,
                      struct error *e);
/* Reads a profile file into p; names the file and what is wrong on error. */
int h2d_profile_read(const char *path, struct h2d_profile *p, struct error *e);
/* emulate.profile set: its rates (the largest copy size's, the asymptote)
 * become emulate.h2d_gbps and emulate.pageable_gbps unless the config set
 * them itself. */
int emulate_profile_apply(struct config *c, struct error *e);

#endif
