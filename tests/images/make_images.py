#!/usr/bin/python3
"""Writes the image fixtures of tests/test_data.c's PIL checks: small images
in the modes PIL reads differently, each with NAME.rgb beside it, the bytes
of PIL's Image.open(NAME).convert("RGB") (h * w * 3, row-major), which is
what torchvision's ImageFolder loader hands to its transforms.

    /usr/bin/python3 tests/images/make_images.py tests/images

Run with Debian's python3-pil; the committed files came from Pillow 9.4.
ycck.jpg (YCCK, which PIL cannot write) comes from write_ycck.c; this script
writes its .rgb when the file is there. The files written byte by byte
(crafted()) are damaged ones that PIL and libjpeg or libpng left to their
defaults decide differently; the ones PIL refuses get no .rgb."""
import io
import os
import struct
import sys
import zlib

import numpy as np
from PIL import Image

W, H = 13, 7  # odd sizes: chroma subsampling edges


def pattern(channels, seed):
    """Smooth gradients plus a little noise: realistic for a JPEG."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:H, 0:W]
    planes = [(x * (17 + 5 * k) + y * (29 - 3 * k) + 40 * k) % 256 for k in range(channels)]
    a = np.stack(planes, -1).astype(np.int32) + rng.integers(-12, 13, (H, W, channels))
    return np.clip(a, 0, 255).astype(np.uint8)


def chunk(tag, data, bad_crc=False):
    crc = zlib.crc32(tag + data) ^ (1 if bad_crc else 0)
    return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", crc)


def crafted():
    """Files as bytes: a JPEG with 2 extraneous bytes before its scan and a
    restart marker in the middle of its data (libjpeg warns, PIL reads what
    it decodes); one whose EOI is missing (junk instead), one that ends
    inside a marker after its scan; a 4-bit palette
    whose indices run past its 5 PLTE entries; RGB files with a bad IDAT CRC,
    a bad IEND CRC, no IEND, the IDAT's CRC cut short, an unknown critical
    chunk before the image data; refused: a tEXt chunk with a bad CRC before
    the image data, one cut short after it, an IDAT after the one where the
    rows end (holding the zlib checksum) cut short."""
    rows = pattern(3, 9)
    rgb = b"".join(b"\0" + rows[y].tobytes() for y in range(H))
    idx = b"".join(b"\0" + bytes(((2 * x + y) % 16) << 4 | ((2 * x + 1 + y) % 16)
                                  for x in range((W + 1) // 2)) for y in range(H))
    ihdr = lambda depth, kind: chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, depth, kind, 0, 0, 0))
    sig, z, end = b"\x89PNG\r\n\x1a\n", zlib.compress(rgb), chunk(b"IEND", b"")
    head = sig + ihdr(8, 2)
    jpeg = io.BytesIO()
    Image.fromarray(pattern(3, 10)).save(jpeg, "JPEG", quality=90)
    j = jpeg.getvalue()
    sos, eoi = j.index(b"\xff\xda"), j.rindex(b"\xff\xd9")
    mid = (sos + eoi) // 2
    return {
        "jpeg-junk.jpg": j[:sos] + b"\x00\x01" + j[sos:mid] + b"\xff\xd3" + j[mid + 2:],
        "jpeg-no-eoi.jpg": j[:eoi] + b"junk" * 4,
        "jpeg-cut-marker.jpg": j[:eoi] + b"junk" * 4 + b"\xff\xda\x00",
        "palette-short.png": sig + ihdr(4, 3) + chunk(b"PLTE", bytes(range(10, 25)))
        + chunk(b"IDAT", zlib.compress(idx)) + end,
        "crc-idat.png": head + chunk(b"IDAT", z[:20], True) + chunk(b"IDAT", z[20:]) + end,
        "crc-iend.png": head + chunk(b"IDAT", z) + chunk(b"IEND", b"", True),
        "no-iend.png": head + chunk(b"IDAT", z),
        "crc-cut.png": head + chunk(b"IDAT", z)[:-2],
        "tail-cut.png": head + chunk(b"IDAT", z) + chunk(b"tEXt", b"Comment\0" + b"x" * 40)[:30],
        "idat-cut.png": head + chunk(b"IDAT", z[:-4]) + chunk(b"IDAT", z[-4:])[:10],
        "unknown-critical.png": head + chunk(b"XCRT", b"data") + chunk(b"IDAT", z) + end,
        "crc-text.png": head + chunk(b"tEXt", b"Comment\0x", True) + chunk(b"IDAT", z) + end,
    }


def main(out):
    os.makedirs(out, exist_ok=True)
    cmyk = pattern(4, 1)
    cmyk[..., 3] = cmyk[..., 3] // 2  # some black, not all
    images = {
        "cmyk.jpg": (Image.fromarray(cmyk, "CMYK"), dict(quality=90)),
        "gray.jpg": (Image.fromarray(pattern(1, 2)[..., 0], "L"), dict(quality=90)),
        "palette.png": (Image.fromarray(pattern(3, 3)).quantize(64), {}),
        "palette2.png": (Image.fromarray(pattern(3, 4)).quantize(4), dict(bits=2)),
        "bilevel.png": (Image.fromarray(pattern(1, 5)[..., 0], "L").convert("1"), {}),
        "la.png": (Image.fromarray(pattern(2, 6), "LA"), {}),
        "gray16.png": (Image.fromarray((pattern(1, 7)[..., 0].astype(np.uint16) * 3), "I;16"), {}),
    }
    trns = Image.fromarray(pattern(3, 8)).quantize(8)
    trns.info["transparency"] = 2
    images["palette-trns.png"] = (trns, dict(transparency=2))
    for name, (im, opts) in images.items():
        im.save(os.path.join(out, name), **opts)
    for name, data in crafted().items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
    names = list(images) + list(crafted())
    names += ["ycck.jpg"] if os.path.exists(os.path.join(out, "ycck.jpg")) else []
    for name in names:
        path = os.path.join(out, name)
        if name in ("crc-text.png", "tail-cut.png", "idat-cut.png"):
            try:
                Image.open(path).convert("RGB")
                sys.exit("%s: PIL read it" % name)
            except OSError as e:
                print("%s: refused (%s)" % (name, e))
            continue
        with Image.open(path) as f:
            rgb = np.asarray(f.convert("RGB"))
        assert rgb.shape == (H, W, 3), (name, rgb.shape)
        with open(path + ".rgb", "wb") as f:
            f.write(rgb.tobytes())
        with Image.open(path) as f:
            print("%s: %s" % (name, f.mode))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
