/* The dataset generator. Each class has its own pattern (a coloured
 * sinusoidal grating of a class-specific frequency and orientation); each
 * sample is that pattern with a random phase jitter plus Gaussian noise, so
 * a linear classifier can learn the classes but not trivially. Everything is
 * drawn from the seed: the same command writes the same bytes. */
#include "gen.h"

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "dataset_kind.h"
#include "image.h"
#include "rlimits.h"
#include "rng.h"
#include "signals.h"
#include "staging.h"
#include "util.h"

void gen_usage(FILE *f)
{
    fprintf(f,
            "usage: dpbench --make-dataset folder|cifar10|idx DIR [--classes K] [--per-class N]\n"
            "               [--eval-per-class M] [--size WxH] [--format jpeg|png] [--quality Q]\n"
            "               [--gzip] [--seed S]\n"
            "\n"
            "Writes a labelled dataset whose classes are learnable (class patterns + noise):\n"
            "  folder   DIR/train/class_KK/NNNNNN.jpg|png and DIR/val/... (ImageFolder layout)\n"
            "  cifar10  DIR/data_batch_1..5.bin and DIR/test_batch.bin (10 classes, 32x32)\n"
            "  idx      DIR/train-{images-idx3,labels-idx1}-ubyte[.gz] and DIR/t10k-... (gray)\n"
            "Defaults: 10 classes, 100 training and 20 eval samples per class, 32x32 (idx 28x28),\n"
            "jpeg quality 90, seed 0. --format and --quality (jpeg) are folder's, --gzip idx's;\n"
            "an option another kind has no use for, or one given twice, is refused.\n");
}

/* Sample `index` of class `cls` into px (h, w, c). */
void gen_image(const struct gen *g, int cls, uint64_t index, int c, uint8_t *px)
{
    struct rng rc, rs;
    rng_init(&rc, g->seed, RNG_GENERATE, (uint64_t)cls);
    double angle = M_PI * cls / g->classes + 0.3 * rng_uniform(&rc);
    double freq = 1.5 + 2.5 * rng_uniform(&rc);
    double base[3], amp[3];
    for (int k = 0; k < 3; k++) {
        base[k] = 70 + 110 * rng_uniform(&rc);
        amp[k] = 40 + 40 * rng_uniform(&rc);
    }
    rng_init(&rs, g->seed, RNG_GENERATE, (1ULL << 32) + index);
    double phase = 2 * M_PI * rng_uniform(&rs) * 0.15;
    double ca = cos(angle), sa = sin(angle);
    for (int y = 0; y < g->h; y++)
        for (int x = 0; x < g->w; x++) {
            double u = (ca * x / g->w + sa * y / g->h) * freq * 2 * M_PI + phase;
            for (int k = 0; k < c; k++) {
                double v = base[k] + amp[k] * sin(u + k * 0.7) + 30 * rng_normal(&rs);
                px[((size_t)y * g->w + x) * c + k] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : lround(v));
            }
        }
}

int gen_mkdir(const char *path, struct error *e)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return error_set(e, "%s: cannot create folder: %s", path, strerror(errno));
    return 0;
}

uint64_t gen_eval_base(const struct gen *g)
{
    return (uint64_t)g->per_class * (uint64_t)g->classes;
}

int gen_write_failed(const char *path, const char *how, int err, struct error *e)
{
    char why[256];
    return error_set(e, "%s: cannot write%s: %s", path, how,
                     rlimits_write_error(err, why, sizeof why));
}

int gen_write_bytes(FILE *f, const void *p, size_t n, const char *path, struct error *e)
{
    if (fwrite(p, 1, n, f) != n)
        return gen_write_failed(path, "", errno, e);
    return 0;
}

int gen_close_file(FILE *f, const char *path, int rc, struct error *e)
{
    if (fclose(f) != 0 && !rc)
        return gen_write_failed(path, "", errno, e);
    return rc;
}

/* ---- the options ---------------------------------------------------------- */

static int parse_int(const char *opt, const char *v, long lo, long hi, int *out, struct error *e)
{
    char *end;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < lo || x > hi)
        return error_set(e, "--make-dataset %s: expected an integer in [%ld, %ld], found '%s'",
                         opt, lo, hi, v);
    *out = (int)x;
    return 0;
}

