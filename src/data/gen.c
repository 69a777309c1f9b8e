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
#include <signal.h>
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
#include "staging.h"
#include "util.h"

struct gen_kind;

struct gen {
    const char *kind, *dir;
    const struct gen_kind *gk; // what writes kind
    int classes, per_class, eval_per_class;
    int w, h, quality;
    enum image_format format;
    unsigned long seed;
    int gzip;
};

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
            "jpeg quality 90, seed 0.\n");
}

/* Sample `index` of class `cls` into px (h, w, c). */
static void make_image(const struct gen *g, int cls, uint64_t index, int c, uint8_t *px)
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

static int make_dir(const char *path, struct error *e)
{
    if (mkdir(path, 0777) != 0 && errno != EEXIST)
        return error_set(e, "%s: cannot create folder: %s", path, strerror(errno));
    return 0;
}

/* Sample j of a split: class j % K, so every split and file mixes classes. */
static int write_folder(const struct gen *g, const char *split, int per_class, uint64_t base,
                        struct error *e)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/%s", g->dir, split);
    if (make_dir(dir, e))
        return -1;
    uint8_t *px = malloc((size_t)g->w * g->h * 3);
    if (!px)
        return error_set(e, "out of memory");
    int rc = 0;
    for (int k = 0; k < g->classes && !rc; k++) {
        char cdir[4200];
        snprintf(cdir, sizeof cdir, "%s/class_%02d", dir, k);
        rc = make_dir(cdir, e);
    }
    for (long j = 0; j < (long)per_class * g->classes && !rc; j++) {
        if (stop_requested()) {
            rc = -1;
            break;
        }
        int k = (int)(j % g->classes);
        char path[4400];
        snprintf(path, sizeof path, "%s/class_%02d/%06ld.%s", dir, k, j / g->classes,
                 g->format == IMAGE_PNG ? "png" : "jpg");
        make_image(g, k, base + (uint64_t)j, 3, px);
        rc = image_write(path, g->format, px, g->w, g->h, g->quality, e);
    }
    free(px);
    return rc;
}

/* A write that failed with err; a file past RLIMIT_FSIZE (EFBIG) names it. */
static int write_failed(const char *path, const char *how, int err, struct error *e)
{
    char why[256];
    return error_set(e, "%s: cannot write%s: %s", path, how,
                     rlimits_write_error(err, why, sizeof why));
}

static int write_bytes(FILE *f, const void *p, size_t n, const char *path, struct error *e)
{
    if (fwrite(p, 1, n, f) != n)
        return write_failed(path, "", errno, e);
    return 0;
}

static int close_file(FILE *f, const char *path, int rc, struct error *e)
{
    if (fclose(f) != 0 && !rc)
        return write_failed(path, "", errno, e);
    return rc;
}

/* CIFAR-10 binary: files[i] takes samples j with j % n_files == i. */
static int write_cifar(const struct gen *g, const char *const *names, int n_files,
                       int per_class, uint64_t base, struct error *e)
{
    uint8_t px[3072], rec[3073];
    long total = (long)per_class * g->classes;
    for (int i = 0; i < n_files; i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", g->dir, names[i]);
        FILE *f = fopen(path, "wb");
        if (!f)
            return write_failed(path, "", errno, e);
        int rc = 0;
        for (long j = i; j < total && !rc && !stop_requested(); j += n_files) {
            int k = (int)(j % g->classes);
            make_image(g, k, base + (uint64_t)j, 3, px);
            rec[0] = (uint8_t)k;
            for (int p = 0; p < 1024; p++) // (32, 32, 3) -> planes R, G, B
                for (int ch = 0; ch < 3; ch++)
                    rec[1 + ch * 1024 + p] = px[p * 3 + ch];
            rc = write_bytes(f, rec, sizeof rec, path, e);
        }
        if (close_file(f, path, rc, e))
            return -1;
    }
    return 0;
}

/* A gzip write error with its cause: the system's (a full disk, EFBIG) or zlib's. */
static int gz_failed(gzFile z, const char *path, struct error *e)
{
    int err = errno, zerr;
    const char *msg = gzerror(z, &zerr);
    if (zerr == Z_ERRNO)
        return write_failed(path, " (gzip)", err, e);
    return error_set(e, "%s: cannot write (gzip): %s", path, msg);
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24), p[1] = (uint8_t)(v >> 16), p[2] = (uint8_t)(v >> 8), p[3] = (uint8_t)v;
}

