/* JPEG and PNG decoding and encoding. libjpeg reports errors through
 * error_exit, which must not return: ours longjmps back to the call. Its
 * warnings (e.g. "Premature end of JPEG file", after which it would hand back
 * grey rows) take the same way, so a damaged file is never half-decoded. */
#include "image.h"

#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>
#include <png.h>

enum image_format image_sniff(const unsigned char *buf, size_t n)
{
    if (n >= 3 && buf[0] == 0xFF && buf[1] == 0xD8 && buf[2] == 0xFF)
        return IMAGE_JPEG;
    if (n >= 8 && memcmp(buf, "\x89PNG\r\n\x1a\n", 8) == 0)
        return IMAGE_PNG;
    return IMAGE_UNKNOWN;
}

/* ---- JPEG ------------------------------------------------------------------ */

struct jpeg_err {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
    char msg[JMSG_LENGTH_MAX];
};

static void jpeg_fail(j_common_ptr cinfo)
{
    struct jpeg_err *je = (struct jpeg_err *)cinfo->err;
    je->mgr.format_message(cinfo, je->msg);
    longjmp(je->jump, 1);
}

/* Warnings (level -1) are corrupt data: fail. Trace messages are ignored. */
static void jpeg_message(j_common_ptr cinfo, int level)
{
    if (level < 0)
        jpeg_fail(cinfo);
}

static void jpeg_quiet(j_common_ptr cinfo) { (void)cinfo; }

/* Reads the header, and the pixels too when rgb is not NULL. */
static int jpeg_read(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                     struct error *e)
{
    struct jpeg_decompress_struct cinfo;
    struct jpeg_err je;
    uint8_t *volatile out = NULL;
    cinfo.err = jpeg_std_error(&je.mgr);
    je.mgr.error_exit = jpeg_fail;
    je.mgr.emit_message = jpeg_message;
    je.mgr.output_message = jpeg_quiet;
    if (setjmp(je.jump)) {
        jpeg_destroy_decompress(&cinfo);
        free(out);
        return error_set(e, "corrupt JPEG: %s", je.msg);
    }
    jpeg_create_decompress(&cinfo);
    jpeg_mem_src(&cinfo, buf, (unsigned long)n);
    jpeg_read_header(&cinfo, TRUE);
    if (cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK) {
        jpeg_destroy_decompress(&cinfo);
        return error_set(e, "CMYK JPEG not supported (convert it to RGB)");
    }
    *w = (int)cinfo.image_width;
    *h = (int)cinfo.image_height;
    if (!rgb) {
        jpeg_destroy_decompress(&cinfo);
        return 0;
    }
    cinfo.out_color_space = JCS_RGB;
    jpeg_start_decompress(&cinfo);
    size_t stride = (size_t)cinfo.output_width * 3;
    out = malloc(stride * cinfo.output_height);
    if (!out) {
        jpeg_destroy_decompress(&cinfo);
        return error_set(e, "out of memory decoding a %ux%u JPEG", cinfo.output_width,
                         cinfo.output_height);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW row = out + stride * cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &row, 1);
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    *rgb = out;
    return 0;
}

static int jpeg_write(FILE *f, const uint8_t *rgb, int w, int h, int quality, struct error *e)
{
    struct jpeg_compress_struct cinfo;
    struct jpeg_err je;
    cinfo.err = jpeg_std_error(&je.mgr);
    je.mgr.error_exit = jpeg_fail;
    je.mgr.output_message = jpeg_quiet;
    if (setjmp(je.jump)) {
        jpeg_destroy_compress(&cinfo);
        return error_set(e, "JPEG encoder: %s", je.msg);
    }
    jpeg_create_compress(&cinfo);
    jpeg_stdio_dest(&cinfo, f);
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

static int png_read(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                    struct error *e)
{
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_memory(&img, buf, n))
        return error_set(e, "corrupt PNG: %s", img.message);
    *w = (int)img.width;
    *h = (int)img.height;
    if (!rgb) {
        png_image_free(&img);
        return 0;
    }
    img.format = PNG_FORMAT_RGB;
    uint8_t *out = malloc(PNG_IMAGE_SIZE(img));
    if (!out) {
        png_image_free(&img);
        return error_set(e, "out of memory decoding a %ux%u PNG", img.width, img.height);
    }
    if (!png_image_finish_read(&img, NULL, out, 0, NULL)) {
        free(out);
        return error_set(e, "corrupt PNG: %s", img.message);
    }
    *rgb = out;
    return 0;
}

/* ---- dispatch ---------------------------------------------------------------- */

static int decode(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                  struct error *e)
{
    switch (image_sniff(buf, n)) {
    case IMAGE_JPEG: return jpeg_read(buf, n, rgb, w, h, e);
    case IMAGE_PNG: return png_read(buf, n, rgb, w, h, e);
    default: return error_set(e, "not a JPEG or PNG image (unknown first bytes)");
    }
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

int image_write(const char *path, enum image_format f, const uint8_t *rgb, int w, int h,
                int quality, struct error *e)
{
    if (f == IMAGE_PNG) {
        png_image img;
        memset(&img, 0, sizeof img);
        img.version = PNG_IMAGE_VERSION;
        img.width = (png_uint_32)w;
        img.height = (png_uint_32)h;
        img.format = PNG_FORMAT_RGB;
        if (!png_image_write_to_file(&img, path, 0, rgb, 0, NULL))
            return error_set(e, "%s: cannot write PNG: %s", path, img.message);
        return 0;
    }
    FILE *fp = fopen(path, "wb");
    if (!fp)
        return error_set(e, "%s: cannot write: %s", path, strerror(errno));
    int rc = jpeg_write(fp, rgb, w, h, quality, e);
    if (fclose(fp) != 0 && !rc)
        rc = error_set(e, "%s: cannot write: %s", path, strerror(errno));
    if (rc)
        return error_wrap(e, "%s", path);
    return 0;
}
