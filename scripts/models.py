#!/usr/bin/env python3
"""Writes the default game's models: glTF 2.0 binary files (.glb) with their
textures (PNG beside them), deterministic, Python's standard library only.

    python3 scripts/models.py

writes modules/creatures/client_data/models/{chicken,cow,sheep}.{glb,png}
and modules/main/client_data/models/player.{glb,png}.

Each model is cuboids on a node hierarchy (a root, the body, and the head,
legs, arms or wings under the body), each cuboid's faces textured from an
8x8-texel tile of its model's 64x64 texture, with two animations the
client plays (docs/client.md "Models"): `walk` (legs, and arms, swing) and
`idle` (a small bob of the body and a nod of the head). glTF's
conventions: +y up, one unit a voxel, the front facing +z, the origin the
middle of the feet.
"""

import json
import math
import os
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TILE = 8
TILES_PER_ROW = 8
SIDE = TILE * TILES_PER_ROW

# Face order: +x, -x, +y, -y, +z (front), -z.
FACES = ["px", "nx", "py", "ny", "pz", "nz"]


class Random:
    """A small deterministic generator (an LCG), so the textures are the
    same on every run and machine."""

    def __init__(self, seed):
        self.state = seed & 0xFFFFFFFF

    def next(self):
        self.state = (self.state * 1664525 + 1013904223) & 0xFFFFFFFF
        return self.state >> 8

    def unit(self):
        return (self.next() & 0xFFFF) / 0xFFFF


def clamp(v):
    return max(0, min(255, int(round(v))))


def noisy(base, amount, rng):
    """A colour varied by up to `amount` per texel (brightness)."""
    d = (rng.unit() - 0.5) * 2 * amount
    return tuple(clamp(c + d) for c in base)


# Tile painters: (x, y, rng) -> (r, g, b); y 0 is the tile's top row.


def plain(base, amount=10):
    return lambda x, y, rng: noisy(base, amount, rng)


def banded(top, bottom, split):
    """`top` above row `split`, `bottom` from it (sleeves, hooves, shoes)."""
    return lambda x, y, rng: noisy(top if y < split else bottom, 8, rng)


def spotted(base, spot, spots):
    def paint(x, y, rng):
        for sx, sy, r in spots:
            if (x - sx) ** 2 + (y - sy) ** 2 <= r * r:
                return noisy(spot, 6, rng)
        return noisy(base, 10, rng)

    return paint


def face(skin, eye, mouth=None, eyes_row=3, eyes=(2, 5)):
    """A front face: two eyes (and a mouth)."""

    def paint(x, y, rng):
        if y == eyes_row and x in eyes:
            return eye
        if mouth is not None and y == 6 and 3 <= x <= 4:
            return mouth
        return noisy(skin, 6, rng)

    return paint


def wool(base):
    def paint(x, y, rng):
        curl = (x * 3 + y * 5) % 4 == 0
        return noisy(tuple(c - 22 for c in base) if curl else base, 8, rng)

    return paint


class Part:
    """A cuboid on its own node: `pivot` relative to the parent's pivot,
    `box` (min, max) relative to its own pivot, `tiles` a painter per face
    (or one for all)."""

    def __init__(self, name, parent, pivot, box, tiles):
        self.name = name
        self.parent = parent
        self.pivot = pivot
        self.box = box
        if callable(tiles):
            tiles = {f: tiles for f in FACES}
        self.tiles = tiles


def rot_x(degrees):
    a = math.radians(degrees) / 2
    return [math.sin(a), 0.0, 0.0, math.cos(a)]


def swing(angle, legs, period=0.8):
    """`walk`: each named leg swings about x through ±angle, the pairs in
    opposite phase (sign per leg), over `period` seconds."""
    times = [period * i / 4 for i in range(5)]
    curve = [0, 1, 0, -1, 0]
    return [
        (leg, "rotation", times, [rot_x(angle * sign * c) for c in curve])
        for leg, sign in legs
    ]


def idle(body, body_y, head, nod, period=2.0):
    """`idle`: the body sinks a little and the head nods, over `period`."""
    times = [0.0, period / 2, period]
    return [
        (body, "translation", times, [[0, body_y, 0], [0, body_y - 0.02, 0], [0, body_y, 0]]),
        (head, "rotation", times, [rot_x(0), rot_x(nod), rot_x(0)]),
    ]


