/* What a result says about the machine and the build that measured it, so
 * two results can be told apart and a run reproduced: the architecture, the
 * CPU, cores and threads, memory, kernel, compiler, BLAS libraries. */
#ifndef DPBENCH_MACHINE_H
#define DPBENCH_MACHINE_H

#include <stddef.h>

struct machine {
    char arch[32];      // uname -m: x86_64, aarch64 (an emulator reports its guest's)
    char cpu[256];      // x86-64: /proc/cpuinfo's model name; arm64: the core MIDR_EL1 names
    double cpu_mhz;     // its clock as the OS last read it, 0 when not reported
    long cores;         // physical cores (distinct core ids), online threads when unknown
    long threads;       // online logical CPUs
    double mem_bytes;   // physical memory
    char kernel[128];   // uname -sr
    char compiler[128]; // the compiler and version dpbench was built with
    char blas[256];     // OpenBLAS's build line (version, core type in use)
    char openblas_core[64]; // the kernel set OpenBLAS picked on this CPU
    char xsmm[64];      // libxsmm's version, "" in a build without it
    char devices[512];  // backend's device line with driver and runtime ("" on cpu)
};

void machine_describe(struct machine *m);

/* The CPU fields (cpu, cpu_mhz, cores) for architecture m->arch, with
 * m->threads already set, from the files under root: "" for this machine's
 * /proc and /sys, which on arm64 also reads MIDR_EL1 itself when sysfs does
 * not have it; a test passes a tree of its own. */
void machine_read_cpu(struct machine *m, const char *root);

/* The arm64 core a MIDR_EL1 value names, with its revision: "ARM
 * Neoverse-N1 r3p1"; implementer and part in hex for a core not in the table. */
void machine_midr_name(unsigned long long midr, char *buf, size_t n);

#endif
