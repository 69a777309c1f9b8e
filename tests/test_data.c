/* Labelled data: the transforms (torchvision's meaning, seeded per sample),
 * cross-entropy against hand and numeric values, the same batches whatever
 * the workers, N replicas = 1 with cross-entropy, and the generated files
 * read back through every kind. */
#include "testutil.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include <string.h>
#include <zlib.h>

#include "gen.h"
#include "image.h"
#include "loader.h"
#include "loss.h"
#include "transform.h"

static char root[64]; // generated datasets, made once

static int make_data(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/dpbench-test-data-XXXXXX");
    if (!mkdtemp(root))
        return -1;
    char dir[128];
    const char *kinds[] = {"cifar10", "idx", "folder"};
    for (int i = 0; i < 3; i++) {
        snprintf(dir, sizeof dir, "%s/%s", root, kinds[i]);
        char *argv[] = {"--make-dataset", (char *)kinds[i], dir, "--per-class", "12",
                        "--eval-per-class", "2", NULL};
        if (!freopen("/dev/null", "w", stdout) || gen_main(7, argv) != 0)
            return -1;
    }
    return 0;
}

static int remove_data(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_transform_shapes_and_values(void **state)
{
    (void)state;
    struct config c;
    struct transform t;
    struct error e;
    int oh, ow;
    /* resize: shorter side to 8, centre crop 8x8; a constant image stays constant */
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.resize=8", NULL);
    assert_int_equal(transform_init(&t, &c, 3, true, &e), 0);
    assert_int_equal(transform_shape(&t, 30, 50, &oh, &ow, &e), 0);
    assert_int_equal(oh, 8);
    assert_int_equal(ow, 8);
    uint8_t img[30 * 50 * 3];
    memset(img, 51, sizeof img);
    float out[3 * 8 * 8];
    assert_int_equal(transform_apply(&t, img, 30, 50, 0, 0, out, &e), 0);
    for (int i = 0; i < 3 * 8 * 8; i++) // 51/255 as v * scale + shift: a few u of 0.2
        assert_float_equal(out[i], 0.2f, 1e-6);
    /* a horizontal ramp keeps its order and its centre through the resize */
    for (int y = 0; y < 30; y++)
        for (int x = 0; x < 50; x++)
            for (int k = 0; k < 3; k++)
                img[(y * 50 + x) * 3 + k] = (uint8_t)(x * 5);
    assert_int_equal(transform_apply(&t, img, 30, 50, 0, 0, out, &e), 0);
    for (int x = 1; x < 8; x++)
        assert_true(out[x] > out[x - 1]);
    /* 50x30 -> 13x8, crop columns from round(2.5) = 2 (halves to even, as
     * Python rounds): output x samples source x = (2 + x + 0.5) * 50/13 - 0.5 */
    for (int x = 1; x < 7; x++) // away from the edges, the ramp is reproduced
        assert_float_equal(out[x], ((2 + x + 0.5) * 50.0 / 13 - 0.5) * 5 / 255, 0.01);

    /* crop 4 with pad 2 of a 4x4 image: offsets in [0, 4]; padding reads 0,
     * normalised by mean/std */
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.crop=4",
                "transform.pad=2", "transform.mean=0.5", "transform.std=0.25", NULL);
    assert_int_equal(transform_init(&t, &c, 1, true, &e), 0);
    assert_int_equal(transform_shape(&t, 4, 4, &oh, &ow, &e), 0);
    uint8_t one[16];
    memset(one, 255, sizeof one);
    float o[16];
    bool saw_pad = false, saw_full = false;
    for (long i = 0; i < 200; i++) {
        assert_int_equal(transform_apply(&t, one, 4, 4, 0, i, o, &e), 0);
        int pads = 0;
        for (int k = 0; k < 16; k++) {
            /* (1 - .5)/.25 or (0 - .5)/.25, as v * scale + shift with a rounded
             * scale (1/63.75) and FMA or not: within 4 u of terms up to 4 */
            assert_true(fabs(fabs(o[k]) - 2.0) <= 16 * 0x1p-24);
            pads += o[k] < 0;
        }
        saw_pad |= pads > 0;
        saw_full |= pads == 0;
    }
    assert_true(saw_pad && saw_full);
    /* a crop larger than the padded image is refused */
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.crop=9", NULL);
    assert_int_equal(transform_init(&t, &c, 1, true, &e), 0);
    assert_int_equal(transform_shape(&t, 8, 8, &oh, &ow, &e), -1);
    assert_non_null(strstr(e.msg, "transform.crop"));
    /* mean/std of the wrong length */
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.mean=[0.1,0.2]",
                "transform.std=[1,1]", NULL);
    assert_int_equal(transform_init(&t, &c, 3, true, &e), -1);
}

