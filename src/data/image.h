/* Image files in memory: JPEG through libjpeg-turbo, PNG through libpng's
 * low-level API, always to 8-bit RGB (h, w, 3) as torchvision's loader (PIL's
 * convert("RGB")) converts them, and only the damaged files PIL reads (image.c says
 * which): a truncated file is an error; nothing is printed, nothing exits. */
#ifndef DPBENCH_IMAGE_H
#define DPBENCH_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

enum image_format { IMAGE_UNKNOWN, IMAGE_JPEG, IMAGE_PNG };

/* The format from the first bytes (magic numbers), not the file name. */
enum image_format image_sniff(const unsigned char *buf, size_t n);

/* Width and height from the header only. */
int image_header(const unsigned char *buf, size_t n, int *w, int *h, struct error *e);

/* Decodes to rgb (h, w, 3), malloc'd; the caller frees it. */
int image_decode(const unsigned char *buf, size_t n, uint8_t **rgb, int *w, int *h,
                 struct error *e);

/* Writes rgb (h, w, 3) as a JPEG of `quality` or a PNG. */
int image_write(const char *path, enum image_format f, const uint8_t *rgb, int w, int h,
                int quality, struct error *e);

#endif
