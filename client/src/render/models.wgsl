// The models' shader (client/src/render/models.rs): posed triangles with
// their material's colour and base colour texture, lit by the sun's
// direction and the daylight like boxes (never below a quarter), fogged
// into the sky like the terrain. Its resources are at group 3 only, so the
// other pipelines' groups stay bound.

struct Globals {
    view_projection: mat4x4<f32>,
    eye: vec4<f32>,
    // rgb: sky and fog colour.
    sky: vec4<f32>,
    // x: fog start, y: fog end (voxels from the eye).
    fog: vec4<f32>,
    // xyz: the direction the light travels; w: the daylight (0..1).
    light: vec4<f32>,
};

@group(3) @binding(0) var<uniform> globals: Globals;
@group(3) @binding(1) var skin: texture_2d<f32>;
@group(3) @binding(2) var skin_sampler: sampler;

struct ModelOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) colour: vec4<f32>,
    @location(2) textured: f32,
    @location(3) shade: f32,
    @location(4) world: vec3<f32>,
};

@vertex
fn vs_model(
    @location(0) position: vec3<f32>,
    @location(1) normal: vec3<f32>,
    @location(2) uv: vec2<f32>,
    @location(3) colour: vec4<f32>,
    @location(4) textured: f32,
) -> ModelOut {
    // Both sides are drawn: light the side facing the sun.
    let diffuse = abs(dot(normalize(normal), -globals.light.xyz));
    let lit = max(clamp(globals.light.w, 0.0, 1.0), 0.25);
    var out: ModelOut;
    out.clip = globals.view_projection * vec4<f32>(position, 1.0);
    out.uv = uv;
    out.colour = colour;
    out.textured = textured;
    out.shade = (0.55 + 0.45 * diffuse) * lit;
    out.world = position;
    return out;
}

@fragment
fn fs_model(in: ModelOut) -> @location(0) vec4<f32> {
    let texel = textureSample(skin, skin_sampler, in.uv);
    let base = mix(vec4<f32>(1.0), texel, in.textured) * in.colour;
    if base.a < 0.5 {
        discard;
    }
    let distance = length(in.world.xz - globals.eye.xz);
    let fog = clamp((distance - globals.fog.x) / max(globals.fog.y - globals.fog.x, 1.0), 0.0, 1.0);
    return vec4<f32>(mix(base.rgb * in.shade, globals.sky.rgb, fog), 1.0);
}
