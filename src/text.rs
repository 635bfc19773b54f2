//! Character classes both providers need to agree on: what a word character is, and which
//! scripts are written without spaces between words (so a word boundary means nothing there).
//! One definition, so skill matching and memory search never disagree about a character.

/// A character that can be part of a word: a letter or digit of any script, or `_`.
pub fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// A character of a script written without spaces between words: Thai, Lao, Myanmar, Khmer,
/// Hiragana, Katakana and Han. A keyword in such a script matches anywhere in a message, and
/// search splits a run of such characters into overlapping pairs instead of words.
pub fn is_written_without_spaces(c: char) -> bool {
    matches!(c as u32,
        0x0E00..=0x0EFF                                        // Thai, Lao
        | 0x1000..=0x109F | 0xA9E0..=0xA9FF | 0xAA60..=0xAA7F  // Myanmar and extensions
        | 0x1780..=0x17FF | 0x19E0..=0x19FF                    // Khmer and symbols
        | 0x3040..=0x30FF | 0x31F0..=0x31FF | 0xFF66..=0xFF9F  // Hiragana, Katakana (and half-width)
        | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF  // Han, extension A, compatibility
        | 0x20000..=0x2FA1F | 0x30000..=0x3134F) // Han extensions B-G
}

/// `a, b, c`, or `none` for an empty list: how messages and summaries name what they list.
pub(crate) fn list_or_none<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items.iter().map(AsRef::as_ref).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_without_spaces() {
        for c in ['日', 'の', 'カ', 'ｶ', 'ไ', 'ກ', 'က', 'ក', '𠀀', '𰀀'] {
            assert!(is_written_without_spaces(c), "{c}");
        }
        for c in ['a', 'é', 'Ж', 'ע', '한', '1', '_'] {
            assert!(!is_written_without_spaces(c), "{c}");
        }
    }

    #[test]
    fn word_characters() {
        assert!(['a', 'Ж', '日', '7', '_'].into_iter().all(is_word_char));
        assert!(!['-', ' ', '+', '.', '$'].into_iter().any(is_word_char));
    }
}
