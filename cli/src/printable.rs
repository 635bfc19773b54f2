//! Text from skill files and memories is untrusted: a name, a description or a memory may hold
//! terminal control sequences that would recolour, move or rewrite the user's terminal. Every
//! human-readable line that shows such text passes it through [`printable`].

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character except newline and tab escaped (`\u{1b}` for ESC), so
/// it can't drive the terminal it is printed on. JSON output needs no escaping (serde escapes
/// control characters).
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `a, b, c` made printable, or `none` for an empty list.
pub(crate) fn list_or_none<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    let joined = items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
    printable(&joined).into_owned()
}

/// C0 and C1 controls (ESC, CSI, BEL, backspace, carriage return, …) and the bidirectional
/// overrides that reorder what a terminal shows.
fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::printable;

    #[test]
    fn escapes_terminal_controls_and_keeps_plain_text() {
        assert_eq!(printable("plain\ttext\nnext"), "plain\ttext\nnext");
        assert_eq!(printable("red \x1b[31mX\x1b[0m"), "red \\u{1b}[31mX\\u{1b}[0m");
        assert_eq!(printable("over\rwrite"), "over\\u{d}write");
        assert_eq!(printable("a\u{9b}b"), "a\\u{9b}b");
        assert_eq!(printable("rtl \u{202e}txt"), "rtl \\u{202e}txt");
    }
}
