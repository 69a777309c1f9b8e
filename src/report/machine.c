/* The machine block of a result; see machine.h.
 *
 * The CPU is read per architecture. x86-64's /proc/cpuinfo names the model
 * and counts cores by (physical id, core id). arm64's names no model, clock
 * or core ids: there the core is what MIDR_EL1 says (implementer, part,
 * revision), read from sysfs, else from the register itself (the kernel, and
 * qemu-user, emulate the read where HWCAP_CPUID says so), else from
 * /proc/cpuinfo's CPU implementer/part lines. Under user-mode emulation
 * /proc/cpuinfo is the host's, so an arm64 run never takes an x86 field from
 * it. Cores come from sysfs topology where /proc/cpuinfo has no core ids. */
#include "machine.h"

#include <cblas.h>
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysinfo.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef DPBENCH_HAVE_XSMM
#include <libxsmm_version.h>
#endif

#if defined(__aarch64__)
#include <sys/auxv.h>
#ifndef HWCAP_CPUID
#define HWCAP_CPUID (1UL << 11) // EL0 may read the ID registers (kernel-emulated MRS)
#endif
/* MIDR_EL1 as this thread's core reports it; 0 where EL0 may not read it. */
static unsigned long long midr_mrs(void)
{
    if (!(getauxval(AT_HWCAP) & HWCAP_CPUID))
        return 0;
    unsigned long long v;
    __asm__ volatile("mrs %0, midr_el1" : "=r"(v));
    return v;
}
#else
static unsigned long long midr_mrs(void) { return 0; }
#endif

/* arm64 cores by MIDR implementer and part number (the values Linux's
 * cputype.h and the vendors' manuals give). GH200's Grace and Graviton 4 are
 * Neoverse-V2, Graviton 3 Neoverse-V1, Graviton 2 and Ampere Altra
 * Neoverse-N1. Implementer 0 is reserved for software: QEMU's "max" CPU. */
static const struct {
    unsigned impl, part;
    const char *name;
} arm64_cores[] = {
    {0x41, 0xd03, "ARM Cortex-A53"},      {0x41, 0xd04, "ARM Cortex-A35"},
    {0x41, 0xd05, "ARM Cortex-A55"},      {0x41, 0xd07, "ARM Cortex-A57"},
    {0x41, 0xd08, "ARM Cortex-A72"},      {0x41, 0xd09, "ARM Cortex-A73"},
    {0x41, 0xd0a, "ARM Cortex-A75"},      {0x41, 0xd0b, "ARM Cortex-A76"},
    {0x41, 0xd0c, "ARM Neoverse-N1"},     {0x41, 0xd0d, "ARM Cortex-A77"},
    {0x41, 0xd40, "ARM Neoverse-V1"},     {0x41, 0xd41, "ARM Cortex-A78"},
    {0x41, 0xd44, "ARM Cortex-X1"},       {0x41, 0xd46, "ARM Cortex-A510"},
    {0x41, 0xd47, "ARM Cortex-A710"},     {0x41, 0xd48, "ARM Cortex-X2"},
    {0x41, 0xd49, "ARM Neoverse-N2"},     {0x41, 0xd4a, "ARM Neoverse-E1"},
    {0x41, 0xd4f, "ARM Neoverse-V2"},     {0x41, 0xd80, "ARM Cortex-A520"},
    {0x41, 0xd81, "ARM Cortex-A720"},     {0x41, 0xd82, "ARM Cortex-X4"},
    {0x41, 0xd84, "ARM Neoverse-V3"},     {0x41, 0xd8e, "ARM Neoverse-N3"},
    {0x43, 0x0af, "Cavium ThunderX2"},    {0x48, 0xd01, "HiSilicon TaiShan-v110"},
    {0x4e, 0x004, "NVIDIA Carmel"},       {0xc0, 0xac3, "Ampere-1"},
    {0xc0, 0xac4, "Ampere-1A"},           {0x61, 0x022, "Apple M1 Icestorm"},
    {0x61, 0x023, "Apple M1 Firestorm"},  {0x61, 0x024, "Apple M1 Pro Icestorm"},
    {0x61, 0x025, "Apple M1 Pro Firestorm"}, {0x61, 0x028, "Apple M1 Max Icestorm"},
    {0x61, 0x029, "Apple M1 Max Firestorm"}, {0x61, 0x032, "Apple M2 Blizzard"},
    {0x61, 0x033, "Apple M2 Avalanche"},  {0x00, 0x051, "QEMU max (emulated)"},
};

void machine_midr_name(unsigned long long midr, char *buf, size_t n)
{
    // MIDR_EL1: implementer [31:24], variant [23:20], part [15:4], revision [3:0]
    unsigned impl = (midr >> 24) & 0xff, variant = (midr >> 20) & 0xf;
    unsigned part = (midr >> 4) & 0xfff, rev = midr & 0xf;
    for (size_t i = 0; i < sizeof arm64_cores / sizeof arm64_cores[0]; i++)
        if (arm64_cores[i].impl == impl && arm64_cores[i].part == part) {
            snprintf(buf, n, "%s r%up%u", arm64_cores[i].name, variant, rev);
            return;
        }
    snprintf(buf, n, "arm64 implementer 0x%02x part 0x%03x r%up%u", impl, part, variant, rev);
}

/* root/path opened for reading. */
static FILE *open_under(const char *root, const char *path)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    return fopen(full, "r");
}

/* The first line of root/path, without its newline; false when unreadable. */
static bool read_first_line(const char *root, const char *path, char *buf, size_t n)
{
    FILE *f = open_under(root, path);
    if (!f)
        return false;
    bool ok = fgets(buf, (int)n, f) != NULL;
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok;
}

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

