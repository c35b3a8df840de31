#!/usr/bin/env python3
"""Draws the Lua example mods' textures: bouncer/client_data/textures/lua_bouncer.png
(a red rubber block with a spring) and garden/client_data/textures/seed.png (a
seed on a see-through tile). 16x16, deterministic, standard library only (as
scripts/textures.py draws the default game's).

    examples/lua_mods/textures.py
"""

import struct
import zlib
from pathlib import Path

SIZE = 16
HERE = Path(__file__).resolve().parent


def png(path, pixels):
    """Writes rows of (r, g, b, a) as an 8-bit RGBA PNG."""
    raw = b"".join(b"\0" + bytes(c for px in row for c in px) for row in pixels)

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    data = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def bouncer():
    """Red rubber with a darker rim and a yellow zigzag spring in the middle."""
    rows = []
    for y in range(SIZE):
        row = []
        for x in range(SIZE):
            edge = x in (0, SIZE - 1) or y in (0, SIZE - 1)
            colour = (150, 30, 30) if edge else (210, 50, 45)
            if 4 <= y <= 11 and abs(x - (6 + (2 if y % 4 < 2 else -2) + 2)) <= 1 and not edge:
                colour = (240, 210, 60)
            row.append(colour + (255,))
        rows.append(row)
    return rows


def seed():
    """A brown oval seed with a light stripe; transparent around it."""
    rows = []
    for y in range(SIZE):
        row = []
        for x in range(SIZE):
            dx, dy = (x - 7.5) / 4.0, (y - 7.5) / 6.0
            if dx * dx + dy * dy <= 1.0:
                colour = (200, 170, 110) if abs(x - 7.5) < 1 and 3 < y < 12 else (120, 80, 40)
                row.append(colour + (255,))
            else:
                row.append((0, 0, 0, 0))
        rows.append(row)
    return rows


def main():
    png(HERE / "bouncer" / "client_data" / "textures" / "lua_bouncer.png", bouncer())
    png(HERE / "garden" / "client_data" / "textures" / "seed.png", seed())


if __name__ == "__main__":
    main()
