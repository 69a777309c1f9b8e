/* The machine block of a result; see machine.h. */
#include "machine.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef DPBENCH_HAVE_XSMM
#include <libxsmm_version.h>
#endif

/* The value of "key : value" when line starts with key, else NULL. */
static char *cpuinfo_value(char *line, const char *key)
{
    if (strncmp(line, key, strlen(key)) != 0)
        return NULL;
    char *v = strchr(line, ':');
    if (!v)
        return NULL;
    v += 1 + (v[1] == ' ');
    v[strcspn(v, "\n")] = '\0';
    return v;
}

/* Model name, clock and physical cores from /proc/cpuinfo: a core is a
 * distinct (physical id, core id) pair; hyperthreads share one. */
static void read_cpuinfo(struct machine *m)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    enum { MAX_CORES = 4096 };
    static long seen[MAX_CORES];
    long n_seen = 0, phys = 0;
    char line[512], *v;
    while (fgets(line, sizeof line, f)) {
        if ((v = cpuinfo_value(line, "model name")) && !strcmp(m->cpu, "unknown cpu"))
            snprintf(m->cpu, sizeof m->cpu, "%s", v);
        else if ((v = cpuinfo_value(line, "cpu MHz")) && m->cpu_mhz == 0)
            m->cpu_mhz = atof(v);
        else if ((v = cpuinfo_value(line, "physical id")))
            phys = atol(v);
        else if ((v = cpuinfo_value(line, "core id"))) {
            long id = phys * 100000 + atol(v), k = 0;
            while (k < n_seen && seen[k] != id)
                k++;
            if (k == n_seen && n_seen < MAX_CORES)
                seen[n_seen++] = id;
        }
    }
    fclose(f);
    if (n_seen > 0)
        m->cores = n_seen;
}

void machine_describe(struct machine *m)
{
    memset(m, 0, sizeof *m);
    snprintf(m->cpu, sizeof m->cpu, "unknown cpu");
    m->threads = sysconf(_SC_NPROCESSORS_ONLN);
    m->cores = m->threads;
    read_cpuinfo(m);
    struct sysinfo si;
    if (sysinfo(&si) == 0)
        m->mem_bytes = (double)si.totalram * si.mem_unit;
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->kernel, sizeof m->kernel, "%s %s", u.sysname, u.release);
#if defined(__clang__)
    snprintf(m->compiler, sizeof m->compiler, "clang %s", __clang_version__);
#elif defined(__GNUC__)
    snprintf(m->compiler, sizeof m->compiler, "gcc %s", __VERSION__);
#else
    snprintf(m->compiler, sizeof m->compiler, "unknown compiler");
#endif
    const char *cfg = openblas_get_config(), *core = openblas_get_corename();
    snprintf(m->blas, sizeof m->blas, "%s", cfg ? cfg : "OpenBLAS");
    m->blas[strcspn(m->blas, "\n")] = '\0';
    snprintf(m->openblas_core, sizeof m->openblas_core, "%s", core ? core : "unknown");
#ifdef DPBENCH_HAVE_XSMM
    snprintf(m->xsmm, sizeof m->xsmm, "%s", LIBXSMM_CONFIG_VERSION);
#endif
}