static void test_flip_is_seeded_per_sample(void **state)
{
    (void)state;
    struct config c;
    struct transform t;
    struct error e;
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.hflip=true", NULL);
    assert_int_equal(transform_init(&t, &c, 1, true, &e), 0);
    uint8_t row[4] = {0, 85, 170, 255};
    float a[4], b[4];
    int flips = 0;
    for (long i = 0; i < 400; i++) {
        assert_int_equal(transform_apply(&t, row, 1, 4, 3, i, a, &e), 0);
        assert_int_equal(transform_apply(&t, row, 1, 4, 3, i, b, &e), 0);
        assert_memory_equal(a, b, sizeof a); // the same (seed, epoch, index): the same choice
        flips += a[0] > a[3];
    }
    assert_in_range(flips, 140, 260); // p = 0.5
    /* evaluation transforms never flip */
    assert_int_equal(transform_init(&t, &c, 1, false, &e), 0);
    for (long i = 0; i < 50; i++) {
        assert_int_equal(transform_apply(&t, row, 1, 4, 3, i, a, &e), 0);
        assert_true(a[0] < a[3]);
    }
}

static void test_cross_entropy(void **state)
{
    (void)state;
    /* two rows, three classes: loss = mean of -log softmax at the label */
    float out[6] = {1, 2, 3, 0, 0, 0}, y[6] = {0, 0, 1, 1, 0, 0}, g[6];
    long correct = 0;
    const struct loss_fn *ce = &loss_cross_entropy;
    double loss = ce->sample_sum(ce->host(out, y, 2, 3, g), 3) / 2;
    for (int i = 0; i < 6; i++)
        g[i] *= ce->grad_scale(2, 3); // the gradient of the mean loss
    correct = loss_correct(out, y, 2, 3);
    double l0 = -log(exp(3.0) / (exp(1.0) + exp(2.0) + exp(3.0))), l1 = log(3.0);
    assert_float_equal(loss, 0.5 * (l0 + l1), 1e-6); // float log-sum-exp: ~10 u of ~1
    assert_int_equal(correct, 2); // row 1 is a tie: the first class wins, its label
    /* the gradient against central differences */
    for (int i = 0; i < 6; i++) {
        float save = out[i], tmp[6];
        out[i] = save + 1e-3f;
        double up = ce->host(out, y, 2, 3, tmp) / 2;
        out[i] = save - 1e-3f;
        double down = ce->host(out, y, 2, 3, tmp) / 2;
        out[i] = save;
        /* central difference: truncation h^2 |f'''| / 6 ~ 2e-7, the float loss's
         * rounding (~u of ~1) / h ~ 6e-5; 1e-3 still fails a wrong sign or scale */
        assert_float_equal(g[i], (up - down) / 2e-3, 1e-3);
    }
    /* large logits stay finite (log-sum-exp) */
    float big[3] = {1000, 0, -1000}, yb[3] = {0, 0, 1}, gb[3];
    double lb = ce->host(big, yb, 1, 3, gb);
    assert_float_equal(lb, 2000, 1e-3); // u of 2000 is 1.2e-4
}

