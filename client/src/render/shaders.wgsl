// The renderer's shaders (client/src/render/gpu.rs): chunks from packed
// 8-byte vertices (texture array, directional light, ambient occlusion,
// smooth sunlight and block light, fog into the sky or, under water, a
// short blue fog and tint) in three flavours (solid, alpha-tested cutout,
// blended), and flat-coloured geometry in the world (boxes, the target's
// outline) or on the screen (the overlay).

struct Globals {
    view_projection: mat4x4<f32>,
    eye: vec4<f32>,
    // rgb: sky colour (the clear colour above water).
    sky: vec4<f32>,
    // x: fog start, y: fog end (voxels from the eye); z: 1 measures the
    // distance in 3D (under water), 0 horizontally.
    fog: vec4<f32>,
    // xyz: direction the light travels; w: the daylight (0..1, the time of
    // day's factor of the voxels' sunlight).
    light: vec4<f32>,
    // rgb: the colour fog fades into.
    fog_colour: vec4<f32>,
    // rgb: every world colour is multiplied by it (blue under water).
    tint: vec4<f32>,
    // The sun's diffuse light on each face (+x -x +y -y in the first, +z
    // -z in the second's xy): 0.5 + 0.5 * max(dot(normal, -light), 0).
    face_light: array<vec4<f32>, 2>,
};

@group(0) @binding(0) var<uniform> globals: Globals;
@group(0) @binding(1) var tiles: texture_2d_array<f32>;
@group(0) @binding(2) var tile_sampler: sampler;

// Texels per tile side (atlas::TILE).
const TILE: f32 = 16.0;
// log2(0.8): each light level is 0.8 times as bright as the one above.
const LOG2_FALLOFF: f32 = -0.32192809;

struct ChunkOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) @interpolate(flat) layer: u32,
    // x: the light's factor; y: the fog's ramp (0 at its start, 1 at its
    // end), per vertex: interpolating it is close enough over a quad and
    // saves the fragments a square root.
    @location(2) shade_fog: vec2<f32>,
};

// A packed vertex (mesh::Vertex): `a` = x 0-5, y 6-11, z 12-17, face
// 18-20, ambient occlusion 21-22, lowered 23; `b` = layer 0-15, sunlight
// sum 16-21, block light sum 22-27. `origin`: the chunk's corner (per
// instance).
@vertex
fn vs_chunk(@location(0) packed: vec2<u32>, @location(1) origin: vec4<f32>) -> ChunkOut {
    let a = packed.x;
    let b = packed.y;
    let lowered = f32((a >> 23u) & 1u) * 0.125;
    let local = vec3<f32>(f32(a & 63u), f32((a >> 6u) & 63u) - lowered, f32((a >> 12u) & 63u));
    let face = min((a >> 18u) & 7u, 5u);
    // The texture repeats once per voxel: u, v from the position in the
    // face's plane (v down the sides).
    var uv: vec2<f32>;
    if face < 2u {
        uv = vec2<f32>(local.z, -local.y);
    } else if face < 4u {
        uv = vec2<f32>(local.x, local.z);
    } else {
        uv = vec2<f32>(local.x, -local.y);
    }
    let ao = f32((a >> 21u) & 3u) / 3.0;
    let diffuse = globals.face_light[face / 4u][face % 4u];
    // Smooth light: each sum is of the 4 levels around the vertex; the
    // sunlight scaled by the daylight or the block light, whichever is
    // brighter, each level 0.8 times the one above, never darker than a
    // faint ambient.
    let sun_level = f32((b >> 16u) & 63u) * 0.25;
    let block_level = f32((b >> 22u) & 63u) * 0.25;
    let daylight = clamp(globals.light.w, 0.0, 1.0);
    // 0.8^(15 - level) as one exp2 of the brighter of the two (exp2 is
    // monotonic; pow costs a log2 more per vertex on a CPU rasteriser).
    let sun_exponent = (15.0 - min(sun_level, 15.0)) * LOG2_FALLOFF + log2(max(daylight, 1e-6));
    let torch_exponent = (15.0 - min(block_level, 15.0)) * LOG2_FALLOFF;
    let brightness = max(exp2(max(sun_exponent, torch_exponent)), 0.05);
    let world = origin.xyz + local;
    var out: ChunkOut;
    out.clip = globals.view_projection * vec4<f32>(world, 1.0);
    out.uv = uv;
    out.layer = b & 0xffffu;
    let shade = diffuse * (0.4 + 0.6 * ao) * brightness;
    out.shade_fog = vec2<f32>(shade, fog_ramp(world - globals.eye.xyz));
    return out;
}

