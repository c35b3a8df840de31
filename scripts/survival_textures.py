#!/usr/bin/env python3
"""Draws the survival content's textures (modules/survival/client_data/textures/*.png).

Blocks (planks, chest, crafting table, saplings, bed) are 16x16 RGB tiles made like the
terrain's (scripts/textures.py: base colour, seeded value noise, features);
items (stick, lumps, pickaxes, axes, shovels) are 16x16 RGBA icons on a
transparent background, drawn from a few strokes. Deterministic: running it
again writes the same bytes. Standard library only.

    scripts/survival_textures.py [OUT_DIR]
"""

import random
import struct
import sys
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from textures import SIZE, clamp, png, specks, tile  # noqa: E402

CLEAR = (0, 0, 0, 0)


def png_rgba(path, pixels):
    """Writes rows of (r, g, b, a) as an 8-bit RGBA PNG."""
    raw = b"".join(b"\0" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.write_bytes(data)


def shade(colour, by):
    return tuple(clamp(c + by) for c in colour)


# Blocks.


def planks():
    rows = tile(40, (170, 128, 78), 12, fine=0.3)
    for y in range(SIZE):
        for x in range(SIZE):
            board = y // 4
            if y % 4 == 3 or (x + board * 5) % 16 == 0:
                rows[y][x] = shade(rows[y][x], -34)
            elif (x * 7 + y * 3) % 11 == 0:
                rows[y][x] = shade(rows[y][x], -12)
    return rows


def framed(rows, colour):
    for i in range(SIZE):
        for x, y in ((i, 0), (i, SIZE - 1), (0, i), (SIZE - 1, i)):
            rows[y][x] = colour
    return rows


def chest_side():
    return framed(shade_tile(planks(), -18), (84, 58, 32))


def chest_top():
    rows = framed(shade_tile(planks(), -10), (84, 58, 32))
    return rows


def chest_front():
    rows = chest_side()
    for x in range(SIZE):
        rows[5][x] = (84, 58, 32)
    for y in range(4, 9):
        for x in range(6, 10):
            rows[y][x] = (196, 180, 96) if (x, y) != (7, 6) else (40, 36, 30)
    return rows


def shade_tile(rows, by):
    return [[shade(px, by) for px in row] for row in rows]


def crafting_table_top():
    rows = planks()
    for i in range(1, SIZE - 1):
        for x, y in ((i, 5), (i, 10), (5, i), (10, i)):
            rows[y][x] = shade(rows[y][x], -44)
    return framed(rows, (96, 66, 38))


def crafting_table_side():
    rows = framed(planks(), (96, 66, 38))
    # A saw and a hammer hanging on the side.
    for x in range(3, 8):
        rows[4][x] = (190, 190, 196)
        rows[5][x] = (150, 150, 156)
    rows[4][8] = rows[5][8] = (120, 84, 48)
    for y in range(8, 13):
        rows[y][11] = (120, 84, 48)
    for x in range(9, 14):
        rows[8][x] = (150, 150, 156)
    return rows


def sapling():
    """A young tree drawn on an opaque tile (the renderer has no cutout):
    a thin stem from a patch of soil, a few leafy tufts, on pale leaves."""
    rows = tile(60, (96, 150, 72), 18, fine=0.6)
    rng = random.Random(61)
    for y in range(SIZE):
        for x in range(SIZE):
            rows[y][x] = shade(rows[y][x], 40)
    for y in range(12, SIZE):
        for x in range(SIZE):
            rows[y][x] = shade((110, 82, 54), rng.randint(-12, 12))
    for y in range(5, 13):
        rows[y][7] = (104, 74, 42)
        rows[y][8] = (84, 58, 32)
    for cx, cy, r in ((8, 4, 3.2), (4, 7, 2.4), (12, 7, 2.4)):
        for y in range(SIZE):
            for x in range(SIZE):
                if (x - cx) ** 2 + (y - cy) ** 2 < r * r:
                    rows[y][x] = shade((46, 112, 40), rng.randint(-18, 14))
    return rows


def pine_sapling():
    """A young pine: a stem and tiers of dark needles narrowing upwards."""
    rows = tile(62, (110, 150, 120), 16, fine=0.6)
    rng = random.Random(63)
    for y in range(SIZE):
        for x in range(SIZE):
            rows[y][x] = shade(rows[y][x], 36)
    for y in range(12, SIZE):
        for x in range(SIZE):
            rows[y][x] = shade((110, 82, 54), rng.randint(-12, 12))
    for y in range(2, 13):
        rows[y][7] = (96, 66, 38)
        rows[y][8] = (78, 52, 30)
    for top, half in ((1, 2), (4, 4), (7, 5)):
        for dy in range(4):
            for x in range(8 - half + dy // 2, 8 + half - dy // 2):
                if dy + top < 12 and abs(x - 7.5) <= half - (3 - dy) // 2:
                    rows[top + dy][x] = shade((34, 84, 50), rng.randint(-14, 12))
    return rows


BLANKET = (176, 40, 44)
PILLOW = (232, 228, 220)


def bed_top():
    rows = tile(70, BLANKET, 14, fine=0.4)
    for y in range(1, 5):
        for x in range(2, SIZE - 2):
            rows[y][x] = shade(PILLOW, -8 if y == 4 else 0)
    for y in range(6, SIZE):
        if y % 4 == 2:
            for x in range(SIZE):
                rows[y][x] = shade(rows[y][x], -30)
    return framed(rows, (84, 58, 32))


def bed_side():
    rows = planks()
    for y in range(0, 7):
        for x in range(SIZE):
            rows[y][x] = shade(BLANKET, -10 if y == 6 else ((x * 5 + y) % 7) - 3)
    for y in range(7, SIZE):
        for x in (0, 1, SIZE - 2, SIZE - 1):
            rows[y][x] = (84, 58, 32)
    return rows


# Items: strokes on a clear tile.

WOOD = (156, 114, 64)
STONE = (132, 132, 136)
IRON = (196, 198, 210)
HANDLE = (120, 84, 46)


def clear():
    return [[CLEAR for _ in range(SIZE)] for _ in range(SIZE)]


def put(rows, x, y, colour):
    if 0 <= x < SIZE and 0 <= y < SIZE:
        rows[y][x] = colour + (255,) if len(colour) == 3 else colour


def handle(rows, length=10):
    """A stick from the bottom left corner up towards the top right."""
    for i in range(length):
        put(rows, 2 + i, 13 - i, HANDLE)
        put(rows, 3 + i, 13 - i, shade(HANDLE, -30))
    return rows


def stick():
    return handle(clear(), 12)


def pick(material):
    rows = handle(clear())
    # An arc over the handle's top: from the top left to the right side.
    for x, y in ((4, 3), (5, 2), (6, 2), (7, 1), (8, 1), (9, 1), (10, 2), (11, 2), (12, 3), (13, 4), (13, 5), (14, 6), (14, 7)):
        put(rows, x, y, material)
        put(rows, x, y + 1, shade(material, -36))
    return rows


def axe(material):
    rows = handle(clear())
    for y in range(1, 8):
        for x in range(8, 14):
            if (x - 8) + (7 - y) < 9 and not (x < 10 and y > 5):
                put(rows, x, y, material if (x + y) % 5 else shade(material, -30))
    return rows


def shovel(material):
    rows = handle(clear(), 8)
    for y in range(1, 7):
        for x in range(9, 15):
            dx, dy = x - 12, y - 3.5
            if dx * dx + dy * dy < 7.5:
                put(rows, x, y, material if y < 5 else shade(material, -30))
    return rows


def lump(seed, base, fleck):
    rng = random.Random(seed)
    rows = clear()
    for y in range(4, 13):
        for x in range(3, 13):
            dx, dy = x - 7.5, y - 8.5
            if dx * dx / 20 + dy * dy / 16 + rng.uniform(-0.15, 0.15) < 1:
                put(rows, x, y, shade(base, rng.randint(-14, 14)))
    for _ in range(6):
        x, y = rng.randrange(5, 11), rng.randrange(6, 11)
        if rows[y][x] != CLEAR:
            put(rows, x, y, fleck)
    return rows


BLOCKS = {
    "planks": planks,
    "chest_side": chest_side,
    "chest_top": chest_top,
    "chest_front": chest_front,
    "crafting_table_top": crafting_table_top,
    "crafting_table_side": crafting_table_side,
    "sapling": sapling,
    "pine_sapling": pine_sapling,
    "bed_top": bed_top,
    "bed_side": bed_side,
}

ITEMS = {
    "stick": stick,
    "coal_lump": lambda: lump(50, (40, 40, 44), (70, 70, 76)),
    "iron_lump": lambda: lump(51, (168, 124, 96), (222, 186, 150)),
}
for material, colour in (("wood", WOOD), ("stone", STONE), ("iron", IRON)):
    for tool, draw in (("pick", pick), ("axe", axe), ("shovel", shovel)):
        ITEMS[f"{tool}_{material}"] = (lambda draw, colour: lambda: draw(colour))(draw, colour)


def main():
    default = Path(__file__).resolve().parent.parent / "modules/survival/client_data/textures"
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    out.mkdir(parents=True, exist_ok=True)
    for name, draw in BLOCKS.items():
        png(out / f"{name}.png", draw())
        print(out / f"{name}.png")
    for name, draw in ITEMS.items():
        png_rgba(out / f"{name}.png", draw())
        print(out / f"{name}.png")


if __name__ == "__main__":
    main()