def model_player():
    skin = (222, 178, 142)
    shirt = (38, 128, 140)
    trousers = (52, 66, 130)
    shoes = (58, 44, 36)
    hair = (84, 56, 30)
    parts = [
        Part("body", "root", [0, 0.75, 0], ([-0.25, 0, -0.13], [0.25, 0.7, 0.13]), plain(shirt)),
        Part(
            "head",
            "body",
            [0, 0.7, 0],
            ([-0.18, 0, -0.18], [0.18, 0.35, 0.18]),
            {
                "px": banded(hair, skin, 3),
                "nx": banded(hair, skin, 3),
                "py": plain(hair),
                "ny": plain(skin),
                "pz": face(skin, (40, 40, 70), (150, 80, 70), eyes_row=4),
                "nz": plain(hair),
            },
        ),
        Part("arm_left", "body", [0.33, 0.65, 0], ([-0.08, -0.65, -0.08], [0.08, 0, 0.08]), banded(shirt, skin, 3)),
        Part("arm_right", "body", [-0.33, 0.65, 0], ([-0.08, -0.65, -0.08], [0.08, 0, 0.08]), banded(shirt, skin, 3)),
        Part("leg_left", "body", [0.12, 0, 0], ([-0.11, -0.75, -0.11], [0.11, 0, 0.11]), banded(trousers, shoes, 6)),
        Part("leg_right", "body", [-0.12, 0, 0], ([-0.11, -0.75, -0.11], [0.11, 0, 0.11]), banded(trousers, shoes, 6)),
    ]
    walk = swing(35, [("leg_left", 1), ("leg_right", -1), ("arm_left", -1), ("arm_right", 1)])
    return parts, walk, idle("body", 0.75, "head", 4)


def model_cow():
    brown = (96, 64, 44)
    white = (236, 230, 218)
    hoof = (40, 30, 24)
    spots = [(2, 2, 1.6), (6, 5, 1.3), (1, 6, 1.0)]
    parts = [
        Part("body", "root", [0, 0.65, 0], ([-0.4, 0, -0.6], [0.4, 0.6, 0.55]), spotted(brown, white, spots)),
        Part(
            "head",
            "body",
            [0, 0.45, 0.55],
            ([-0.22, -0.1, 0], [0.22, 0.3, 0.35]),
            {
                "px": plain(brown),
                "nx": plain(brown),
                "py": plain(brown),
                "ny": plain(brown),
                "pz": face(brown, (16, 12, 10), (230, 170, 160)),
                "nz": plain(brown),
            },
        ),
    ]
    for name, x, z in [("leg_front_left", 0.25, 0.42), ("leg_front_right", -0.25, 0.42),
                       ("leg_back_left", 0.25, -0.45), ("leg_back_right", -0.25, -0.45)]:
        parts.append(Part(name, "body", [x, 0, z], ([-0.1, -0.65, -0.1], [0.1, 0, 0.1]), banded(brown, hoof, 6)))
    walk = swing(25, [("leg_front_left", 1), ("leg_back_right", 1),
                      ("leg_front_right", -1), ("leg_back_left", -1)], period=1.0)
    return parts, walk, idle("body", 0.65, "head", 8)


def model_sheep():
    fleece = (214, 214, 206)
    face_colour = (70, 62, 56)
    parts = [
        Part("body", "root", [0, 0.45, 0], ([-0.33, 0, -0.45], [0.33, 0.45, 0.4]), wool(fleece)),
        Part(
            "head",
            "body",
            [0, 0.3, 0.4],
            ([-0.15, -0.05, 0], [0.15, 0.25, 0.28]),
            {
                "px": plain(face_colour),
                "nx": plain(face_colour),
                "py": wool(fleece),
                "ny": plain(face_colour),
                "pz": face(face_colour, (230, 220, 200)),
                "nz": wool(fleece),
            },
        ),
    ]
    for name, x, z in [("leg_front_left", 0.18, 0.3), ("leg_front_right", -0.18, 0.3),
                       ("leg_back_left", 0.18, -0.32), ("leg_back_right", -0.18, -0.32)]:
        parts.append(Part(name, "body", [x, 0, z], ([-0.07, -0.45, -0.07], [0.07, 0, 0.07]), banded(fleece, face_colour, 3)))
    walk = swing(30, [("leg_front_left", 1), ("leg_back_right", 1),
                      ("leg_front_right", -1), ("leg_back_left", -1)], period=0.8)
    return parts, walk, idle("body", 0.45, "head", 10)


