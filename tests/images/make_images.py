#!/usr/bin/python3
"""Writes the image fixtures of tests/test_data.c's PIL checks: small images
in the modes PIL reads differently, each with NAME.rgb beside it, the bytes
of PIL's Image.open(NAME).convert("RGB") (h * w * 3, row-major), which is
what torchvision's ImageFolder loader hands to its transforms.

    /usr/bin/python3 tests/images/make_images.py tests/images

Run with Debian's python3-pil; the committed files came from Pillow 9.4.
ycck.jpg (YCCK, which PIL cannot write) comes from write_ycck.c; this script
writes its .rgb when the file is there."""
import os
import sys

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
    names = list(images) + (["ycck.jpg"] if os.path.exists(os.path.join(out, "ycck.jpg")) else [])
    for name in names:
        path = os.path.join(out, name)
        with Image.open(path) as f:
            rgb = np.asarray(f.convert("RGB"))
        assert rgb.shape == (H, W, 3), (name, rgb.shape)
        with open(path + ".rgb", "wb") as f:
            f.write(rgb.tobytes())
        with Image.open(path) as f:
            print("%s: %s" % (name, f.mode))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__)))
