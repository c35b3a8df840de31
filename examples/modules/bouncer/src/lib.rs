use buildat_modkit::prelude::*;

#[derive(Default, Serialize, Deserialize)]
struct Bouncer {
    bounces: u64,
}

impl Mod for Bouncer {
    fn setup(m: &mut Setup<Self>) {
        m.block(BlockDefinition::simple("bouncer", "bouncer.png"))
            .on_place(|_, ctx, [x, y, z]| ctx.set_voxel([x, y + 1, z], "torch"))
            .on_dig(|_, ctx, pos| ctx.announce(&format!("the bouncer at {pos:?} is gone")))
            .on_touch(|s, ctx, pos| {
                s.bounces += 1;
                log::info!("bouncer {pos:?} touched by {:?}", ctx.player());
                Ok(())
            })
            .on_use(|s, ctx, _| {
                let who = ctx.player().unwrap_or("?").to_string();
                ctx.announce(&format!("{who} bounces ({})", s.bounces))
            });
    }
}

export_mod!(Bouncer);

#[cfg(test)]
mod tests {
    use buildat_modkit::main_api::ChatLine;
    use buildat_modkit::network_api::receive::testing::sent;
    use buildat_modkit::testing::TestWorld;

    use super::*;

    #[test]
    fn a_bouncer_puts_a_torch_on_itself_counts_touches_says_who_used_it_and_when_dug() {
        let world = TestWorld::new();
        world.fill([-2, 0, -2], [2, 0, 2], "stone");
        world.join("ann", 7);
        let mut m = world.load::<Bouncer>().unwrap();
        world
            .place(&mut m, [0, 1, 0], "bouncer", Some("ann"))
            .unwrap();
        assert_eq!(world.voxel([0, 2, 0]).as_deref(), Some("torch"));
        assert_eq!(world.edits()[0].pos, [0, 2, 0]);
        assert_eq!(m.module().state().bounces, 1, "its torch touched it");
        world.place(&mut m, [1, 1, 0], "dirt", Some("ann")).unwrap();
        assert_eq!(m.module().state().bounces, 2);
        world.use_block(&mut m, [0, 1, 0], "ann").unwrap();
        world.dig(&mut m, [0, 1, 0], Some("ann")).unwrap();
        let told: Vec<String> = sent::<ChatLine>(world.kit())
            .into_iter()
            .map(|(_, line)| line.text)
            .collect();
        assert_eq!(
            told,
            ["ann bounces (2)", "the bouncer at [0, 1, 0] is gone"]
        );
    }
}