def model_chicken():
    white = (240, 232, 210)
    orange = (232, 150, 40)
    red = (200, 40, 36)
    parts = [
        Part("body", "root", [0, 0.2, 0], ([-0.13, 0, -0.18], [0.13, 0.22, 0.15]), plain(white, 8)),
        Part(
            "head",
            "body",
            [0, 0.18, 0.1],
            ([-0.08, 0, -0.07], [0.08, 0.2, 0.07]),
            {
                "px": face(white, (20, 20, 20), eyes=(5,)),
                "nx": face(white, (20, 20, 20), eyes=(2,)),
                "py": plain(red, 12),
                "ny": plain(white),
                "pz": plain(white),
                "nz": plain(white),
            },
        ),
        Part("beak", "head", [0, 0.1, 0.07], ([-0.04, -0.03, 0], [0.04, 0.03, 0.07]), plain(orange, 8)),
        Part("wing_left", "body", [0.14, 0.18, 0], ([-0.02, -0.15, -0.12], [0.02, 0, 0.1]), plain((226, 218, 196), 8)),
        Part("wing_right", "body", [-0.14, 0.18, 0], ([-0.02, -0.15, -0.12], [0.02, 0, 0.1]), plain((226, 218, 196), 8)),
        Part("leg_left", "body", [0.06, 0, 0], ([-0.02, -0.2, -0.02], [0.02, 0, 0.03]), plain(orange, 8)),
        Part("leg_right", "body", [-0.06, 0, 0], ([-0.02, -0.2, -0.02], [0.02, 0, 0.03]), plain(orange, 8)),
    ]
    walk = swing(40, [("leg_left", 1), ("leg_right", -1)], period=0.5)
    # Idle: the head pecks.
    return parts, walk, idle("body", 0.2, "head", 25, period=1.6)


