/* JPEG and PNG decoding and encoding. libjpeg reports errors through
 * error_exit, which must not return: ours longjmps back to the call. Of its
 * warnings, "Premature end of JPEG file" (after which it would hand back grey
 * rows) takes the same way, as PIL refuses a truncated file; the others
 * (corrupt entropy data, extraneous bytes before a marker) PIL ignores and
 * decodes what libjpeg makes of the data, and so do we. */
#include "image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <jerror.h>
#include <png.h>

#include "rlimits.h"

enum image_format image_sniff(const unsigned char *buf, size_t n)
{
    if (n >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
        return IMAGE_JPEG;
    if (n >= 8 && memcmp(buf, "\x89PNG\r\n\x1a\n", 8) == 0)
        return IMAGE_PNG;
    return IMAGE_UNKNOWN;
}

/* PIL refuses images of more than twice its MAX_IMAGE_PIXELS (89478485) as
 * decompression bombs; so do we, before allocating: a 400 KB PNG can
 * declare 20000 x 20000 pixels. */
enum { MAX_PIXELS = 2 * 89478485 };

static int too_big(long w, long h, struct error *e)
{
    if (w * h <= MAX_PIXELS)
        return 0;
    return error_set(e, "%ldx%ld is more than %d pixels (PIL's decompression-bomb limit)", w, h,
                     MAX_PIXELS);
}

/* ---- JPEG ------------------------------------------------------------------ */

struct jpeg_err {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    volatile bool finishing; // every row out: the end of the data ends the read (as PIL's)
    char msg[JMSG_LENGTH_MAX];
};

static void jpeg_fail(j_common_ptr cinfo)
{
    struct jpeg_err *je = (struct jpeg_err *)cinfo->err;
    je->mgr.format_message(cinfo, je->msg);
    longjmp(je->jump, 1);
}

/* The end of the data, a warning (level -1), jumps back: an error before
 * every row is out, the end of the read after; other warnings and trace
 * messages are ignored. */
static void jpeg_message(j_common_ptr cinfo, int level)
{
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF)
        jpeg_fail(cinfo);
}

static void jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

/* PIL's convert("RGB") of a CMYK JPEG: PIL reads every 4-channel JPEG as
 * Adobe's inverted CMYK (rawmode "CMYK;I": c = 255 - sample), then per pixel
 * nk = 255 - k and out = nk - c * nk / 255, that product rounded as PIL's
 * MULDIV255: (t + (t >> 8)) >> 8 with t = c * nk + 128. */
static void cmyk_to_rgb(const uint8_t *in, uint8_t *out, size_t n)
{
    for (size_t x = 0; x < n; x++, in += 4, out += 3) {
        unsigned nk = in[3]; // 255 - (255 - sample)
        for (int k = 0; k < 3; k++) {
            unsigned t = (255u - in[k]) * nk + 128;
            out[k] = (uint8_t)(nk - ((t + (t >> 8)) >> 8));
        }
    }
}

/* Every row of a started decompression into out (stride bytes a row); a
 * CMYK image through one row of line, converted. A corrupt file jumps back
 * to jpeg_read's setjmp from inside. */
static void jpeg_rows(struct jpeg_decompress_struct *cinfo, uint8_t *out, uint8_t *line,
                      size_t stride)
{
    while (cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW row = out + stride * cinfo->output_scanline;
        if (!line) { // as many rows as the decoder has at once (its output buffer's height)
            JSAMPROW rows[16];
            JDIMENSION k = cinfo->output_height - cinfo->output_scanline;
            k = k < 16 ? k : 16;
            for (JDIMENSION i = 0; i < k; i++)
                rows[i] = row + stride * i;
            jpeg_read_scanlines(cinfo, rows, k);
            continue;
        }
        JSAMPROW raw = line;
        jpeg_read_scanlines(cinfo, &raw, 1);
        cmyk_to_rgb(line, row, cinfo->output_width);
    }
}

