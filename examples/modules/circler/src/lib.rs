use buildat_modkit::prelude::*;

#[derive(Default, Serialize, Deserialize)]
struct Circler;

impl Mod for Circler {
    fn setup(m: &mut Setup<Self>) {
        m.entity("circler", |_, _, e, _| {
            let angle = e.age * 0.8;
            let [x, y, z] = e.home;
            e.position = [x + 4.0 * angle.cos(), y, z + 4.0 * angle.sin()];
            e.yaw = -angle as f32;
            Ok(())
        })
        .place(|_, ctx| Ok(ctx.spawn_point()?.map(|[x, y, z]| [x, y + 2.0, z])))
        .looks([230, 180, 40], [0.8, 0.8, 0.8]);
    }
}

export_mod!(Circler);

#[cfg(test)]
mod tests {
    use buildat_modkit::interface::events::Tick;
    use buildat_modkit::testing::TestWorld;

    use super::*;

    #[test]
    fn the_circler_appears_above_spawn_and_circles_it() {
        let world = TestWorld::new();
        world.set_spawn(Some([0.5, 10.0, 0.5]));
        let mut m = world.load::<Circler>().unwrap();
        for _ in 0..40 {
            m.emit(&Tick { dtime: 0.05 }).unwrap();
        }
        let nodes = world.nodes();
        assert_eq!(nodes.len(), 1);
        let [x, y, z] = nodes[0].position;
        assert_eq!(y, 12.0, "two voxels above spawn");
        let radius = ((x - 0.5).powi(2) + (z - 0.5).powi(2)).sqrt();
        assert!((radius - 4.0).abs() < 1e-9, "{radius}");
        assert!(z > 0.6, "it went round: {x}, {z}");
    }
}
