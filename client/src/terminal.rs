//! Server text made safe to print: what a server sends (its Lua's log
//! lines, a disconnect reason, names in errors) reaches the player's
//! terminal, where escape sequences could rewrite the screen, forge log
//! lines or reorder text.
//!
//! Owns: [`escape`], the one rule for that. Does not own: where text is
//! printed (the log sinks in `sandbox`, `main.rs`).

use std::borrow::Cow;

/// Whether `c` must not reach a terminal as it is: control characters
/// (escape sequences, newlines that would forge a line, C1 controls) and
/// the bidirectional formatting characters that reorder what follows.
fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every unsafe character written as a Rust escape (`\n`,
/// `\u{1b}`, `\u{202e}`); borrowed when nothing needed escaping.
pub fn escape(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !is_unsafe(c) {
            out.push(c);
        } else if c.is_ascii() {
            out.extend(c.escape_default());
        } else {
            out.extend(c.escape_unicode());
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_borrowed_as_it_is() {
        assert!(matches!(escape("héllo, wörld: 42 ✓"), Cow::Borrowed(_)));
    }

    #[test]
    fn escapes_controls_and_reordering() {
        assert_eq!(escape("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(escape("one\nINFO forged"), "one\\nINFO forged");
        assert_eq!(escape("tab\there\r"), "tab\\there\\r");
        assert_eq!(escape("\u{9b}31m"), "\\u{9b}31m");
        assert_eq!(escape("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(escape("\u{2066}x\u{2069}"), "\\u{2066}x\\u{2069}");
    }
}