/* All batches' x of `epochs` epochs of c, concatenated. */
static float *all_batches(const struct config *c, const struct dataset *d, long epochs, size_t *n)
{
    struct loader_options o = {
        .batch_size = c->loader.batch_size, .shuffle = true,
        .num_workers = (int)c->loader.num_workers,
        .prefetch_factor = (int)c->loader.prefetch_factor,
        .persistent_workers = c->loader.persistent_workers, .seed = (unsigned long)c->seed,
        .mem = {backend_cpu.host_alloc, backend_cpu.host_free},
    };
    struct loader l;
    struct error e;
    assert_int_equal(loader_init(&l, d, &o, &e), 0);
    size_t per = (size_t)d->length * (size_t)(d->features + d->out_features);
    float *all = malloc(per * (size_t)epochs * sizeof(float)), *p = all;
    for (long ep = 0; ep < epochs; ep++) {
        assert_int_equal(loader_epoch_begin(&l, ep, &e), 0);
        struct batch *b;
        int got;
        while ((got = loader_next(&l, &b, &e)) == 1) {
            size_t k = (size_t)b->rows * (size_t)(d->features + d->out_features);
            memcpy(p, b->x, k * sizeof(float));
            p += k;
            loader_release(&l, b);
        }
        assert_int_equal(got, 0);
        loader_epoch_end(&l);
    }
    loader_free(&l);
    *n = (size_t)(p - all);
    return all;
}

static void test_batches_identical_across_workers(void **state)
{
    (void)state;
    char path[128], folder[128];
    snprintf(path, sizeof path, "dataset.path=%s/cifar10", root);
    snprintf(folder, sizeof folder, "dataset.path=%s/folder/train", root);
    const char *kinds[][2] = {{"dataset.kind=cifar10", path}, {"dataset.kind=folder", folder}};
    for (int k = 0; k < 2; k++) {
        struct config c;
        struct dataset d;
        struct error e;
        test_config(&c, kinds[k][0], kinds[k][1], "transform.crop=32", "transform.pad=4",
                    "transform.hflip=true", "transform.mean=[0.5,0.4,0.3]",
                    "transform.std=[0.2,0.2,0.2]", "loader.batch_size=7", "seed=5", NULL);
        if (dataset_init(&d, &c, &e))
            fail_msg("%s", e.msg);
        size_t n0, n;
        float *ref = all_batches(&c, &d, 2, &n0);
        const char *variants[][3] = {{"loader.num_workers=1", "loader.prefetch_factor=1", "loader.persistent_workers=false"},
                                     {"loader.num_workers=3", "loader.prefetch_factor=4", "loader.persistent_workers=true"},
                                     {"loader.num_workers=2", "loader.prefetch_factor=2", "loader.persistent_workers=false"}};
        for (int v = 0; v < 3; v++) {
            struct config cv;
            test_config(&cv, kinds[k][0], kinds[k][1], "transform.crop=32", "transform.pad=4",
                        "transform.hflip=true", "loader.batch_size=7", "seed=5", variants[v][0],
                        variants[v][1], variants[v][2], NULL);
            float *got = all_batches(&cv, &d, 2, &n);
            assert_int_equal(n, n0);
            assert_memory_equal(got, ref, n * sizeof(float));
            free(got);
        }
        /* and the epochs differ (the crops and flips are drawn per epoch) */
        size_t half = n0 / 2;
        assert_memory_not_equal(ref, ref + half, half * sizeof(float));
        free(ref);
        dataset_free(&d);
    }
}

static void test_replicas_match_one_cross_entropy(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "dataset.path=%s/idx/train-images-idx3-ubyte", root);
    struct config c1;
    struct run_result one;
    test_config(&c1, "dataset.kind=idx", path, "train.epochs=5", "loader.batch_size=13",
                "train.lr=0.05", NULL);
    test_run(&c1, &one);
    assert_string_equal(one.loss, "cross_entropy");
    assert_true(one.eval.done);
    assert_int_equal(one.eval.samples, 20);
    assert_true(one.epochs[4].loss < one.epochs[0].loss);
    const char *replicas[] = {"parallel.replicas=2", "parallel.replicas=3", "parallel.replicas=8"};
    for (size_t i = 0; i < 3; i++) {
        struct config cn;
        struct run_result many;
        test_config(&cn, "dataset.kind=idx", path, "train.epochs=5", "loader.batch_size=13",
                    "train.lr=0.05", replicas[i], "loader.num_workers=2", NULL);
        test_run(&cn, &many);
        check_same_training(&many, &one, replicas[i]);
        double eval_bound = order_bound(5 * one.n_batches, 13, 784); // as the epochs' losses
        if (!(fabs(many.eval.loss - one.eval.loss) <= eval_bound * one.eval.loss))
            fail_msg("%s: eval loss %.9g, 1 replica %.9g", replicas[i], many.eval.loss,
                     one.eval.loss);
        run_result_free(&many);
    }
    run_result_free(&one);
}

