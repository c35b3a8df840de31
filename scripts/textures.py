#!/usr/bin/env python3
"""Draws the default game's block textures (modules/main/client_data/textures/*.png).

Each texture is 16x16 RGB, drawn from a base colour, seeded value noise and
a few features (ore specks, grass blades, sand ripples, water waves,
bark lines, mortar, moss), so the
default game ships textures of its own. The see-through ones are RGBA, and
their alpha decides how the client draws them: leaves have holes (alpha 0:
alpha-tested), water, ice and glass are translucent (alpha between 0 and
255: blended). Deterministic: running it again writes the same bytes.
Standard library only.

    scripts/textures.py [OUT_DIR]
"""

import random
import struct
import sys
import zlib
from pathlib import Path

SIZE = 16


def png(path, pixels):
    """Writes rows of (r, g, b) as an 8-bit RGB PNG, or of (r, g, b, a) as RGBA."""
    channels = len(pixels[0][0])
    raw = b"".join(b"\0" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    colour_type = 6 if channels == 4 else 2
    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, colour_type, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(data)


def clamp(v):
    return max(0, min(255, int(round(v))))


def noise(seed, scale):
    """Value noise on the 16x16 tile, wrapping, in [-1, 1]."""
    rng = random.Random(seed)
    cells = SIZE // scale
    grid = [[rng.uniform(-1, 1) for _ in range(cells)] for _ in range(cells)]

    def at(x, y):
        fx, fy = x / scale, y / scale
        x0, y0 = int(fx) % cells, int(fy) % cells
        x1, y1 = (x0 + 1) % cells, (y0 + 1) % cells
        tx, ty = fx - int(fx), fy - int(fy)
        top = grid[y0][x0] * (1 - tx) + grid[y0][x1] * tx
        bottom = grid[y1][x0] * (1 - tx) + grid[y1][x1] * tx
        return top * (1 - ty) + bottom * ty

    return at


def tile(seed, base, spread, fine=0.5):
    coarse, detail = noise(seed, 4), noise(seed + 1, 1)
    rows = []
    for y in range(SIZE):
        row = []
        for x in range(SIZE):
            n = coarse(x, y) * (1 - fine) + detail(x, y) * fine
            row.append(tuple(clamp(c + n * spread) for c in base))
        rows.append(row)
    return rows


def specks(rows, seed, colour, count):
    rng = random.Random(seed)
    for _ in range(count):
        x, y = rng.randrange(SIZE), rng.randrange(SIZE)
        for dx, dy in ((0, 0), (1, 0), (0, 1)):
            if rng.random() < 0.8:
                rows[(y + dy) % SIZE][(x + dx) % SIZE] = colour
    return rows


def stone():
    return tile(1, (128, 128, 132), 26)


def dirt():
    return specks(tile(2, (122, 86, 58), 22), 20, (96, 66, 44), 10)


def grass():
    rows = tile(3, (92, 156, 64), 24)
    rng = random.Random(30)
    for _ in range(22):
        x, y = rng.randrange(SIZE), rng.randrange(SIZE)
        rows[y][x] = (118, 184, 80) if rng.random() < 0.5 else (70, 128, 48)
    return rows


def sand():
    rows = tile(4, (222, 206, 150), 14)
    for y in range(0, SIZE, 5):
        for x in range(SIZE):
            r, g, b = rows[(y + x // 6) % SIZE][x]
            rows[(y + x // 6) % SIZE][x] = (clamp(r - 14), clamp(g - 14), clamp(b - 12))
    return rows


def alpha(rows, a):
    """Rows of (r, g, b) with alpha `a` (a number, or a function of x, y)."""
    at = a if callable(a) else (lambda x, y: a)
    return [[(*px, at(x, y)) for x, px in enumerate(row)] for y, row in enumerate(rows)]


def water():
    rows = tile(5, (52, 96, 196), 14, fine=0.2)
    for y in range(2, SIZE, 6):
        for x in range(SIZE):
            yy = (y + (x // 4) % 2) % SIZE
            r, g, b = rows[yy][x]
            rows[yy][x] = (clamp(r + 30), clamp(g + 34), clamp(b + 30))
    return alpha(rows, 160)


def coal_ore():
    return specks(stone(), 6, (34, 34, 36), 7)


def iron_ore():
    return specks(stone(), 7, (206, 160, 120), 7)


def gold_ore():
    return specks(stone(), 8, (232, 196, 64), 7)


def gravel():
    rows = tile(9, (136, 128, 122), 30, fine=0.8)
    rng = random.Random(90)
    for _ in range(18):
        x, y = rng.randrange(SIZE), rng.randrange(SIZE)
        rows[y][x] = (96, 90, 86) if rng.random() < 0.5 else (170, 162, 156)
    return rows


def sandstone():
    rows = tile(10, (214, 190, 132), 10)
    for y in range(3, SIZE, 4):
        for x in range(SIZE):
            r, g, b = rows[y][x]
            rows[y][x] = (clamp(r - 24), clamp(g - 24), clamp(b - 20))
    return rows


def snow():
    return tile(11, (236, 240, 246), 8)


def ice():
    rows = tile(12, (156, 196, 236), 12, fine=0.2)
    for i in range(SIZE):
        for x, y in ((i, (i * 3) % SIZE), ((i + 7) % SIZE, i)):
            r, g, b = rows[y][x]
            rows[y][x] = (clamp(r + 40), clamp(g + 36), clamp(b + 18))
    return alpha(rows, 180)


def wood():
    rows = tile(13, (112, 82, 50), 12, fine=0.3)
    for y in range(SIZE):
        for x in range(0, SIZE, 3):
            xx = (x + (y // 5)) % SIZE
            r, g, b = rows[y][xx]
            rows[y][xx] = (clamp(r - 26), clamp(g - 22), clamp(b - 16))
    return rows


def holes(rows, seed, share):
    """Cuts see-through holes (alpha 0) where value noise is lowest, about
    `share` of the texels; the rest stays fully opaque."""
    at = noise(seed, 2)
    values = sorted(at(x, y) for y in range(SIZE) for x in range(SIZE))
    cut = values[int(share * len(values))]
    return alpha(rows, lambda x, y: 0 if at(x, y) < cut else 255)


def leaves():
    rows = specks(tile(14, (58, 124, 44), 30, fine=0.8), 140, (34, 84, 28), 14)
    return holes(rows, 141, 0.3)


def pine_leaves():
    rows = specks(tile(15, (40, 92, 60), 26, fine=0.8), 150, (24, 60, 40), 14)
    return holes(rows, 151, 0.25)


def glass():
    """Clear panes in a light frame, a few streaks of shine."""
    rows = tile(19, (206, 226, 232), 6)

    def see_through(x, y):
        if x in (0, SIZE - 1) or y in (0, SIZE - 1):
            return 230
        if (x + y) % 11 == 0 and 3 <= x <= 9:
            return 110
        return 36

    return alpha(rows, see_through)


def cactus():
    rows = tile(16, (74, 142, 62), 12, fine=0.3)
    for y in range(SIZE):
        for x in (1, 5, 10, 14):
            r, g, b = rows[y][x]
            rows[y][x] = (clamp(r - 22), clamp(g - 30), clamp(b - 20))
    for y, x in ((2, 3), (6, 12), (9, 7), (13, 2), (12, 11)):
        rows[y][x] = (236, 230, 190)
    return rows


def cobblestone():
    rows = tile(17, (118, 118, 120), 22, fine=0.7)
    # Mortar lines around irregular stones.
    for y in range(SIZE):
        for x in range(SIZE):
            if y % 5 == 0 or (x + 3 * (y // 5)) % 6 == 0:
                r, g, b = rows[y][x]
                rows[y][x] = (clamp(r - 38), clamp(g - 38), clamp(b - 36))
    return rows


def mossy_cobblestone():
    rows = cobblestone()
    rng = random.Random(180)
    for _ in range(60):
        x, y = rng.randrange(SIZE), rng.randrange(SIZE)
        rows[y][x] = (78, 118, 56) if rng.random() < 0.6 else (58, 96, 44)
    return rows


TEXTURES = {
    "stone": stone,
    "dirt": dirt,
    "grass": grass,
    "sand": sand,
    "water": water,
    "coal_ore": coal_ore,
    "iron_ore": iron_ore,
    "gold_ore": gold_ore,
    "gravel": gravel,
    "sandstone": sandstone,
    "snow": snow,
    "ice": ice,
    "wood": wood,
    "leaves": leaves,
    "pine_leaves": pine_leaves,
    "cactus": cactus,
    "cobblestone": cobblestone,
    "mossy_cobblestone": mossy_cobblestone,
    "glass": glass,
}


def main():
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "modules/main/client_data/textures"
    out.mkdir(parents=True, exist_ok=True)
    for name, draw in TEXTURES.items():
        png(out / f"{name}.png", draw())
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
