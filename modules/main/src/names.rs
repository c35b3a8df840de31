//! Player names, pure: what a name may hold and when two names are the
//! same account.
//!
//! Owns: normalising a name (NFC for showing it, NFKC and lowercase for the
//! account's key, so `Ann`, `ANN` and `Ａｎｎ` are one account) and refusing
//! control, bidi and zero-width characters (and other invisible format
//! characters), which would let one name pass for another; refusing
//! whitespace and names that read as an IP address, so a command's
//! `NAME|ADDRESS` word (`/ban`, `/unban`) and the words after it mean one
//! thing each. Does not own: storing accounts (`accounts.rs`).

use unicode_normalization::UnicodeNormalization;

/// Longest name in bytes (after normalisation).
pub const MAX_NAME: usize = 32;

/// A name checked and normalised.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlayerName {
    /// What others see: the name as given, trimmed, NFC.
    pub display: String,
    /// What identifies the account: NFKC, lowercase.
    pub key: String,
}

/// Characters that show nothing or change how text around them shows:
/// bidi controls, zero-width characters, fillers and other format
/// characters.
fn invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{2028}'..='\u{202F}'
            | '\u{205F}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Checks and normalises a name a player gives; why not if it is not
/// acceptable.
pub fn check_name(name: &str) -> Result<PlayerName, String> {
    let display: String = name.trim().nfc().collect();
    if display.is_empty() || display.len() > MAX_NAME {
        return Err(format!("a name is 1 to {MAX_NAME} bytes"));
    }
    if let Some(c) = display.chars().find(|c| c.is_control() || invisible(*c)) {
        return Err(format!(
            "a name may not hold control, bidi or invisible characters (U+{:04X})",
            u32::from(c)
        ));
    }
    if display.chars().any(char::is_whitespace) {
        return Err("a name may not hold spaces".into());
    }
    if display.starts_with('/') {
        return Err("a name may not start with '/'".into());
    }
    let key: String = display.nfkc().collect::<String>().to_lowercase();
    // `１.２.３.４` is one in its key: both forms are checked.
    if [&display, &key]
        .iter()
        .any(|form| form.parse::<std::net::IpAddr>().is_ok())
    {
        return Err("a name may not be an IP address".into());
    }
    Ok(PlayerName { display, key })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_trimmed_and_keyed_without_case_or_width() {
        let ann = check_name("  Ann ").unwrap();
        assert_eq!(ann.display, "Ann");
        assert_eq!(ann.key, "ann");
        assert_eq!(check_name("ＡＮＮ").unwrap().key, "ann");
        // Composed and decomposed forms are one name.
        let composed = check_name("Jos\u{e9}").unwrap();
        let decomposed = check_name("Jose\u{301}").unwrap();
        assert_eq!(composed, decomposed);
        assert_eq!(
            check_name("bob_the_builder").unwrap().key,
            "bob_the_builder"
        );
    }

    #[test]
    fn names_are_never_addresses_nor_hold_spaces() {
        for bad in [
            "alice x",
            "bob the builder",
            "a\u{3000}b",
            "a\u{A0}b",
            "10.0.0.1",
            "127.0.0.1",
            "::1",
            "::ffff:10.0.0.1",
            "fd00::2",
            "FD00::2",
            "１０.０.０.１",
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        for good in ["10.0.0", "1.2.3.4.5", "cafe", "dead:beef:", "x10.0.0.1"] {
            assert!(check_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn invisible_and_control_characters_are_refused() {
        for bad in [
            "",
            "   ",
            "a\u{0}b",
            "a\nb",
            "a\tb",
            "ad\u{200B}min",
            "admin\u{200D}",
            "\u{202E}nimda",
            "\u{2066}x",
            "a\u{FEFF}",
            "a\u{00AD}b",
            "a\u{3164}",
            "/kick",
            &"x".repeat(33),
        ] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
        assert!(check_name(&"é".repeat(16)).is_ok());
        assert!(check_name(&"é".repeat(17)).is_err());
    }
}
