// The renderer's shaders (client/src/render/gpu.rs): chunks (texture array,
// directional light, per-vertex ambient occlusion, the server's per-voxel
// sunlight and block light, fog into the sky), and
// flat-coloured geometry in the world (boxes, the target's outline) or on
// the screen (the overlay).

struct Globals {
    view_projection: mat4x4<f32>,
    eye: vec4<f32>,
    // rgb: sky and fog colour.
    sky: vec4<f32>,
    // x: fog start, y: fog end (voxels from the eye).
    fog: vec4<f32>,
    // xyz: direction the light travels; w: the daylight (0..1, the time of
    // day's factor of the voxels' sunlight).
    light: vec4<f32>,
};

@group(0) @binding(0) var<uniform> globals: Globals;
@group(0) @binding(1) var tiles: texture_2d_array<f32>;
@group(0) @binding(2) var tile_sampler: sampler;

struct ChunkOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) @interpolate(flat) layer: u32,
    @location(2) shade: f32,
    @location(3) world: vec3<f32>,
};

@vertex
fn vs_chunk(
    @location(0) position: vec3<f32>,
    @location(1) uv: vec2<f32>,
    @location(2) layer: u32,
    @location(3) face_ao: u32,
) -> ChunkOut {
    var normals = array<vec3<f32>, 6>(
        vec3<f32>(1.0, 0.0, 0.0), vec3<f32>(-1.0, 0.0, 0.0),
        vec3<f32>(0.0, 1.0, 0.0), vec3<f32>(0.0, -1.0, 0.0),
        vec3<f32>(0.0, 0.0, 1.0), vec3<f32>(0.0, 0.0, -1.0),
    );
    let normal = normals[face_ao & 7u];
    let ao = f32((face_ao >> 3u) & 3u) / 3.0;
    let diffuse = max(dot(normal, -globals.light.xyz), 0.0);
    // The light in front of the face (bits 5-12): sunlight (its brightness
    // scaled by the daylight) or block light, whichever is brighter, each
    // level 0.8 times the one above, never darker than a faint ambient.
    let voxel_light = (face_ao >> 5u) & 255u;
    let daylight = clamp(globals.light.w, 0.0, 1.0);
    let sun = pow(0.8, 15.0 - f32((voxel_light >> 4u) & 15u)) * daylight;
    let torch = pow(0.8, 15.0 - f32(voxel_light & 15u));
    let brightness = max(max(sun, torch), 0.05);
    var out: ChunkOut;
    out.clip = globals.view_projection * vec4<f32>(position, 1.0);
    out.uv = uv;
    out.layer = layer;
    out.shade = (0.5 + 0.5 * diffuse) * (0.4 + 0.6 * ao) * brightness;
    out.world = position;
    return out;
}

fn fogged(colour: vec3<f32>, world: vec3<f32>) -> vec3<f32> {
    let distance = length(world.xz - globals.eye.xz);
    let amount = clamp((distance - globals.fog.x) / max(globals.fog.y - globals.fog.x, 1.0), 0.0, 1.0);
    return mix(colour, globals.sky.rgb, amount);
}

@fragment
fn fs_chunk(in: ChunkOut) -> @location(0) vec4<f32> {
    let texel = textureSample(tiles, tile_sampler, in.uv, in.layer);
    return vec4<f32>(fogged(texel.rgb * in.shade, in.world), 1.0);
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
    out.colour = vec4<f32>(fogged(colour.rgb * lit, position), colour.a);
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
