//! Linear-time helpers that keep hostile frontmatter cheap: a line index built once, a nesting
//! scan run before YAML parsing, and a node budget for YAML aliases.

use std::cell::Cell;
use std::collections::HashMap;
use std::fmt;

use serde::de::{
    self, DeserializeSeed, Deserializer, EnumAccess, MapAccess, SeqAccess, VariantAccess, Visitor,
};

/// Line starts of a text, computed once; offsets map to lines by binary search.
pub(super) struct LineIndex {
    starts: Vec<usize>,
}

impl LineIndex {
    pub(super) fn new(text: &str) -> Self {
        let mut starts = vec![0];
        starts.extend(
            text.bytes()
                .enumerate()
                .filter(|&(_, b)| b == b'\n')
                .map(|(i, _)| i + 1),
        );
        LineIndex { starts }
    }

    /// 0-based line of a byte offset.
    pub(super) fn line(&self, offset: usize) -> usize {
        self.starts.partition_point(|&s| s <= offset).saturating_sub(1)
    }

    /// The 0-based line of each top-level `key:` (first occurrence), in one pass.
    pub(super) fn top_level_keys<'t>(&self, text: &'t str) -> HashMap<&'t str, usize> {
        let mut keys = HashMap::new();
        for (i, &start) in self.starts.iter().enumerate() {
            let end = self.starts.get(i + 1).map_or(text.len(), |&next| next - 1);
            let line = &text[start..end];
            if line.starts_with([' ', '\t', '#', '-']) {
                continue;
            }
            if let Some(key) = key_of(line) {
                keys.entry(key).or_insert(i);
            }
        }
        keys
    }
}

/// The key of a `key: value` line: up to the first `:` followed by a blank or the line end,
/// without surrounding quotes.
fn key_of(line: &str) -> Option<&str> {
    let bytes = line.as_bytes();
    let colon = (0..bytes.len())
        .find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|c| c.is_ascii_whitespace()))?;
    let key = line[..colon].trim_end();
    let unquoted = key
        .strip_prefix('"')
        .and_then(|k| k.strip_suffix('"'))
        .or_else(|| key.strip_prefix('\'').and_then(|k| k.strip_suffix('\'')));
    Some(unquoted.unwrap_or(key))
}

/// The byte offset where the frontmatter nests deeper than `limit`, counting flow brackets
/// (`[`, `{`), block indentation levels and compact `- ` / `key:` levels; `None` when it
/// stays within. One pass; comments, quoted strings and block scalars are skipped. The count
/// is an over-estimate of the YAML nesting, never an under-estimate for ordinary files.
pub(super) fn too_deep(text: &str, limit: usize) -> Option<usize> {
    let b = text.as_bytes();
    let mut flow = 0usize;
    let mut indents: Vec<usize> = Vec::new();
    let mut block_scalar: Option<usize> = None;
    let mut quote: Option<u8> = None;
    let mut pos = 0;
    while pos < b.len() {
        let end = b[pos..]
            .iter()
            .position(|&c| c == b'\n')
            .map_or(b.len(), |i| pos + i);
        let line = &b[pos..end];
        let indent = line.iter().take_while(|&&c| c == b' ').count();
        let rest = &line[indent..];
        let blank = rest.iter().all(u8::is_ascii_whitespace);
        let mut i = 0;
        if quote.is_none() {
            if let Some(parent) = block_scalar {
                if blank || indent > parent {
                    pos = end + 1;
                    continue;
                }
                block_scalar = None;
            }
            if blank || rest[0] == b'#' {
                pos = end + 1;
                continue;
            }
            if flow == 0 {
                while indents.last().is_some_and(|&top| top > indent) {
                    indents.pop();
                }
                if indents.last() != Some(&indent) {
                    indents.push(indent);
                }
            }
            i = indent;
        }
        let block = indents.len();
        let mut compact = 0usize;
        let mut token_start = quote.is_none();
        while i < line.len() {
            let c = line[i];
            if let Some(q) = quote {
                if q == b'"' && c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == q {
                    if q == b'\'' && line.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    quote = None;
                    token_start = false;
                }
                i += 1;
                continue;
            }
            let next_blank = line.get(i + 1).is_none_or(u8::is_ascii_whitespace);
            let prev_blank = i == 0 || line[i - 1].is_ascii_whitespace();
            match c {
                b'#' if prev_blank => break,
                b'"' | b'\'' if token_start => quote = Some(c),
                b'[' | b'{' if token_start || flow > 0 => {
                    flow += 1;
                    token_start = true;
                }
                b']' | b'}' if flow > 0 => {
                    flow -= 1;
                    token_start = false;
                }
                b',' if flow > 0 => token_start = true,
                b'-' | b'?' if token_start && next_blank && flow == 0 => compact += 1,
                b':' if next_blank
                    || (flow > 0 && matches!(line.get(i + 1), Some(b',' | b'[' | b']' | b'{' | b'}'))) =>
                {
                    token_start = true;
                    if flow == 0 {
                        compact += 1;
                    }
                }
                b'|' | b'>' if token_start && flow == 0 => {
                    block_scalar = Some(indent);
                    break;
                }
                b' ' | b'\t' | b'\r' => {}
                _ => token_start = false,
            }
            if block + compact + flow > limit {
                return Some(pos + i);
            }
            i += 1;
        }
        pos = end + 1;
    }
    None
}

