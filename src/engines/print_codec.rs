//! The byte layout every stored voice print uses: an 8-byte magic that names the format and its
//! version, then little-endian fields (`u32` counts and dimensions, `f32`/`u32`/`i64` runs).
//! Each engine's print type says which fields, in which order ([`crate::engines::chatterbox_shared`]'s
//! `VPRINT1`, qwen's `QWENVP1`, luxtts's `LUXVP1`); this module only reads and writes them, so
//! the three formats stay byte-identical to the prints already stored.

/// Builds a print's bytes.
pub struct Writer(Vec<u8>);

impl Writer {
    pub fn new(magic: &[u8; 8]) -> Self {
        Self(magic.to_vec())
    }

    /// A count or dimension, as `u32`.
    pub fn count(&mut self, n: usize) -> &mut Self {
        self.0.extend((n as u32).to_le_bytes());
        self
    }

    pub fn f32(&mut self, x: f32) -> &mut Self {
        self.0.extend(x.to_le_bytes());
        self
    }

    pub fn f32s(&mut self, xs: &[f32]) -> &mut Self {
        self.0.extend(xs.iter().flat_map(|x| x.to_le_bytes()));
        self
    }

    pub fn u32s(&mut self, xs: &[u32]) -> &mut Self {
        self.0.extend(xs.iter().flat_map(|x| x.to_le_bytes()));
        self
    }

    pub fn i64s(&mut self, xs: &[i64]) -> &mut Self {
        self.0.extend(xs.iter().flat_map(|x| x.to_le_bytes()));
        self
    }

    pub fn finish(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.0)
    }
}

/// Reads a print's fields in order; every read is `None` when the bytes run out, and
/// [`Reader::finish`] is `None` when bytes are left over (a damaged or foreign print).
pub struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    /// `None` unless `bytes` start with `magic`.
    pub fn new(bytes: &'a [u8], magic: &[u8; 8]) -> Option<Self> {
        bytes.strip_prefix(magic.as_slice()).map(Self)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let (head, tail) = self.0.split_at_checked(n)?;
        self.0 = tail;
        Some(head)
    }

    fn array<const N: usize, T>(
        &mut self,
        n: usize,
        from: impl Fn([u8; N]) -> T,
    ) -> Option<Vec<T>> {
        Some(
            self.take(n.checked_mul(N)?)?
                .chunks_exact(N)
                .map(|c| from(c.try_into().expect("N bytes")))
                .collect(),
        )
    }

    /// A count or dimension written as `u32`.
    pub fn count(&mut self) -> Option<usize> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?) as usize)
    }

    pub fn f32(&mut self) -> Option<f32> {
        Some(f32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    pub fn f32s(&mut self, n: usize) -> Option<Vec<f32>> {
        self.array(n, f32::from_le_bytes)
    }

    pub fn u32s(&mut self, n: usize) -> Option<Vec<u32>> {
        self.array(n, u32::from_le_bytes)
    }

    pub fn i64s(&mut self, n: usize) -> Option<Vec<i64>> {
        self.array(n, i64::from_le_bytes)
    }

    /// `Some` when every byte was read.
    pub fn finish(self) -> Option<()> {
        self.0.is_empty().then_some(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_come_back_in_order_and_short_or_long_bytes_are_refused() {
        let bytes = Writer::new(b"TESTVP1\0")
            .count(2)
            .f32s(&[0.5, -1.0])
            .u32s(&[7])
            .i64s(&[-3])
            .f32(1e-7)
            .finish();
        assert_eq!(&bytes[..8], b"TESTVP1\0");
        assert_eq!(bytes.len(), 8 + 4 + 8 + 4 + 8 + 4);
        let mut r = Reader::new(&bytes, b"TESTVP1\0").unwrap();
        let n = r.count().unwrap();
        assert_eq!(r.f32s(n), Some(vec![0.5, -1.0]));
        assert_eq!(r.u32s(1), Some(vec![7]));
        assert_eq!(r.i64s(1), Some(vec![-3]));
        assert_eq!(r.f32(), Some(1e-7));
        assert_eq!(r.finish(), Some(()));
        assert!(Reader::new(&bytes, b"OTHERVP\0").is_none());
        let mut short = Reader::new(&bytes[..bytes.len() - 1], b"TESTVP1\0").unwrap();
        let n = short.count().unwrap();
        short.f32s(n).unwrap();
        short.u32s(1).unwrap();
        short.i64s(1).unwrap();
        assert_eq!(short.f32(), None);
        let mut long = Reader::new(&bytes, b"TESTVP1\0").unwrap();
        long.count().unwrap();
        assert_eq!(long.finish(), None);
        let mut huge = Reader::new(b"TESTVP1\0", b"TESTVP1\0").unwrap();
        assert_eq!(huge.i64s(usize::MAX), None);
    }
}