// Where a point at `relative` to the eye is on the fog's ramp, unclamped.
fn fog_ramp(relative: vec3<f32>) -> f32 {
    // Horizontal above water, in 3D under it (one square root either way).
    let distance = length(select(vec3<f32>(relative.x, 0.0, relative.z), relative, globals.fog.z > 0.5));
    return (distance - globals.fog.x) / max(globals.fog.y - globals.fog.x, 1.0);
}

fn fogged(colour: vec3<f32>, ramp: f32) -> vec3<f32> {
    return mix(colour * globals.tint.rgb, globals.fog_colour.rgb, clamp(ramp, 0.0, 1.0));
}

// The tile's texel at `uv` (repeating once per voxel): a plain fetch, no
// sampler (nearest, one level: the same texel, cheaper on a CPU
// rasteriser).
fn texel_at(uv: vec2<f32>, layer: u32) -> vec4<f32> {
    let at = vec2<i32>(min(fract(uv) * TILE, vec2<f32>(TILE - 1.0)));
    return textureLoad(tiles, at, layer, 0);
}

@fragment
fn fs_chunk(in: ChunkOut) -> @location(0) vec4<f32> {
    let texel = texel_at(in.uv, in.layer);
    return vec4<f32>(fogged(texel.rgb * in.shade_fog.x, in.shade_fog.y), 1.0);
}

// Leaves: texels with alpha below one half are holes.
@fragment
fn fs_cutout(in: ChunkOut) -> @location(0) vec4<f32> {
    let texel = texel_at(in.uv, in.layer);
    if texel.a < 0.5 {
        discard;
    }
    return vec4<f32>(fogged(texel.rgb * in.shade_fog.x, in.shade_fog.y), 1.0);
}

// Water, ice, glass: blended with what is behind by the texel's alpha; the
// fog also fades them out, so far water is the fog's colour.
@fragment
fn fs_blended(in: ChunkOut) -> @location(0) vec4<f32> {
    let texel = texel_at(in.uv, in.layer);
    let fog = clamp(in.shade_fog.y, 0.0, 1.0);
    let colour = mix(texel.rgb * in.shade_fog.x * globals.tint.rgb, globals.fog_colour.rgb, fog);
    return vec4<f32>(colour, mix(texel.a, 1.0, fog));
}

struct FlatOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) colour: vec4<f32>,
};

@vertex
fn vs_world_flat(@location(0) position: vec3<f32>, @location(1) colour: vec4<f32>) -> FlatOut {
    var out: FlatOut;
    out.clip = globals.view_projection * vec4<f32>(position, 1.0);
    // Boxes (players, creatures) dim with the daylight as the terrain does,
    // never below a quarter; the black outline stays black.
    let lit = max(clamp(globals.light.w, 0.0, 1.0), 0.25);
    out.colour = vec4<f32>(fogged(colour.rgb * lit, fog_ramp(position - globals.eye.xyz)), colour.a);
    return out;
}

@vertex
fn vs_screen_flat(@location(0) position: vec3<f32>, @location(1) colour: vec4<f32>) -> FlatOut {
    var out: FlatOut;
    out.clip = vec4<f32>(position.xy, 0.0, 1.0);
    out.colour = colour;
    return out;
}

@fragment
fn fs_flat(in: FlatOut) -> @location(0) vec4<f32> {
    return in.colour;
}
