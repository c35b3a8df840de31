#!/usr/bin/env python3
"""Draws the liquid module's textures (modules/liquid/client_data/textures/*.png).

Blocks (water_flowing, lava, lava_flowing) are 16x16 tiles made like the
terrain's (scripts/textures.py: base colour, seeded value noise, features);
the flowing ones streaked; water_flowing is RGBA, translucent (alpha 160) like
the terrain's water, so clients blend it. Items (bucket, bucket_water, bucket_lava) are
16x16 RGBA icons on a transparent background. Deterministic: running it
again writes the same bytes. Standard library only.

    modules/liquid/textures.py [OUT_DIR]
"""

import struct
import sys
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))
from textures import SIZE, clamp, png, tile  # noqa: E402

CLEAR = (0, 0, 0, 0)


def png_rgba(path, pixels):
    """Writes rows of (r, g, b, a) as an 8-bit RGBA PNG."""
    raw = b"".join(b"\0" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    data = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )
    path.write_bytes(data)


def streaked(rows, by):
    """Diagonal streaks: a flowing liquid."""
    for y in range(SIZE):
        for x in range(SIZE):
            if (x + 2 * y) % 7 == 0:
                rows[y][x] = tuple(clamp(c + by) for c in rows[y][x])
    return rows


def water_flowing():
    # Translucent like the terrain's water (alpha 160): clients blend it.
    rows = streaked(tile(55, (60, 106, 206), 12, fine=0.3), 30)
    return [[(*px, 160) for px in row] for row in rows]


def lava():
    rows = tile(56, (214, 92, 20), 40, fine=0.4)
    for y in range(SIZE):
        for x in range(SIZE):
            r, g, b = rows[y][x]
            if (x * 5 + y * 3) % 13 == 0:
                rows[y][x] = (255, clamp(g + 90), 40)
    return rows


def lava_flowing():
    return streaked(tile(57, (200, 80, 18), 30, fine=0.3), 60)


IRON = (170, 172, 178)
IRON_DARK = (104, 106, 112)


def bucket(fill=None):
    """A pail seen from the side: a trapezoid, its rim, its handle, and the
    liquid showing at the top when full."""
    rows = [[CLEAR] * SIZE for _ in range(SIZE)]
    for y in range(5, 15):
        half = 6 - (y - 5) // 3
        for x in range(8 - half, 8 + half):
            edge = x in (8 - half, 8 + half - 1) or y == 14
            rows[y][x] = (*(IRON_DARK if edge else IRON), 255)
    for x in range(2, 14):
        rows[5][x] = (*IRON_DARK, 255)
    if fill is not None:
        for x in range(3, 13):
            rows[6][x] = (*fill, 255)
            rows[7][x] = (*tuple(clamp(c - 30) for c in fill), 255)
    for x, y in ((3, 4), (4, 3), (5, 2), (6, 1), (7, 1), (8, 1), (9, 1), (10, 2), (11, 3), (12, 4)):
        rows[y][x] = (*IRON_DARK, 255)
    return rows


BLOCKS = {"water_flowing": water_flowing, "lava": lava, "lava_flowing": lava_flowing}
ITEMS = {
    "bucket": lambda: bucket(),
    "bucket_water": lambda: bucket((60, 110, 220)),
    "bucket_lava": lambda: bucket((240, 110, 20)),
}


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent / "client_data" / "textures"
    out.mkdir(parents=True, exist_ok=True)
    for name, draw in BLOCKS.items():
        pixels = draw()
        (png_rgba if len(pixels[0][0]) == 4 else png)(out / f"{name}.png", pixels)
    for name, draw in ITEMS.items():
        png_rgba(out / f"{name}.png", draw())
    print(f"wrote {len(BLOCKS) + len(ITEMS)} textures to {out}")


if __name__ == "__main__":
    main()
