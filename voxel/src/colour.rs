//! The colour a block is drawn in where no texture is at hand: top-down
//! maps, and the 3D client for blocks without a texture.
//!
//! Owns: one colour per block name: the default game's blocks by a table,
//! any other name by a hash of it (stable, mid-bright, so unknown blocks
//! stay distinguishable). Does not own: textures or shading.

/// The colour of the block named `block_name`.
pub fn block_colour(block_name: &str) -> [u8; 3] {
    match block_name {
        "stone" => [125, 125, 125],
        "cobblestone" => [105, 105, 108],
        "mossy_cobblestone" => [92, 118, 88],
        "dirt" => [130, 90, 55],
        "grass" => [76, 158, 56],
        "sand" => [222, 208, 150],
        "sandstone" => [200, 178, 120],
        "gravel" => [140, 132, 126],
        "water" => [40, 90, 200],
        "ice" => [170, 210, 240],
        "snow" => [244, 248, 252],
        "wood" => [110, 80, 45],
        "leaves" => [48, 120, 40],
        "pine_leaves" => [34, 88, 50],
        "cactus" => [60, 140, 60],
        "coal_ore" => [60, 60, 60],
        "iron_ore" => [190, 150, 120],
        "gold_ore" => [230, 190, 60],
        "torch" => [255, 200, 80],
        name if name == "ore" || name.ends_with("_ore") => [230, 140, 30],
        name => hashed_colour(name),
    }
}

/// A colour from the name's FNV-1a hash, each channel in 64..=223.
fn hashed_colour(name: &str) -> [u8; 3] {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in name.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    [0, 8, 16].map(|shift| 64 + ((hash >> shift) & 0xff) as u8 % 160)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_blocks_have_their_colour_and_others_a_stable_distinct_one() {
        assert_eq!(block_colour("water"), [40, 90, 200]);
        assert_eq!(block_colour("mymod:lamp"), block_colour("mymod:lamp"));
        assert_ne!(block_colour("mymod:lamp"), block_colour("mymod:door"));
        for channel in block_colour("mymod:lamp") {
            assert!((64..=223).contains(&channel));
        }
    }
}