static void test_kinds_learn(void **state)
{
    (void)state;
    char p[3][128];
    snprintf(p[0], sizeof p[0], "dataset.path=%s/cifar10", root);
    snprintf(p[1], sizeof p[1], "dataset.path=%s/idx/train-images-idx3-ubyte", root);
    snprintf(p[2], sizeof p[2], "dataset.path=%s/folder/train", root);
    char ev[128];
    snprintf(ev, sizeof ev, "dataset.eval_path=%s/folder/val", root);
    const char *kinds[] = {"dataset.kind=cifar10", "dataset.kind=idx", "dataset.kind=folder"};
    for (int k = 0; k < 3; k++) {
        struct config c;
        struct run_result r;
        test_config(&c, kinds[k], p[k], k == 2 ? ev : "name=x", "train.epochs=8",
                    "loader.batch_size=10", "train.lr=0.01", NULL);
        test_run(&c, &r);
        assert_int_equal(r.cfg.dataset.length, 120);
        assert_int_equal(r.cfg.model.out_features, 10);
        assert_true(r.eval.done);
        if (r.eval.accuracy < 0.8 || r.epochs[7].accuracy < 0.8)
            fail_msg("%s: accuracy %.2f train, %.2f eval after 8 epochs", kinds[k],
                     r.epochs[7].accuracy, r.eval.accuracy);
        /* folder reads its files every epoch; the others are in memory */
        assert_true(k == 2 ? r.epochs[0].read_bytes > 0 : r.epochs[0].read_bytes == 0);
        run_result_free(&r);
    }
}

/* A 2x1 PNG of bit depth `depth` and colour type `type` from the samples
 * `v` (big-endian when 16-bit), with a gAMA chunk of 1.0 when `gamma`. */
