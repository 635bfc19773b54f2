//! Text from skill files and memories is untrusted: a name, a description or a memory may hold
//! terminal control sequences that would recolour, move or rewrite the user's terminal. Every
//! human-readable line that shows such text passes it through [`printable_line`] (a field: a
//! name, a description, a path) or [`printable`] (text with lines of its own, like a body).

use std::borrow::Cow;
use std::fmt::Write;

/// `text` with every control character except newline and tab escaped (`\u{1b}` for ESC), so
/// it can't drive the terminal it is printed on: for text that has lines of its own (a skill's
/// body, a message). JSON output needs no escaping (serde escapes control characters).
pub(crate) fn printable(text: &str) -> Cow<'_, str> {
    escaped(text, |c| needs_escape(c) && c != '\n' && c != '\t')
}

/// One field on one line — a name, a description, a path, a diagnostic: [`printable`] with
/// line breaks and tabs escaped too (`\u{a}`), so the field can't start a line of its own and
/// forge a row of a listing.
pub(crate) fn printable_line(text: &str) -> Cow<'_, str> {
    escaped(text, needs_escape)
}

/// `a, b, c` on one line, or `none` for an empty list.
pub(crate) fn list_or_none<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    let joined = items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ");
    printable_line(&joined).into_owned()
}

fn escaped(text: &str, escape: impl Fn(char) -> bool) -> Cow<'_, str> {
    if !text.chars().any(&escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if escape(c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// C0 and C1 controls (ESC, CSI, BEL, backspace, carriage return, line breaks, …), the Unicode
/// line and paragraph separators, and the bidirectional overrides that reorder what a terminal
/// shows.
fn needs_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::{printable, printable_line};

    #[test]
    fn escapes_terminal_controls_and_keeps_plain_text() {
        assert_eq!(printable("plain\ttext\nnext"), "plain\ttext\nnext");
        assert_eq!(printable("red \x1b[31mX\x1b[0m"), "red \\u{1b}[31mX\\u{1b}[0m");
        assert_eq!(printable("over\rwrite"), "over\\u{d}write");
        assert_eq!(printable("a\u{9b}b"), "a\\u{9b}b");
        assert_eq!(printable("rtl \u{202e}txt"), "rtl \\u{202e}txt");
    }

    #[test]
    fn one_line_fields_escape_line_breaks_and_tabs_too() {
        assert_eq!(printable_line("name\nFAKE\tROW"), "name\\u{a}FAKE\\u{9}ROW");
        assert_eq!(printable_line("a\u{2028}b\u{85}c"), "a\\u{2028}b\\u{85}c");
        assert_eq!(printable_line("plain-name"), "plain-name");
    }
}