/* One idx pair (images + labels), plain or gzip. */
static int write_idx(const struct gen *g, const char *prefix, int per_class, uint64_t base,
                     struct error *e)
{
    uint32_t n = (uint32_t)per_class * (uint32_t)g->classes;
    size_t img = (size_t)g->w * g->h;
    uint8_t *images = malloc(16 + (size_t)n * img), *labels = malloc(8 + (size_t)n);
    int rc = 0;
    if (!images || !labels) {
        free(images);
        free(labels);
        return error_set(e, "out of memory");
    }
    put_be32(images, 0x803), put_be32(images + 4, n);
    put_be32(images + 8, (uint32_t)g->h), put_be32(images + 12, (uint32_t)g->w);
    put_be32(labels, 0x801), put_be32(labels + 4, n);
    for (uint32_t j = 0; j < n && !stop_requested(); j++) {
        int k = (int)(j % (uint32_t)g->classes);
        labels[8 + j] = (uint8_t)k;
        make_image(g, k, base + j, 1, images + 16 + (size_t)j * img);
    }
    const char *what[2] = {"images-idx3-ubyte", "labels-idx1-ubyte"};
    const uint8_t *data[2] = {images, labels};
    size_t size[2] = {16 + (size_t)n * img, 8 + (size_t)n};
    for (int i = 0; i < 2 && !rc && !stop_requested(); i++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s-%s%s", g->dir, prefix, what[i], g->gzip ? ".gz" : "");
        if (g->gzip) {
            gzFile z = gzopen(path, "wb");
            if (!z)
                rc = write_failed(path, "", errno, e);
            else if (gzwrite(z, data[i], (unsigned)size[i]) != (int)size[i])
                rc = gz_failed(z, path, e);
            errno = 0;
            if (z && gzclose(z) != Z_OK && !rc)
                rc = write_failed(path, " (gzip)", errno ? errno : EIO, e);
        } else {
            FILE *f = fopen(path, "wb");
            if (!f)
                rc = write_failed(path, "", errno, e);
            else
                rc = close_file(f, path, write_bytes(f, data[i], size[i], path, e), e);
        }
    }
    free(images);
    free(labels);
    return rc;
}

/* ---- the kinds --make-dataset writes: shape defaults and checks, then the
 * files (into g->dir, the staging folder) ---------------------------------- */

static int cifar_check(struct gen *g, bool sized, struct error *e)
{
    if ((sized && (g->w != 32 || g->h != 32)) || g->classes != 10)
        return error_set(e, "--make-dataset cifar10: the format is 10 classes of 32x32");
    g->w = g->h = 32;
    return 0;
}

static int idx_check(struct gen *g, bool sized, struct error *e)
{
    if (!sized)
        g->w = g->h = 28;
    if (g->w > 4096 || g->h > 4096)
        return error_set(e, "--make-dataset idx --size: at most 4096x4096 (what dataset.kind "
                            "idx reads), found %dx%d", g->w, g->h);
    return 0;
}

/* New images beside old ones (other classes, counts or format) would make a
 * dataset that is neither. */
static int folder_check(struct gen *g, bool sized, struct error *e)
{
    if (!sized)
        g->w = g->h = 32;
    static const char *const splits[] = {"train", "val"};
    for (int i = 0; i < 2; i++) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s/%s", g->dir, splits[i]);
        DIR *dp = opendir(dir);
        if (!dp)
            continue;
        struct dirent *de;
        while ((de = readdir(dp)) && de->d_name[0] == '.')
            ;
        closedir(dp);
        if (de)
            return error_set(e, "--make-dataset: %s is not empty: remove it or choose another "
                                "DIR (new images would mix with the old)", dir);
    }
    return 0;
}

/* The eval samples follow the training ones (eval_base), so they differ. */
static int folder_write(const struct gen *g, struct error *e)
{
    uint64_t eval_base = (uint64_t)g->per_class * (uint64_t)g->classes;
    int rc = write_folder(g, "train", g->per_class, 0, e);
    if (!rc && g->eval_per_class)
        rc = write_folder(g, "val", g->eval_per_class, eval_base, e);
    return rc;
}

static int cifar_write(const struct gen *g, struct error *e)
{
    uint64_t eval_base = (uint64_t)g->per_class * (uint64_t)g->classes;
    const char *const test[] = {cifar10_test_file};
    int rc = write_cifar(g, cifar10_train_files, CIFAR10_TRAIN_FILES, g->per_class, 0, e);
    if (!rc && g->eval_per_class)
        rc = write_cifar(g, test, 1, g->eval_per_class, eval_base, e);
    return rc;
}

static int idx_write(const struct gen *g, struct error *e)
{
    uint64_t eval_base = (uint64_t)g->per_class * (uint64_t)g->classes;
    int rc = write_idx(g, "train", g->per_class, 0, e);
    if (!rc && g->eval_per_class)
        rc = write_idx(g, "t10k", g->eval_per_class, eval_base, e);
    return rc;
}

/* The dataset kinds --make-dataset writes, named by their struct dataset_kind. */
static const struct gen_kind {
    const struct dataset_kind *kind;
    int (*check)(struct gen *g, bool sized, struct error *e);
    int (*write)(const struct gen *g, struct error *e);
} gen_kinds[] = {
    {&dataset_kind_folder, folder_check, folder_write},
    {&dataset_kind_cifar10, cifar_check, cifar_write},
    {&dataset_kind_idx, idx_check, idx_write},
};

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

