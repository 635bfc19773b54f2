//! Arrays as little-endian bytes and back: how a ranker is saved, so that reading one back is
//! a copy and a bounds check, not a decode.

/// Builds the bytes: each array is its length (in elements, `u64`) and then its elements.
#[derive(Default)]
pub(super) struct Writer(Vec<u8>);

impl Writer {
    pub(super) fn u32s(&mut self, values: &[u32]) {
        self.len(values.len());
        self.0.extend(values.iter().flat_map(|v| v.to_le_bytes()));
    }

    /// Floats as their bits.
    pub(super) fn f32s(&mut self, values: &[f32]) {
        self.u32s(&values.iter().map(|v| v.to_bits()).collect::<Vec<_>>());
    }

    pub(super) fn bytes(&mut self, values: &[u8]) {
        self.len(values.len());
        self.0.extend_from_slice(values);
    }

    fn len(&mut self, n: usize) {
        self.0.extend((n as u64).to_le_bytes());
    }

    pub(super) fn finish(self) -> Vec<u8> {
        self.0
    }
}

/// Reads what a [`Writer`] wrote, in the same order; `None` for bytes that end early.
pub(super) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Self {
        Reader(bytes)
    }

    pub(super) fn u32s(&mut self) -> Option<Vec<u32>> {
        let raw = self.array(4)?;
        Some(
            raw.chunks_exact(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect(),
        )
    }

    pub(super) fn f32s(&mut self) -> Option<Vec<f32>> {
        Some(self.u32s()?.into_iter().map(f32::from_bits).collect())
    }

    pub(super) fn bytes(&mut self) -> Option<&'a [u8]> {
        self.array(1)
    }

    /// Whether everything was read.
    pub(super) fn is_done(&self) -> bool {
        self.0.is_empty()
    }

    /// The next array of `n` elements of `size` bytes.
    fn array(&mut self, size: usize) -> Option<&'a [u8]> {
        let (len, rest) = self.0.split_first_chunk::<8>()?;
        let bytes = usize::try_from(u64::from_le_bytes(*len))
            .ok()?
            .checked_mul(size)?;
        if bytes > rest.len() {
            return None;
        }
        let (array, rest) = rest.split_at(bytes);
        self.0 = rest;
        Some(array)
    }
}

/// Strings back to back in one buffer: one allocation for tens of thousands of words.
#[derive(Debug, Default)]
pub(super) struct Strings {
    letters: String,
    /// Where each string ends in `letters`.
    ends: Vec<u32>,
}

impl Strings {
    pub(super) fn push(&mut self, s: &str) {
        self.letters.push_str(s);
        self.ends.push(self.letters.len() as u32);
    }

    pub(super) fn get(&self, i: usize) -> &str {
        &self.letters[self.range(i)]
    }

    /// Whether string `i` is `s`: a byte comparison, for lookups.
    #[inline]
    pub(super) fn is(&self, i: usize, s: &str) -> bool {
        self.letters.as_bytes().get(self.range(i)) == Some(s.as_bytes())
    }

    #[inline]
    fn range(&self, i: usize) -> std::ops::Range<usize> {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        start..self.ends[i] as usize
    }

    pub(super) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(super) fn write(&self, out: &mut Writer) {
        out.bytes(self.letters.as_bytes());
        out.u32s(&self.ends);
    }

    /// Strings a [`Strings::write`] wrote, if every end is in order, in range and on a
    /// character boundary.
    pub(super) fn read(input: &mut Reader) -> Option<Strings> {
        let letters = String::from_utf8(input.bytes()?.to_vec()).ok()?;
        let ends = input.u32s()?;
        let mut start = 0;
        for &end in &ends {
            let end = end as usize;
            if end < start || !letters.is_char_boundary(end) {
                return None;
            }
            start = end;
        }
        Some(Strings { letters, ends })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_and_strings_read_back_as_written_and_short_bytes_are_refused() {
        let mut strings = Strings::default();
        for s in ["webhook", "", "déploiement"] {
            strings.push(s);
        }
        let mut out = Writer::default();
        out.u32s(&[1, u32::MAX]);
        out.f32s(&[0.5, -2.0]);
        strings.write(&mut out);
        let bytes = out.finish();

        let mut input = Reader::new(&bytes);
        assert_eq!(input.u32s(), Some(vec![1, u32::MAX]));
        assert_eq!(input.f32s(), Some(vec![0.5, -2.0]));
        let back = Strings::read(&mut input).unwrap();
        assert!(input.is_done());
        assert_eq!(
            (0..back.len()).map(|i| back.get(i)).collect::<Vec<_>>(),
            ["webhook", "", "déploiement"]
        );

        for cut in 0..bytes.len() {
            let mut input = Reader::new(&bytes[..cut]);
            let whole =
                input.u32s().is_some() && input.f32s().is_some() && Strings::read(&mut input).is_some();
            assert!(!whole, "{cut} bytes read as whole");
        }
    }

    #[test]
    fn an_end_inside_a_character_is_refused() {
        let mut out = Writer::default();
        out.bytes("é".as_bytes());
        out.u32s(&[1]);
        let bytes = out.finish();
        assert!(Strings::read(&mut Reader::new(&bytes)).is_none());
    }
}
