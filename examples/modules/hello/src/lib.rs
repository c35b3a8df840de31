use buildat_modkit::prelude::*;

settings! {
    pub struct Greeting in "hello" {
        /// What /hello answers, before the count.
        pub text: String = "hello".to_string(),
    }
}

#[derive(Default, Serialize, Deserialize)]
struct Hello {
    count: u64,
}

impl Mod for Hello {
    fn setup(m: &mut Setup<Self>) {
        m.settings::<Greeting>();
        m.command("hello", "Greets you", Some("interact"), |s, ctx, _| {
            s.count += 1;
            Ok(format!("{} #{}", ctx.settings::<Greeting>()?.text, s.count))
        });
    }
}

export_mod!(Hello);

#[cfg(test)]
mod tests {
    use buildat_modkit::interface::testing::TestHost;
    use buildat_modkit::testing::TestWorld;

    use super::*;

    #[test]
    fn hello_answers_in_its_setting_s_words_and_counts_across_a_reload() {
        let kit = TestHost::new().name("hello").config("hello.text", "hi");
        let world = TestWorld::on(kit);
        let mut m = world.load::<Hello>().unwrap();
        assert_eq!(
            world.kit().commands()[0].privilege.as_deref(),
            Some("interact")
        );
        assert_eq!(world.declared()[0].settings[0].key, "hello.text");
        assert_eq!(m.command("hello", &[], Some("ann")).unwrap(), "hi #1");
        let mut m = m.reload::<Modkit<Hello>>().unwrap();
        assert_eq!(m.command("hello", &[], None).unwrap(), "hi #2");
    }
}