static size_t make_png(uint8_t *out, int depth, int type, const unsigned *v, int nv, bool gamma)
{
    uint8_t raw[64], *o = out;
    size_t nraw = 0;
    raw[nraw++] = 0; // filter: none
    for (int i = 0; i < nv; i++) {
        if (depth == 16)
            raw[nraw++] = (uint8_t)(v[i] >> 8);
        raw[nraw++] = (uint8_t)v[i];
    }
    uint8_t idat[128];
    uLongf nidat = sizeof idat;
    assert_int_equal(compress(idat, &nidat, raw, nraw), Z_OK);
    memcpy(o, "\x89PNG\r\n\x1a\n", 8), o += 8;
    uint8_t ihdr[13] = {0, 0, 0, 2, 0, 0, 0, 1, (uint8_t)depth, (uint8_t)type, 0, 0, 0};
    uint8_t gama[4] = {0, 1, 0x86, 0xa0}; // 100000: gamma 1.0
    const struct {
        const char *tag;
        const uint8_t *data;
        size_t n;
    } chunks[] = {{"IHDR", ihdr, 13}, {"gAMA", gama, gamma ? 4 : 0}, {"IDAT", idat, nidat},
                  {"IEND", NULL, 0}};
    for (int k = 0; k < 4; k++) {
        if (k == 1 && !gamma)
            continue;
        size_t n = chunks[k].n;
        uint8_t len[4] = {(uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
        memcpy(o, len, 4), o += 4;
        memcpy(o, chunks[k].tag, 4);
        if (n)
            memcpy(o + 4, chunks[k].data, n);
        uLong crc = crc32(0, o, (uInt)(4 + n));
        o += 4 + n;
        uint8_t c[4] = {(uint8_t)(crc >> 24), (uint8_t)(crc >> 16), (uint8_t)(crc >> 8), (uint8_t)crc};
        memcpy(o, c, 4), o += 4;
    }
    return (size_t)(o - out);
}

/* PNG pixels are PIL's convert("RGB"): alpha dropped (a transparent pixel
 * keeps its colour), gamma ignored, 16-bit RGB's high byte, 16-bit grey
 * clipped to 255. */
static void test_png_pixels_as_pil(void **state)
{
    (void)state;
    const struct {
        int depth, type;
        bool gamma;
        unsigned v[8];
        int nv;
        uint8_t want[6];
    } cases[] = {
        {8, 6, false, {10, 20, 30, 0, 200, 100, 50, 255}, 8, {10, 20, 30, 200, 100, 50}},
        {8, 4, false, {77, 0, 99, 128}, 4, {77, 77, 77, 99, 99, 99}},
        {8, 2, true, {10, 128, 250, 1, 2, 3}, 6, {10, 128, 250, 1, 2, 3}},
        {16, 2, false, {0x1234, 0xff00, 0x00ff, 0x8080, 1, 0xffff}, 6,
         {0x12, 0xff, 0x00, 0x80, 0, 0xff}},
        {16, 0, false, {200, 0x1234}, 2, {200, 200, 200, 255, 255, 255}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        uint8_t png[256], *rgb;
        int w, h;
        struct error e = {0};
        size_t n = make_png(png, cases[i].depth, cases[i].type, cases[i].v, cases[i].nv,
                            cases[i].gamma);
        if (image_decode(png, n, &rgb, &w, &h, &e))
            fail_msg("case %zu: %s", i, e.msg);
        assert_int_equal(w, 2);
        assert_int_equal(h, 1);
        if (memcmp(rgb, cases[i].want, 6) != 0)
            fail_msg("case %zu: got %d %d %d %d %d %d", i, rgb[0], rgb[1], rgb[2], rgb[3], rgb[4],
                     rgb[5]);
        free(rgb);
        assert_int_not_equal(image_decode(png, n - 20, &rgb, &w, &h, &e), 0); // truncated
    }
}

/* Images in the modes PIL reads differently (a CMYK and a YCCK JPEG, a grey JPEG,
 * palettes of 8 and 2 bits, one with a transparent entry, one with indices
 * past its PLTE, 1-bit, grey + alpha, 16-bit grey) and damaged files PIL
 * reads (PNGs with bad CRCs from the image data on, the IDAT's CRC cut, no
 * IEND, an unknown critical chunk; a JPEG with extraneous bytes and a stray
 * restart marker, one without its EOI, one ending inside a marker after its
 * scan), each decoded to exactly the bytes of
 * PIL's Image.open(f).convert("RGB") written beside it
 * (tests/images/make_images.py, Pillow 9.4); and the ones it refuses (a bad
 * tEXt CRC before the image data, a chunk cut short after it, an IDAT cut
 * short after the one where the rows end, a JPEG cut
 * before its last row), refused. Run from the repository root, as make does. */
static void test_modes_as_pil(void **state)
{
    (void)state;
    const char *names[] = {"cmyk.jpg",     "ycck.jpg",          "gray.jpg",     "palette.png",
                           "palette2.png", "palette-trns.png",  "bilevel.png",  "la.png",
                           "gray16.png",   "palette-short.png", "crc-idat.png", "crc-iend.png",
                           "no-iend.png",  "unknown-critical.png", "jpeg-junk.jpg",
                           "crc-cut.png",  "jpeg-no-eoi.jpg",   "jpeg-cut-marker.jpg"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        char path[256], want_path[256];
        snprintf(path, sizeof path, "tests/images/%s", names[i]);
        snprintf(want_path, sizeof want_path, "%s.rgb", path);
        uint8_t buf[4096], want[4096], *rgb;
        FILE *f = fopen(path, "rb"), *g = fopen(want_path, "rb");
        if (!f || !g)
            fail_msg("%s: missing (run from the repository root)", f ? want_path : path);
        size_t n = fread(buf, 1, sizeof buf, f), nw = fread(want, 1, sizeof want, g);
        fclose(f);
        fclose(g);
        int w, h, worst = 0;
        struct error e = {0};
        if (image_decode(buf, n, &rgb, &w, &h, &e))
            fail_msg("%s: %s", names[i], e.msg);
        assert_int_equal((size_t)w * (size_t)h * 3, nw);
        for (size_t k = 0; k < nw; k++)
            if (abs(rgb[k] - want[k]) > worst)
                worst = abs(rgb[k] - want[k]);
        free(rgb);
        if (worst)
            fail_msg("%s: differs from PIL by up to %d", names[i], worst);
    }
    const char *refused[][2] = {
        {"crc-text.png", "corrupt PNG: tEXt: CRC error"},
        {"tail-cut.png", "corrupt PNG: truncated file (a chunk after the image data)"},
        {"idat-cut.png", "corrupt PNG: truncated file (a chunk after the image data)"},
        {"jpeg-junk.jpg", "corrupt JPEG: truncated (Premature end of JPEG file)"}};
    for (int i = 0; i < 4; i++) { // the last one cut in half
        char path[256];
        uint8_t buf[4096], *rgb;
        snprintf(path, sizeof path, "tests/images/%s", refused[i][0]);
        FILE *f = fopen(path, "rb");
        assert_non_null(f);
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        int w, h;
        struct error e = {0};
        assert_int_not_equal(image_decode(buf, i == 3 ? n / 2 : n, &rgb, &w, &h, &e), 0);
        assert_string_equal(e.msg, refused[i][1]);
    }
}

/* The resize is PIL's Image.resize(BILINEAR) to the pixel (values from PIL
 * 9.4 for this 23x9 grey image resized to 15x6), then the centre crop from
 * column round(4.5) = 4. Float weights were one level off in places. */
static void test_resize_is_pils(void **state)
{
    (void)state;
    uint8_t img[9 * 23];
    for (int y = 0; y < 9; y++)
        for (int x = 0; x < 23; x++)
            img[y * 23 + x] = (uint8_t)((y * 37 + x * 11 + (y * x) % 7 * 29) % 256);
    static const uint8_t want[36] = {72,  111, 145, 102, 117, 166, 88,  154, 119, 122, 77,  156,
                                     114, 104, 77,  99,  96,  77,  68,  122, 102, 158, 152, 113,
                                     58,  143, 158, 158, 145, 126, 76,  131, 175, 93,  106, 176};
    struct config c;
    struct transform t;
    struct error e;
    float out[36];
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.resize=6", NULL);
    assert_int_equal(transform_init(&t, &c, 1, false, &e), 0);
    assert_int_equal(transform_apply(&t, img, 9, 23, 0, 0, out, &e), 0);
    for (int i = 0; i < 36; i++)
        if (lroundf(out[i] * 255) != want[i])
            fail_msg("pixel %d: %ld, PIL %d", i, lroundf(out[i] * 255), want[i]);
}

/* Without the random transforms (the eval split) the crop is torchvision's
 * CenterCrop: offset round((11 - 4) / 2) = round(3.5) = 4, and round(2.5) = 2. */
static void test_eval_crop_is_centre_crop(void **state)
{
    (void)state;
    uint8_t img[4 * 11];
    for (int y = 0; y < 4; y++)
        for (int x = 0; x < 11; x++)
            img[y * 11 + x] = (uint8_t)x;
    struct config c;
    struct transform t;
    struct error e;
    float out[16];
    test_config(&c, "dataset.kind=folder", "dataset.path=x", "transform.crop=4", NULL);
    assert_int_equal(transform_init(&t, &c, 1, false, &e), 0);
    assert_int_equal(transform_apply(&t, img, 4, 11, 0, 0, out, &e), 0);
    assert_int_equal(lroundf(out[0] * 255), 4);
    assert_int_equal(transform_apply(&t, img, 4, 9, 0, 0, out, &e), 0); // 9 wide: round(2.5)
    assert_int_equal(lroundf(out[0] * 255), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_transform_shapes_and_values),
        cmocka_unit_test(test_flip_is_seeded_per_sample),
        cmocka_unit_test(test_cross_entropy),
        cmocka_unit_test(test_batches_identical_across_workers),
        cmocka_unit_test(test_replicas_match_one_cross_entropy),
        cmocka_unit_test(test_kinds_learn),
        cmocka_unit_test(test_png_pixels_as_pil),
        cmocka_unit_test(test_modes_as_pil),
        cmocka_unit_test(test_resize_is_pils),
        cmocka_unit_test(test_eval_crop_is_centre_crop),
    };
    return cmocka_run_group_tests(tests, make_data, remove_data);
}