static int parse(int argc, char **argv, struct gen *g, struct error *e)
{
    static const struct option longopts[] = {
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
    *g = (struct gen){.classes = 10, .per_class = 100, .eval_per_class = -1, .quality = 90,
                      .format = IMAGE_JPEG};
    bool sized = false;
    int ch, seed = 0;
    optind = 1;
    opterr = 0;
    while ((ch = getopt_long(argc, argv, ":", longopts, NULL)) != -1) {
        int rc = 0;
        switch (ch) {
        case 'k': rc = parse_int("--classes", optarg, 2, 256, &g->classes, e); break;
        case 'n': rc = parse_int("--per-class", optarg, 1, 1000000, &g->per_class, e); break;
        case 'v': rc = parse_int("--eval-per-class", optarg, 0, 1000000, &g->eval_per_class, e); break;
        case 'q': rc = parse_int("--quality", optarg, 1, 100, &g->quality, e); break;
        case 'r': rc = parse_int("--seed", optarg, 0, 2147483647, &seed, e); break;
        case 'z': g->gzip = 1; break;
        case 's':
            if (sscanf(optarg, "%dx%d", &g->w, &g->h) != 2 || g->w < 1 || g->h < 1 ||
                g->w > 8192 || g->h > 8192)
                rc = error_set(e, "--make-dataset --size: expected WxH (e.g. 224x224), found '%s'",
                               optarg);
            sized = true;
            break;
        case 'f':
            if (strcmp(optarg, "jpeg") == 0 || strcmp(optarg, "jpg") == 0)
                g->format = IMAGE_JPEG;
            else if (strcmp(optarg, "png") == 0)
                g->format = IMAGE_PNG;
            else
                rc = error_set(e, "--make-dataset --format: expected jpeg or png, found '%s'", optarg);
            break;
        case ':': return error_set(e, "--make-dataset: %s needs a value", argv[optind - 1]);
        default:
            return error_set(e, "--make-dataset: unknown option '%s'", argv[optind - 1]);
        }
        if (rc)
            return -1;
    }
    if (argc - optind != 2)
        return error_set(e, "--make-dataset: expected KIND DIR (dpbench --make-dataset --help)");
    g->kind = argv[optind];
    g->dir = argv[optind + 1];
    g->seed = (unsigned long)seed;
    if (g->eval_per_class < 0)
        g->eval_per_class = g->per_class / 5 > 0 ? g->per_class / 5 : 1;
    for (size_t i = 0; i < sizeof gen_kinds / sizeof *gen_kinds && !g->gk; i++)
        if (strcmp(g->kind, gen_kinds[i].kind->name) == 0)
            g->gk = &gen_kinds[i];
    if (!g->gk)
        return error_set(e, "--make-dataset: KIND must be folder, cifar10 or idx, found '%s'",
                         g->kind);
    return g->gk->check(g, sized, e);
}

static const char *signal_name(int sig)
{
    return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : sig == SIGHUP ? "SIGHUP" : "a signal";
}

int gen_main(int argc, char **argv)
{
    struct gen g;
    struct error e;
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        gen_usage(stdout);
        return 0;
    }
    if (parse(argc, argv, &g, &e)) {
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return 2;
    }
    /* the files go to a staging folder, moved into DIR when all are written:
     * a signal, a full disk or a file size limit (EFBIG, not SIGXFSZ's kill)
     * leaves nothing behind */
    struct sigaction sa = {.sa_handler = stop_request};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    struct sigaction hup;
    if (sigaction(SIGHUP, NULL, &hup) == 0 && hup.sa_handler != SIG_IGN) // nohup: ignored
        sigaction(SIGHUP, &sa, NULL);
    signal(SIGXFSZ, SIG_IGN);
    struct staging st;
    const char *dir = g.dir;
    if (staging_open(&st, dir, "--make-dataset", &e)) { // DIR unusable: refused, as --export's
        fprintf(stderr, "dpbench: %s\n", e.msg);
        return 2;
    }
    g.dir = st.path;
    int rc = g.gk->write(&g, &e); // into the staging folder
    if (!rc && !stop_requested())
        rc = staging_commit(&st, NULL, &e);
    else
        staging_abort(&st);
    if (stop_requested()) {
        fprintf(stderr, "dpbench: --make-dataset: interrupted by %s; nothing written to %s\n",
                signal_name(train_stop), dir);
        return 128 + train_stop;
    }
    if (rc) {
        fprintf(stderr, "dpbench: --make-dataset: %s (nothing written to %s)\n", e.msg, dir);
        return 1;
    }
    printf("dpbench: wrote a %s dataset to %s: %d classes, %d training and %d eval samples "
           "per class, %dx%d\n", g.kind, dir, g.classes, g.per_class, g.eval_per_class, g.w, g.h);
    return 0;
}