static const struct option gen_options[] = {
    {"classes", required_argument, NULL, 'k'},
    {"per-class", required_argument, NULL, 'n'},
    {"eval-per-class", required_argument, NULL, 'v'},
    {"size", required_argument, NULL, 's'},
    {"format", required_argument, NULL, 'f'},
    {"quality", required_argument, NULL, 'q'},
    {"seed", required_argument, NULL, 'r'},
    {"gzip", no_argument, NULL, 'z'},
    {0},
};

/* One option ch with its value v into g (the seed into *seed). */
static int parse_option(int ch, const char *v, struct gen *g, bool *sized, int *seed,
                        struct error *e)
{
    switch (ch) {
    case 'k': return parse_int("--classes", v, 2, 256, &g->classes, e);
    case 'n': return parse_int("--per-class", v, 1, 1000000, &g->per_class, e);
    case 'v': return parse_int("--eval-per-class", v, 0, 1000000, &g->eval_per_class, e);
    case 'q': return parse_int("--quality", v, 1, 100, &g->quality, e);
    case 'r': return parse_int("--seed", v, 0, 2147483647, seed, e);
    case 'z': g->gzip = true; return 0;
    case 's': {
        int end = 0; // where WxH stopped: nothing may follow it
        *sized = true;
        if (sscanf(v, "%dx%d%n", &g->w, &g->h, &end) != 2 || v[end] || g->w < 1 || g->h < 1 ||
            g->w > 8192 || g->h > 8192)
            return error_set(e, "--make-dataset --size: expected WxH, each from 1 to 8192 (e.g. "
                                "224x224), found '%s'", v);
        return 0;
    }
    case 'f':
        if (strcmp(v, "jpeg") == 0 || strcmp(v, "jpg") == 0)
            g->format = IMAGE_JPEG;
        else if (strcmp(v, "png") == 0)
            g->format = IMAGE_PNG;
        else
            return error_set(e, "--make-dataset --format: expected jpeg or png, found '%s'", v);
        return 0;
    }
    return -1;
}

/* argv: "--make-dataset" (or any argv[0]), then options, KIND and DIR in any
 * order (getopt's permutation); with dir given: KIND alone (dataset.make),
 * written into dir. */
static int parse(int argc, char **argv, const char *dir, struct gen *g, struct error *e)
{
    *g = (struct gen){.classes = 10, .per_class = 100, .eval_per_class = -1, .quality = 0,
                      .format = IMAGE_JPEG};
    bool sized = false;
    int ch, li = 0, seed = 0;
    unsigned given = 0; // 1 << each option's index in gen_options
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":", gen_options, &li)) != -1) {
        if (ch == ':')
            return error_set(e, "--make-dataset: %s needs a value", argv[optind - 1]);
        if (ch == '?')
            return error_set(e, "--make-dataset: unknown option '%s'",
                             getopt_refused(argv, (char[3]){0}));
        if (given >> li & 1)
            return error_set(e, "--make-dataset: --%s given twice", gen_options[li].name);
        given |= 1u << li;
        if (parse_option(ch, optarg, g, &sized, &seed, e))
            return -1;
    }
    if (argc - optind != (dir ? 1 : 2))
        return error_set(e, dir ? "expected KIND and --make-dataset's options, e.g. \"folder "
                                  "--per-class 100\""
                                : "--make-dataset: expected KIND DIR (dpbench --make-dataset "
                                  "--help)");
    const char *name = argv[optind];
    g->dir = dir ? dir : argv[optind + 1];
    g->seed = (unsigned long)seed;
    if (g->eval_per_class < 0)
        g->eval_per_class = g->per_class / 5 > 0 ? g->per_class / 5 : 1;
    g->kind = dataset_kind_find(name);
    if (!g->kind || !g->kind->make)
        return error_set(e, "--make-dataset: KIND must be folder, cifar10 or idx, found '%s'", name);
    for (int i = 0; gen_options[i].name && g->kind->make->unused; i++) {
        char word[32];
        snprintf(word, sizeof word, " %s ", gen_options[i].name);
        if (given >> i & 1 && strstr(g->kind->make->unused, word))
            return error_set(e, "--make-dataset %s: --%s does not apply to it", name,
                             gen_options[i].name);
    }
    return g->kind->make->check(g, sized, e);
}