/* What /proc/cpuinfo says of the first CPU and of the cores. */
struct cpuinfo {
    char model[256];         // model name (x86), "" when absent
    double mhz;              // cpu MHz (x86), 0 when absent
    long cores;              // distinct (physical id, core id) pairs, 0 without core ids
    unsigned long long midr; // CPU implementer/variant/part/revision (arm64), 0 when absent
    unsigned midr_seen;      // which of those four the first CPU gave (bit i: fields[i])
};

/* The arm64 MIDR field "CPU <key>" of line into ci->midr, the first CPU's only. */
static void cpuinfo_midr_field(struct cpuinfo *ci, char *line)
{
    static const struct {
        const char *key;
        int shift;
        unsigned mask;
    } fields[] = {{"CPU implementer", 24, 0xff}, {"CPU variant", 20, 0xf}, {"CPU part", 4, 0xfff},
                  {"CPU revision", 0, 0xf}};
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        char *v = cpuinfo_value(line, fields[i].key);
        if (v && !(ci->midr_seen & 1u << i)) {
            ci->midr_seen |= 1u << i;
            ci->midr |= (unsigned long long)(strtoul(v, NULL, 0) & fields[i].mask) << fields[i].shift;
        }
    }
}

/* A core is a distinct (physical id, core id) pair; hyperthreads share one. */
static void read_cpuinfo(const char *root, struct cpuinfo *ci)
{
    memset(ci, 0, sizeof *ci);
    FILE *f = open_under(root, "/proc/cpuinfo");
    if (!f)
        return;
    enum { MAX_CORES = 4096 };
    static long seen[MAX_CORES];
    long phys = 0;
    char line[512], *v;
    while (fgets(line, sizeof line, f)) {
        if ((v = cpuinfo_value(line, "model name")) && !ci->model[0])
            snprintf(ci->model, sizeof ci->model, "%s", v);
        else if ((v = cpuinfo_value(line, "cpu MHz")) && ci->mhz == 0)
            ci->mhz = atof(v);
        else if ((v = cpuinfo_value(line, "physical id")))
            phys = atol(v);
        else if ((v = cpuinfo_value(line, "core id"))) {
            long id = phys * 100000 + atol(v), k = 0;
            while (k < ci->cores && seen[k] != id)
                k++;
            if (k == ci->cores && ci->cores < MAX_CORES)
                seen[ci->cores++] = id;
        } else
            cpuinfo_midr_field(ci, line);
    }
    fclose(f);
}

/* Physical cores from sysfs topology: a CPU counts when it is the first of
 * the CPUs sharing its core (the list is in ascending order); 0 without it. */
static long sysfs_cores(const char *root)
{
    char dir[512], path[600], list[256];
    snprintf(dir, sizeof dir, "%s/sys/devices/system/cpu", root);
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    long cores = 0;
    for (struct dirent *de; (de = readdir(d));) {
        char *end;
        if (strncmp(de->d_name, "cpu", 3) != 0 || de->d_name[3] < '0' || de->d_name[3] > '9')
            continue;
        long id = strtol(de->d_name + 3, &end, 10);
        if (*end)
            continue;
        bool found = false; // core_cpus_list from Linux 5.5, thread_siblings_list before
        for (int k = 0; k < 2 && !found; k++) {
            snprintf(path, sizeof path, "/sys/devices/system/cpu/%s/topology/%s", de->d_name,
                     k == 0 ? "core_cpus_list" : "thread_siblings_list");
            found = read_first_line(root, path, list, sizeof list);
        }
        cores += found && strtol(list, NULL, 10) == id; // an offline CPU has no topology
    }
    closedir(d);
    return cores;
}

/* MIDR_EL1 of cpu0 as sysfs has it ("0x00000000413fd0c1"); 0 without it. */
static unsigned long long sysfs_midr(const char *root)
{
    char v[64];
    if (!read_first_line(root, "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", v, sizeof v))
        return 0;
    return strtoull(v, NULL, 16);
}

void machine_read_cpu(struct machine *m, const char *root)
{
    struct cpuinfo ci;
    read_cpuinfo(root, &ci);
    snprintf(m->cpu, sizeof m->cpu, "unknown cpu");
    m->cpu_mhz = 0;
    m->cores = 0;
    if (strcmp(m->arch, "aarch64") == 0) {
        unsigned long long midr = sysfs_midr(root);
        if (!midr && !root[0])
            midr = midr_mrs();
        if (!midr)
            midr = ci.midr;
        if (midr)
            machine_midr_name(midr, m->cpu, sizeof m->cpu);
    } else {
        if (ci.model[0])
            snprintf(m->cpu, sizeof m->cpu, "%s", ci.model);
        m->cpu_mhz = ci.mhz;
        m->cores = ci.cores;
    }
    char khz[64];
    if (m->cpu_mhz == 0 && read_first_line(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", khz,
                                           sizeof khz))
        m->cpu_mhz = atof(khz) / 1000;
    if (m->cores == 0)
        m->cores = sysfs_cores(root);
    if (m->cores == 0)
        m->cores = m->threads;
}

void machine_describe(struct machine *m)
{
    memset(m, 0, sizeof *m);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(m->arch, sizeof m->arch, "%s", u.machine);
        snprintf(m->kernel, sizeof m->kernel, "%s %s", u.sysname, u.release);
    }
    m->threads = sysconf(_SC_NPROCESSORS_ONLN);
    machine_read_cpu(m, "");
    struct sysinfo si;
    if (sysinfo(&si) == 0)
        m->mem_bytes = (double)si.totalram * si.mem_unit;
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