/* Reads the header, and the pixels too when rgb is not NULL. */
static int jpeg_read(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                     struct error *e)
{
    struct jpeg_decompress_struct cinfo;
    struct jpeg_err je;
    uint8_t *volatile out = NULL, *volatile line = NULL;
    cinfo.err = jpeg_std_error(&je.mgr);
    je.mgr.error_exit = jpeg_fail;
    je.mgr.emit_message = jpeg_message;
    je.mgr.output_message = jpeg_quiet;
    je.finishing = false;
    if (setjmp(je.jump)) {
        bool rows_out = je.finishing && cinfo.err->msg_code == JWRN_JPEG_EOF; // a missing EOI
        jpeg_destroy_decompress(&cinfo);
        free(line);
        if (rows_out)
            return *rgb = out, 0;
        free(out);
        return error_set(e, "corrupt JPEG: %s%s%s", // the end of data: say truncated
                         cinfo.err->msg_code == JWRN_JPEG_EOF ? "truncated (" : "", je.msg,
                         cinfo.err->msg_code == JWRN_JPEG_EOF ? ")" : "");
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, buf, (unsigned long)n);
    jpeg_read_header(&cinfo, TRUE);
    bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    *w = (int)cinfo.image_width;
    *h = (int)cinfo.image_height;
    if (too_big(*w, *h, e)) {
        jpeg_destroy_decompress(&cinfo);
        return -1;
    }
    if (!rgb) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    cinfo.out_color_space = cmyk ? JCS_CMYK : JCS_RGB; // libjpeg turns YCCK into CMYK
    jpeg_start_decompress(&cinfo);
    size_t stride = (size_t)cinfo.output_width * 3;
    out = malloc(stride * cinfo.output_height);
    if (cmyk)
        line = malloc((size_t)cinfo.output_width * 4); // one CMYK row
    if (!out || (cmyk && !line)) {
        free(out);
        free(line);
        jpeg_destroy_decompress(&cinfo);
        return error_set(e, "out of memory decoding a %ux%u JPEG", cinfo.output_width,
                         cinfo.output_height);
    }
    jpeg_rows(&cinfo, out, line, stride);
    free(line);
    line = NULL;
    je.finishing = true;
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    *rgb = out;
    return 0;
}

/* Encodes into memory (*out, *n; free() it): the file is written by
 * image_write, which alone sees the system's errors. */
static int jpeg_encode(const uint8_t *rgb, int w, int h, int quality, unsigned char **out,
                       unsigned long *n, struct error *e)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_err je;
    cinfo.err = jpeg_std_error(&je.mgr);
    je.mgr.error_exit = jpeg_fail;
    je.mgr.output_message = jpeg_quiet;
    je.finishing = false;
    *out = NULL;
    *n = 0;
    if (setjmp(je.jump)) {
        jpeg_destroy_compress(&cinfo);
        free(*out);
        *out = NULL;
        return error_set(e, "JPEG encoder: %s", je.msg);
    }
    jpeg_create_compress(&cinfo);
    jpeg_mem_dest(&cinfo, out, n);
    cinfo.image_width = (JDIMENSION)w;
    cinfo.image_height = (JDIMENSION)h;
    cinfo.input_components = 3;
    cinfo.in_color_space = JCS_RGB;
    jpeg_set_defaults(&cinfo);
    jpeg_set_quality(&cinfo, quality, TRUE);
    jpeg_start_compress(&cinfo, TRUE);
    while (cinfo.next_scanline < cinfo.image_height) {
        JSAMPROW row = (JSAMPROW)(rgb + (size_t)cinfo.next_scanline * (size_t)w * 3);
        jpeg_write_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_compress(&cinfo);
    jpeg_destroy_compress(&cinfo);
    return 0;
}

/* ---- PNG ------------------------------------------------------------------- */

/* libpng's low-level API, so that the pixels are PIL's: its simplified API
 * would apply gAMA chunks, treat 16-bit samples as linear light and composite
 * transparent pixels onto black, none of which PIL's convert("RGB") does. PIL
 * keeps the stored colour of a transparent pixel, ignores gamma, takes the
 * high byte of 16-bit RGB, and clips 16-bit grey (its mode "I") to 255. A
 * palette index past the PLTE entries is grey (i, i, i) in PIL (its palette
 * starts as a grey ramp), black in libpng. And the files PIL reads: it checks
 * every chunk's CRC before the image data (an ancillary chunk's too, which
 * libpng would drop with a warning), skips chunks it does not know (libpng
 * refuses an unknown critical one), checks no IDAT CRC, stops reading the
 * image data once every row is out (libpng wants the rest of the zlib
 * stream and the IDAT's CRC), and then wants every chunk up to IEND whole
 * (png_tail_whole), its CRC unchecked. */
struct png_src {
    const unsigned char *buf;
    size_t n, at;
    size_t row_at;           // at when the last row so far was decoded
    int type;                // the colour type as stored
    png_uint_32 height;
    bool reading, rows_out;  // in png_read_image; every row decoded (an error after that
                             // is past what PIL reads)
    uint8_t *rows, *out;     // the decoded rows, the RGB image
    png_bytep *ptrs;         // each row's start
    char msg[200];
};

static void png_fail(png_structp p, png_const_charp msg)
{
    struct png_src *s = png_get_error_ptr(p);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    s->rows_out = s->reading && (png_get_current_pass_number(p) >= 7 || // an interlaced one's
                                 png_get_current_row_number(p) >= s->height); // last row is out
    png_longjmp(p, 1);
}

