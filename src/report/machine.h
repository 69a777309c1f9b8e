/* What a result says about the machine and the build that measured it, so
 * two results can be told apart and a run reproduced: the CPU as the OS
 * names it, cores and threads, memory, kernel, compiler, BLAS libraries. */
#ifndef DPBENCH_MACHINE_H
#define DPBENCH_MACHINE_H

struct machine {
    char cpu[256];      // model name, as /proc/cpuinfo reports it
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

#endif