def cuboid(box, tile_of_face):
    """A cuboid's 24 corners (position, normal, uv) and 36 indices,
    counter-clockwise seen from outside."""
    (x0, y0, z0), (x1, y1, z1) = box
    # Each face: normal, 4 corners (top-left, top-right, bottom-right,
    # bottom-left as seen from outside, +y up; the top and bottom faces
    # seen with -z, respectively +z, up).
    faces = {
        "px": ([1, 0, 0], [[x1, y1, z1], [x1, y1, z0], [x1, y0, z0], [x1, y0, z1]]),
        "nx": ([-1, 0, 0], [[x0, y1, z0], [x0, y1, z1], [x0, y0, z1], [x0, y0, z0]]),
        "py": ([0, 1, 0], [[x0, y1, z0], [x1, y1, z0], [x1, y1, z1], [x0, y1, z1]]),
        "ny": ([0, -1, 0], [[x0, y0, z1], [x1, y0, z1], [x1, y0, z0], [x0, y0, z0]]),
        "pz": ([0, 0, 1], [[x0, y1, z1], [x1, y1, z1], [x1, y0, z1], [x0, y0, z1]]),
        "nz": ([0, 0, -1], [[x1, y1, z0], [x0, y1, z0], [x0, y0, z0], [x1, y0, z0]]),
    }
    positions, normals, uvs, indices = [], [], [], []
    for name in FACES:
        normal, corners = faces[name]
        tile = tile_of_face[name]
        u0 = (tile % TILES_PER_ROW) * TILE / SIDE
        v0 = (tile // TILES_PER_ROW) * TILE / SIDE
        d = TILE / SIDE
        # A half-texel inset keeps neighbouring tiles out.
        e = 0.5 / SIDE
        face_uvs = [[u0 + e, v0 + e], [u0 + d - e, v0 + e], [u0 + d - e, v0 + d - e], [u0 + e, v0 + d - e]]
        base = len(positions)
        positions.extend(corners)
        normals.extend([normal] * 4)
        uvs.extend(face_uvs)
        # Seen from outside, the corners run clockwise (TL, TR, BR, BL):
        # wind the triangles the other way.
        indices.extend([base, base + 3, base + 2, base, base + 2, base + 1])
    return positions, normals, uvs, indices


def png(width, height, rgba):
    """An RGBA8 PNG."""

    def chunk(kind, data):
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    raw = b"".join(b"\x00" + bytes(rgba[y * width * 4:(y + 1) * width * 4]) for y in range(height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


class Glb:
    """Builds one binary glTF: accessors into one buffer."""

    def __init__(self):
        self.bin = bytearray()
        self.views = []
        self.accessors = []

    def accessor(self, values, kind, component=5126, minmax=False):
        fmt = {5126: "<f", 5123: "<H"}[component]
        width = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4}[kind]
        while len(self.bin) % 4:
            self.bin.append(0)
        start = len(self.bin)
        for v in values:
            for c in (v if width > 1 else [v]):
                self.bin += struct.pack(fmt, c)
        self.views.append({"buffer": 0, "byteOffset": start, "byteLength": len(self.bin) - start})
        acc = {"bufferView": len(self.views) - 1, "componentType": component, "count": len(values), "type": kind}
        if minmax:
            cols = list(zip(*values)) if width > 1 else [values]
            acc["min"] = [min(c) for c in cols]
            acc["max"] = [max(c) for c in cols]
        self.accessors.append(acc)
        return len(self.accessors) - 1

    def write(self, path, document):
        while len(self.bin) % 4:
            self.bin.append(0)
        document["buffers"] = [{"byteLength": len(self.bin)}]
        document["bufferViews"] = self.views
        document["accessors"] = self.accessors
        text = json.dumps(document, sort_keys=True, separators=(",", ":")).encode()
        while len(text) % 4:
            text += b" "
        total = 12 + 8 + len(text) + 8 + len(self.bin)
        with open(path, "wb") as f:
            f.write(b"glTF" + struct.pack("<II", 2, total))
            f.write(struct.pack("<I", len(text)) + b"JSON" + text)
            f.write(struct.pack("<I", len(self.bin)) + b"BIN\x00" + bytes(self.bin))


def build(name, parts, walk, idle_channels, folder):
    rng = Random(sum(ord(c) * 31 ** i for i, c in enumerate(name)))
    texture = [0] * (SIDE * SIDE * 4)
    painters = []

    def tile_for(painter):
        for i, p in enumerate(painters):
            if p is painter:
                return i
        painters.append(painter)
        return len(painters) - 1

    glb = Glb()
    nodes = [{"name": "root", "children": []}]
    meshes = []
    index_of = {"root": 0}
    for part in parts:
        tiles = {f: tile_for(part.tiles[f]) for f in FACES}
        positions, normals, uvs, indices = cuboid(part.box, tiles)
        primitive = {
            "attributes": {
                "POSITION": glb.accessor(positions, "VEC3", minmax=True),
                "NORMAL": glb.accessor(normals, "VEC3"),
                "TEXCOORD_0": glb.accessor(uvs, "VEC2"),
            },
            "indices": glb.accessor(indices, "SCALAR", component=5123),
            "material": 0,
        }
        meshes.append({"name": part.name, "primitives": [primitive]})
        index_of[part.name] = len(nodes)
        nodes.append({"name": part.name, "translation": part.pivot, "mesh": len(meshes) - 1})
        nodes[index_of[part.parent]].setdefault("children", []).append(index_of[part.name])
    assert len(painters) <= TILES_PER_ROW * TILES_PER_ROW
    for i, painter in enumerate(painters):
        tx, ty = (i % TILES_PER_ROW) * TILE, (i // TILES_PER_ROW) * TILE
        for y in range(TILE):
            for x in range(TILE):
                r, g, b = painter(x, y, rng)
                at = ((ty + y) * SIDE + tx + x) * 4
                texture[at:at + 4] = [r, g, b, 255]
    animations = []
    for anim_name, channels in [("walk", walk), ("idle", idle_channels)]:
        samplers, targets = [], []
        for node, path, times, values in channels:
            kind = "VEC4" if path == "rotation" else "VEC3"
            samplers.append({
                "input": glb.accessor(times, "SCALAR", minmax=True),
                "output": glb.accessor(values, kind),
                "interpolation": "LINEAR",
            })
            targets.append({"sampler": len(samplers) - 1, "target": {"node": index_of[node], "path": path}})
        animations.append({"name": anim_name, "samplers": samplers, "channels": targets})
    document = {
        "asset": {"version": "2.0", "generator": "buildat scripts/models.py"},
        "scene": 0,
        "scenes": [{"nodes": [0]}],
        "nodes": nodes,
        "meshes": meshes,
        "materials": [{
            "name": name,
            "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}, "metallicFactor": 0.0},
        }],
        "samplers": [{"magFilter": 9728, "minFilter": 9728}],
        "textures": [{"sampler": 0, "source": 0}],
        "images": [{"uri": name + ".png"}],
        "animations": animations,
    }
    os.makedirs(folder, exist_ok=True)
    glb.write(os.path.join(folder, name + ".glb"), document)
    with open(os.path.join(folder, name + ".png"), "wb") as f:
        f.write(png(SIDE, SIDE, texture))


def main():
    creatures = os.path.join(ROOT, "modules", "creatures", "client_data", "models")
    for name, make in [("chicken", model_chicken), ("cow", model_cow), ("sheep", model_sheep)]:
        build(name, *make(), creatures)
    build("player", *model_player(), os.path.join(ROOT, "modules", "main", "client_data", "models"))


if __name__ == "__main__":
    main()