static void png_warn(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

static int png_skip_chunk(png_structp p, png_unknown_chunkp chunk) { return (void)p, (void)chunk, 1; }

/* A row decoded (libpng's user transform, which changes nothing). */
static void png_row_at(png_structp p, png_row_infop row, png_bytep data)
{
    struct png_src *s = png_get_io_ptr(p);
    s->row_at = s->at;
    (void)row, (void)data;
}

static void png_from_memory(png_structp p, png_bytep out, size_t len)
{
    struct png_src *s = png_get_io_ptr(p);
    if (len > s->n - s->at)
        png_error(p, "truncated file");
    memcpy(out, s->buf + s->at, len);
    s->at += len;
}

/* The decoded rows (stride bytes each, channels of depth bits) as RGB
 * bytes; clip: 16-bit grey taken as PIL's "I" mode, clipped to 255. */
static void png_to_rgb(const uint8_t *rows, size_t stride, size_t channels, int depth, bool clip,
                       size_t width, size_t height, uint8_t *out)
{
    for (size_t i = 0, px = width * height; i < px; i++) {
        size_t row = i / width, col = i % width;
        for (size_t k = 0; k < 3; k++) {
            const uint8_t *v = rows + row * stride +
                               (col * channels + (channels == 1 ? 0 : k)) * (size_t)(depth / 8);
            unsigned x = depth == 16 ? (clip ? ((unsigned)v[0] << 8 | v[1]) : v[0]) : v[0];
            out[i * 3 + k] = (uint8_t)(x > 255 ? 255 : x);
        }
    }
}

/* Whether the chunks after the image data are whole, as PIL's load_end
 * reads them up to IEND: from the one after the chunk where the last row's
 * data ended (at: the offset of the byte after it), each chunk's data in the
 * file (its CRC unread); a short header or a name not of four letters,
 * digits or '_' ends the walk. */
static bool png_tail_whole(const unsigned char *b, size_t n, size_t at)
{
    bool tail = false;
    for (size_t c = 8; c + 8 <= n;) {
        const unsigned char *tag = b + c + 4;
        png_uint_32 len = png_get_uint_32(b + c);
        bool name = true;
        for (int i = 0; i < 4; i++)
            name &= (tag[i] >= 'a' && tag[i] <= 'z') || (tag[i] >= 'A' && tag[i] <= 'Z') ||
                    (tag[i] >= '0' && tag[i] <= '9') || tag[i] == '_';
        if (tail && (!name || !memcmp(tag, "IEND", 4)))
            return true;
        if (tail && n - c - 8 < len)
            return false;
        tail |= c + 8 + (size_t)len >= at; // the last row's chunk: the tail is what follows
        c += 12 + (size_t)len;
    }
    return true;
}

/* The header, then (pixels) every row into s->rows. libpng's errors jump
 * back to png_read's setjmp. */
static int png_rows(png_structp p, png_infop info, struct png_src *s, bool pixels, struct error *e)
{
    png_set_read_fn(p, s, png_from_memory);
    png_set_read_user_chunk_fn(p, NULL, png_skip_chunk);
    png_set_read_user_transform_fn(p, png_row_at);
    png_set_user_limits(p, PNG_UINT_31_MAX, PNG_UINT_31_MAX); // too_big's bound, not libpng's 1e6
    png_set_crc_action(p, PNG_CRC_DEFAULT, PNG_CRC_ERROR_QUIT);
    png_read_info(p, info);
    png_uint_32 width = png_get_image_width(p, info);
    int depth = png_get_bit_depth(p, info);
    s->height = png_get_image_height(p, info);
    s->type = png_get_color_type(p, info);
    if (too_big(width, s->height, e))
        return -1;
    if (!pixels)
        return 0;
    if (s->type == PNG_COLOR_TYPE_PALETTE && depth < 8)
        png_set_packing(p); // an index a byte, unscaled
    if (s->type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(p);
    if (s->type & PNG_COLOR_MASK_ALPHA)
        png_set_strip_alpha(p);
    png_set_interlace_handling(p);
    png_read_update_info(p, info);
    size_t stride = png_get_rowbytes(p, info);
    s->rows = malloc(stride * s->height);
    s->ptrs = malloc(s->height * sizeof *s->ptrs);
    s->out = malloc((size_t)width * s->height * 3);
    if (!s->rows || !s->ptrs || !s->out)
        png_error(p, "out of memory");
    for (png_uint_32 y = 0; y < s->height; y++)
        s->ptrs[y] = s->rows + y * stride;
    png_set_crc_action(p, PNG_CRC_QUIET_USE, PNG_CRC_QUIET_USE);
    s->reading = true;
    png_read_image(p, s->ptrs); // and no png_read_end: png_tail_whole reads what PIL reads
    return 0;
}

static int png_read(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                    struct error *e)
{
    struct png_src src = {.buf = buf, .n = n};
    png_structp p = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_warn);
    png_infop info = p ? png_create_info_struct(p) : NULL;
    int rc = info ? 0 : error_set(e, "out of memory reading a PNG");
    if (info && setjmp(png_jmpbuf(p))) // after every row, an error is past PIL's read
        rc = src.rows_out ? 0 : error_set(e, "corrupt PNG: %s", src.msg);
    else if (info)
        rc = png_rows(p, info, &src, rgb != NULL, e);
    *w = info ? (int)png_get_image_width(p, info) : 0;
    *h = (int)src.height;
    if (rc == 0 && rgb && !png_tail_whole(buf, n, src.row_at))
        rc = error_set(e, "corrupt PNG: truncated file (a chunk after the image data)");
    if (rc == 0 && rgb) {
        png_colorp pal = NULL;
        int n_pal = 0, depth = png_get_bit_depth(p, info);
        png_to_rgb(src.rows, png_get_rowbytes(p, info), png_get_channels(p, info), depth,
                   src.type == PNG_COLOR_TYPE_GRAY && depth == 16, (size_t)*w, src.height, src.out);
        if (src.type == PNG_COLOR_TYPE_PALETTE && png_get_PLTE(p, info, &pal, &n_pal))
            for (size_t i = 0, px = (size_t)*w * src.height; i < px; i++) // (i, i, i) past PLTE
                if (src.out[3 * i] < n_pal)
                    memcpy(src.out + 3 * i, &pal[src.out[3 * i]], 3);
        *rgb = src.out, src.out = NULL;
    }
    png_destroy_read_struct(p ? &p : NULL, info ? &info : NULL, NULL);
    free(src.rows);
    free(src.ptrs);
    free(src.out);
    return rc;
}

/* ---- dispatch ---------------------------------------------------------------- */

static int decode(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                  struct error *e)
{
    switch (image_sniff(buf, n)) {
    case IMAGE_JPEG: return jpeg_read(buf, n, rgb, w, h, e);
    case IMAGE_PNG: return png_read(buf, n, rgb, w, h, e);
    default: break;
    }
    if (n == 0)
        return error_set(e, "empty file (0 bytes), expected a JPEG or PNG image");
    if ((n < 3 && memcmp(buf, "\xff\xd8\xff", n) == 0) ||
        (n < 8 && memcmp(buf, "\x89PNG\r\n\x1a\n", n) == 0))
        return error_set(e, "truncated: %zu bytes, shorter than a %s signature", n,
                         buf[0] == 0xff ? "JPEG" : "PNG");
    return error_set(e, "not a JPEG or PNG image (unknown first bytes)");
}

int image_header(const unsigned char *buf, size_t n, int *w, int *h, struct error *e)
{
    if (decode(buf, n, NULL, w, h, e))
        return -1;
    if (*w <= 0 || *h <= 0)
        return error_set(e, "image of size %dx%d", *w, *h);
    return 0;
}

int image_decode(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                 struct error *e)
{
    *rgb = NULL;
    return decode(buf, n, rgb, w, h, e);
}

/* PNG through libpng's simplified API, into memory as jpeg_encode does. */
static int png_encode(const uint8_t *rgb, int w, int h, unsigned char **out, unsigned long *n,
                      struct error *e)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)w;
    img.height = (png_uint_32)h;
    img.format = PNG_FORMAT_RGB;
    png_alloc_size_t size = 0;
    *out = NULL;
    if (png_image_write_to_memory(&img, NULL, &size, 0, rgb, 0, NULL) && size > 0 &&
        (*out = malloc(size)) && png_image_write_to_memory(&img, *out, &size, 0, rgb, 0, NULL)) {
        *n = (unsigned long)size;
        return 0;
    }
    free(*out);
    *out = NULL;
    return error_set(e, "cannot encode PNG: %s", img.message[0] ? img.message : "out of memory");
}

int image_write(const char *path, enum image_format f, const uint8_t *rgb, int w, int h,
                int quality, struct error *e)
{
    unsigned char *buf;
    unsigned long n;
    if (f == IMAGE_PNG ? png_encode(rgb, w, h, &buf, &n, e)
                       : jpeg_encode(rgb, w, h, quality, &buf, &n, e))
        return error_wrap(e, "%s", path);
    char why[256];
    int rc = 0;
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(buf, 1, n, fp) != n)
        rc = error_set(e, "%s: cannot write: %s", path, rlimits_write_error(errno, why, sizeof why));
    if (fp && fclose(fp) != 0 && !rc)
        rc = error_set(e, "%s: cannot write: %s", path, rlimits_write_error(errno, why, sizeof why));
    free(buf);
    return rc;
}
