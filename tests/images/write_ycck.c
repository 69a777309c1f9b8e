/* Writes tests/images/ycck.jpg: a 13x7 JPEG stored as YCCK (Adobe transform
 * 2), which PIL cannot write. libjpeg converts the CMYK rows given here.
 *   cc tests/images/write_ycck.c -ljpeg -o /tmp/write_ycck && /tmp/write_ycck tests/images/ycck.jpg
 * then make_images.py writes ycck.jpg.rgb, PIL's convert("RGB") of it. */
#include <stdio.h>

#include <jpeglib.h>

int main(int argc, char **argv)
{
    enum { W = 13, H = 7 };
    unsigned char px[H][W * 4];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++)
            for (int k = 0; k < 4; k++)
                px[y][x * 4 + k] = (unsigned char)((x * (17 + 5 * k) + y * (29 - 3 * k) + 40 * k) %
                                                   (k == 3 ? 128 : 256));
    FILE *f = argc > 1 ? fopen(argv[1], "wb") : NULL;
    if (!f)
        return 1;
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr err;
    c.err = jpeg_std_error(&err);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = W;
    c.image_height = H;
    c.input_components = 4;
    c.in_color_space = JCS_CMYK;
    jpeg_set_defaults(&c);
    jpeg_set_colorspace(&c, JCS_YCCK);
    jpeg_set_quality(&c, 90, TRUE);
    jpeg_start_compress(&c, TRUE);
    for (int y = 0; y < H; y++) {
        JSAMPROW row = px[y];
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    return fclose(f) != 0;
}