/// Whether the YAML could use aliases at all (an alias needs an anchor `&` and a `*`).
pub(super) fn may_have_aliases(text: &str) -> bool {
    text.contains('&') && text.contains('*')
}

/// Count the nodes of `text` with aliases expanded, stopping once `budget` is spent.
/// `Ok(true)` when it fits, `Ok(false)` when it does not; `Err` is a YAML error.
pub(super) fn fits_node_budget(text: &str, budget: usize) -> Result<bool, serde_yaml::Error> {
    let counter = Counter {
        left: Cell::new(budget),
        exceeded: Cell::new(false),
    };
    match Count(&counter).deserialize(serde_yaml::Deserializer::from_str(text)) {
        Ok(()) => Ok(true),
        Err(_) if counter.exceeded.get() => Ok(false),
        Err(e) => Err(e),
    }
}

struct Counter {
    left: Cell<usize>,
    exceeded: Cell<bool>,
}

#[derive(Clone, Copy)]
struct Count<'c>(&'c Counter);

impl Count<'_> {
    fn tick<E: de::Error>(self) -> Result<(), E> {
        match self.0.left.get().checked_sub(1) {
            Some(left) => {
                self.0.left.set(left);
                Ok(())
            }
            None => {
                self.0.exceeded.set(true);
                Err(E::custom("node budget exceeded"))
            }
        }
    }
}

impl<'de> DeserializeSeed<'de> for Count<'_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Count<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_bool<E: de::Error>(self, _: bool) -> Result<(), E> {
        self.tick()
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<(), E> {
        self.tick()
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<(), E> {
        self.tick()
    }
    fn visit_i128<E: de::Error>(self, _: i128) -> Result<(), E> {
        self.tick()
    }
    fn visit_u128<E: de::Error>(self, _: u128) -> Result<(), E> {
        self.tick()
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<(), E> {
        self.tick()
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<(), E> {
        self.tick()
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<(), E> {
        self.tick()
    }
    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.tick()
    }
    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.tick()
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.tick()?;
        deserializer.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        self.tick()?;
        deserializer.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        self.tick()?;
        while seq.next_element_seed(self)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        self.tick()?;
        while map.next_key_seed(self)?.is_some() {
            map.next_value_seed(self)?;
        }
        Ok(())
    }
    fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<(), A::Error> {
        self.tick()?;
        let ((), variant) = data.variant_seed(self)?;
        variant.newtype_variant_seed(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_binary_search() {
        let idx = LineIndex::new("a: 1\nb: 2\n\nc: 3");
        assert_eq!(
            (idx.line(0), idx.line(4), idx.line(5), idx.line(11)),
            (0, 0, 1, 3)
        );
        let keys = idx.top_level_keys("a: 1\nb: 2\n\nc: 3");
        assert_eq!((keys["a"], keys["b"], keys["c"]), (0, 1, 3));
    }

    #[test]
    fn nesting() {
        // The count: one indentation level, one `key:`, then the brackets.
        assert_eq!(too_deep("a: [[[1]]]", 5), None);
        assert!(too_deep("a: [[[[1]]]]", 5).is_some());
        assert_eq!(too_deep("a: '[[[[[[['\nb: \"{{{{{{\"", 4), None);
        assert_eq!(too_deep("a: |\n  [[[[[[[[\n  {{{{{{{\nb: x", 4), None);
        assert_eq!(too_deep("a: x # [[[[[[[[\n", 4), None);
        assert!(too_deep("- - - - - - x", 4).is_some());
        assert!(too_deep("a:\n b:\n  c:\n   d:\n    e: 1", 4).is_some());
    }

    #[test]
    fn alias_budget() {
        let bomb = "a: &a [x, x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c]";
        assert!(may_have_aliases(bomb));
        assert!(fits_node_budget(bomb, 100).unwrap());
        assert!(!fits_node_budget(bomb, 20).unwrap());
        assert!(fits_node_budget("a: [", 100).is_err());
    }
}