/* ---- writing -------------------------------------------------------------- */

/* The files go to a staging folder, moved into dir when all are written: a
 * signal, a full disk or a file size limit (EFBIG; SIGXFSZ is ignored by
 * signals_init) leaves nothing behind. Returns 0, 2 (dir unusable) or 1,
 * with e. */
static int write_staged(struct gen *g, const char *dir, struct error *e)
{
    struct staging st;
    if (staging_open(&st, dir, "--make-dataset", e)) // refused, as --export's
        return 2;
    g->dir = st.path;
    const char *was = signals_phase("writing the dataset");
    int rc = g->kind->make->write(g, e);
    signals_phase(was);
    if (stop_requested())
        signals_settle(); // seen: the staging folder goes, nothing else is written
    if (!rc && !stop_requested())
        rc = staging_commit(&st, NULL, e);
    else
        staging_abort(&st);
    g->dir = dir;
    if (stop_requested())
        return error_set(e, "interrupted by %s; nothing written to %s", signals_name(train_stop),
                         dir), 1;
    return rc ? 1 : 0;
}

int gen_main(int argc, char **argv)
{
    struct gen g;
    struct error e;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        gen_usage(stdout);
        return 0;
    }
    if (parse(argc, argv, NULL, &g, &e)) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return 2;
    }
    signals_init();
    const char *dir = g.dir;
    int rc = write_staged(&g, dir, &e);
    if (stop_requested()) {
        fprintf(stderr, "dpbench: --make-dataset: %s\n", e.msg);
        return 128 + train_stop;
    }
    if (rc == 2)
        fprintf(stderr, "dpbench: %s\n", e.msg);
    else if (rc)
        fprintf(stderr, "dpbench: --make-dataset: %s (nothing written to %s)\n", e.msg, dir);
    if (rc)
        return rc;
    printf("dpbench: wrote %s %s dataset to %s: %d classes, %d training and %d eval samples "
           "per class, %dx%d\n", strchr("aeiou", g.kind->name[0]) ? "an" : "a", g.kind->name,
           dir, g.classes, g.per_class, g.eval_per_class, g.w, g.h);
    return 0;
}

/* ---- dataset.make ------------------------------------------------------------ */

enum { SPEC_MAX_WORDS = 32 };

/* spec's words into argv (after a first "dataset.make"), in buf. */
static int split_spec(const char *spec, char *buf, size_t n, char **argv, int *argc,
                      struct error *e)
{
    if (snprintf(buf, n, "%s", spec) >= (int)n)
        return error_set(e, "longer than %zu characters", n - 1);
    *argc = 0;
    argv[(*argc)++] = "dataset.make";
    for (char *save = NULL, *w = strtok_r(buf, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
        if (*argc == SPEC_MAX_WORDS)
            return error_set(e, "more than %d words", SPEC_MAX_WORDS - 1);
        argv[(*argc)++] = w;
    }
    argv[*argc] = NULL;
    return 0;
}

static int parse_spec(const char *spec, const char *dir, struct gen *g, struct error *e)
{
    char buf[1024], *argv[SPEC_MAX_WORDS + 1];
    int argc;
    if (split_spec(spec, buf, sizeof buf, argv, &argc, e) || parse(argc, argv, dir, g, e))
        return -1;
    return 0;
}

int gen_spec_check(const char *spec, const struct dataset_kind **kind, char *name, size_t n,
                   struct error *e)
{
    struct gen g;
    if (parse_spec(spec, "", &g, e)) // "": the kind's checks of an existing dir pass
        return -1;
    *kind = g.kind;
    snprintf(name, n, "%s%s", g.kind->make->train_name, g.gzip ? ".gz" : "");
    return 0;
}

int gen_make(const char *spec, const char *dir, struct error *e)
{
    struct gen g;
    if (parse_spec(spec, dir, &g, e)) {
        error_wrap(e, "dataset.make");
        return -1;
    }
    return write_staged(&g, dir, e) ? -1 : 0;
}
