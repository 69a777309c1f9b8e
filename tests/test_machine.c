/* The machine block's CPU fields (src/report/machine.c) read from small
 * /proc and /sys trees written here: x86-64's cpuinfo, arm64's MIDR from
 * sysfs or from cpuinfo's CPU lines, and an arm64 run under user-mode
 * emulation, where /proc/cpuinfo is the x86 host's. */
#include "testutil.h"

#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "machine.h"

/* x86 cpuinfo of one package with two cores of two threads each */
static const char X86_CPUINFO[] =
    "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz\ncpu MHz\t\t: 2000.000\n"
    "physical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Gold 6338 CPU "
    "@ 2.00GHz\ncpu MHz\t\t: 2000.000\nphysical id\t: 0\ncore id\t\t: 1\n\nprocessor\t: 2\n"
    "physical id\t: 0\ncore id\t\t: 0\n\nprocessor\t: 3\nphysical id\t: 0\ncore id\t\t: 1\n";

/* arm64 cpuinfo (a Neoverse-N1 r3p1, as on Graviton 2) for two CPUs */
static const char ARM64_CPUINFO[] =
    "processor\t: 0\nBogoMIPS\t: 243.75\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 cpuid\n"
    "CPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x3\nCPU part\t: 0xd0c\n"
    "CPU revision\t: 1\n\nprocessor\t: 1\nCPU implementer\t: 0x41\nCPU architecture: 8\n"
    "CPU variant\t: 0x0\nCPU part\t: 0xd03\nCPU revision\t: 4\n";

/* root/path with text, creating the folders on the way */
static void put(const char *root, const char *path, const char *text)
{
    char full[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    for (char *p = full + strlen(root) + 1; (p = strchr(p, '/')); p++) {
        *p = '\0';
        mkdir(full, 0755);
        *p = '/';
    }
    FILE *f = fopen(full, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* a machine of arch with threads CPUs, its CPU fields read from root */
static struct machine read_at(const char *root, const char *arch, long threads)
{
    struct machine m;
    memset(&m, 0, sizeof m);
    snprintf(m.arch, sizeof m.arch, "%s", arch);
    m.threads = threads;
    machine_read_cpu(&m, root);
    return m;
}

static int tree_setup(void **state)
{
    static char root[64];
    snprintf(root, sizeof root, "/tmp/dpbench-machine-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    *state = root;
    return 0;
}

static int tree_teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", (char *)*state);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_midr_names(void **state)
{
    (void)state;
    char buf[128];
    machine_midr_name(0x413fd0c1, buf, sizeof buf); // Graviton 2, Ampere Altra
    assert_string_equal(buf, "ARM Neoverse-N1 r3p1");
    machine_midr_name(0x410fd4f0, buf, sizeof buf); // Grace (GH200), Graviton 4
    assert_string_equal(buf, "ARM Neoverse-V2 r0p0");
    machine_midr_name(0x611f0221, buf, sizeof buf);
    assert_string_equal(buf, "Apple M1 Icestorm r1p1");
    machine_midr_name(0x000f0510, buf, sizeof buf);
    assert_string_equal(buf, "QEMU max (emulated) r0p0");
    machine_midr_name(0x412fdff2, buf, sizeof buf); // a part not in the table
    assert_string_equal(buf, "arm64 implementer 0x41 part 0xdff r2p2");
}

/* x86-64: model name, clock, and cores as distinct (physical id, core id) */
static void test_x86_cpuinfo(void **state)
{
    const char *root = *state;
    put(root, "/proc/cpuinfo", X86_CPUINFO);
    struct machine m = read_at(root, "x86_64", 4);
    assert_string_equal(m.cpu, "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
    assert_float_equal(m.cpu_mhz, 2000, 0);
    assert_int_equal(m.cores, 2);
}

/* arm64 with sysfs: the core from midr_el1, cores from topology (cpu0 and
 * cpu1 share a core: 3 cores of 4 CPUs), the clock from cpufreq */
static void test_arm64_sysfs(void **state)
{
    const char *root = *state;
    put(root, "/proc/cpuinfo", ARM64_CPUINFO);
    put(root, "/sys/devices/system/cpu/cpu0/regs/identification/midr_el1", "0x00000000410fd4f0\n");
    put(root, "/sys/devices/system/cpu/cpu0/topology/core_cpus_list", "0-1\n");
    put(root, "/sys/devices/system/cpu/cpu1/topology/core_cpus_list", "0-1\n");
    put(root, "/sys/devices/system/cpu/cpu2/topology/thread_siblings_list", "2\n"); // before Linux 5.5
    put(root, "/sys/devices/system/cpu/cpu3/topology/core_cpus_list", "3\n");
    put(root, "/sys/devices/system/cpu/cpu0/cpufreq/scaling_cur_freq", "3400000\n");
    struct machine m = read_at(root, "aarch64", 4);
    assert_string_equal(m.cpu, "ARM Neoverse-V2 r0p0");
    assert_int_equal(m.cores, 3);
    assert_float_equal(m.cpu_mhz, 3400, 0);
}

/* arm64 without sysfs: the first CPU's MIDR fields from /proc/cpuinfo */
static void test_arm64_cpuinfo(void **state)
{
    const char *root = *state;
    put(root, "/proc/cpuinfo", ARM64_CPUINFO);
    struct machine m = read_at(root, "aarch64", 2);
    assert_string_equal(m.cpu, "ARM Neoverse-N1 r3p1");
    assert_int_equal(m.cores, 2); // no core ids: the online threads
    assert_float_equal(m.cpu_mhz, 0, 0);
}

/* arm64 under qemu-user: /proc/cpuinfo is the x86 host's; none of it is the
 * arm64 machine's CPU, clock or cores */
static void test_arm64_emulated(void **state)
{
    const char *root = *state;
    put(root, "/proc/cpuinfo", X86_CPUINFO);
    struct machine m = read_at(root, "aarch64", 4);
    assert_string_equal(m.cpu, "unknown cpu");
    assert_float_equal(m.cpu_mhz, 0, 0);
    assert_int_equal(m.cores, 4);
}

/* this machine: arch is uname -m; on arm64 the core is read from MIDR_EL1
 * (sysfs or the register), never "unknown cpu" nor the host's x86 name */
static void test_this_machine(void **state)
{
    (void)state;
    struct machine m;
    struct utsname u;
    machine_describe(&m);
    assert_int_equal(uname(&u), 0);
    assert_string_equal(m.arch, u.machine);
    assert_true(m.cores >= 1 && m.cores <= m.threads);
    if (strcmp(m.arch, "aarch64") == 0) {
        assert_string_not_equal(m.cpu, "unknown cpu");
        assert_null(strstr(m.cpu, "Intel"));
        assert_null(strstr(m.cpu, "AMD"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_midr_names),
        cmocka_unit_test_setup_teardown(test_x86_cpuinfo, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(test_arm64_sysfs, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(test_arm64_cpuinfo, tree_setup, tree_teardown),
        cmocka_unit_test_setup_teardown(test_arm64_emulated, tree_setup, tree_teardown),
        cmocka_unit_test(test_this_machine),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
