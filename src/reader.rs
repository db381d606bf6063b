//! The byte reader: a cursor over `&[u8]` where every read is bounds-checked and every failure
//! names the byte offset and the field being read.

use crate::error::{Error, ErrorKind, Result, Shortfall};
use crate::format::{ByteOrder, Layout};

/// A position inside the file's bytes: where a field starts and how long it is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Span {
    pub start: usize,
    pub len: usize,
}

impl Span {
    /// The bytes this span covers. Spans are only made by [`ByteReader`] over the same bytes, so
    /// the range is in bounds; `get` keeps that an invariant checked rather than trusted.
    pub fn of<'a>(&self, bytes: &'a [u8]) -> &'a [u8] {
        bytes.get(self.start..self.start + self.len).unwrap_or(&[])
    }
}

/// A checked cursor over the file's bytes.
#[derive(Clone)]
pub(crate) struct ByteReader<'a> {
    data: &'a [u8],
    pos: usize,
    layout: Layout,
    /// The size of the whole source, of which `data` is a prefix (its length for a whole file):
    /// checks against the file's size use it, and a read past `data` but inside it fails as
    /// truncated, which a caller parsing a prefix takes as "read more" (see `GgufFile::from_prefix`).
    end: u64,
}

impl<'a> ByteReader<'a> {
    /// A reader at `pos` (clamped to the end) of `data`.
    pub fn new(data: &'a [u8], pos: usize, layout: Layout) -> ByteReader<'a> {
        ByteReader::sized(data, pos, layout, data.len() as u64)
    }

    /// A reader at `pos` of `data`, the first bytes of a source of `end` bytes (at least
    /// `data.len()`).
    pub fn sized(data: &'a [u8], pos: usize, layout: Layout, end: u64) -> ByteReader<'a> {
        ByteReader {
            data,
            pos: pos.min(data.len()),
            layout,
            end: end.max(data.len() as u64),
        }
    }

    pub fn bytes(&self) -> &'a [u8] {
        self.data
    }

    pub fn pos(&self) -> usize {
        self.pos
    }

    pub fn layout(&self) -> Layout {
        self.layout
    }

    pub fn remaining(&self) -> usize {
        // `pos <= data.len()` always holds: `new` clamps it and every advance is checked.
        self.data.len() - self.pos
    }

    /// Bytes left in the whole source (more than [`ByteReader::remaining`] when `data` is a
    /// prefix).
    pub fn left(&self) -> u64 {
        self.end - self.pos as u64
    }

    /// Takes `n` bytes, or fails naming `what` was being read.
    #[inline]
    pub fn take(&mut self, n: usize, what: &str) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(self.truncated(n, what));
        }
        let bytes = &self.data[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    #[cold]
    #[inline(never)]
    fn truncated(&self, n: usize, what: &str) -> Error {
        Error::at(
            self.pos as u64,
            ErrorKind::Truncated {
                reading: what.to_string(),
                needed: n as u64,
                remaining: self.left(),
                empty_file: false,
            },
        )
    }

    #[inline]
    fn array<const N: usize>(&mut self, what: &str) -> Result<[u8; N]> {
        let Some(&bytes) = self.data[self.pos..].first_chunk::<N>() else {
            return Err(self.truncated(N, what));
        };
        self.pos += N;
        Ok(match self.layout.order {
            ByteOrder::Little => bytes,
            ByteOrder::Big => {
                let mut swapped = bytes;
                swapped.reverse();
                swapped
            }
        })
    }

    #[inline]
    pub fn u8(&mut self, what: &str) -> Result<u8> {
        self.array::<1>(what).map(|[b]| b)
    }

    #[inline]
    pub fn u16(&mut self, what: &str) -> Result<u16> {
        self.array(what).map(u16::from_le_bytes)
    }

    #[inline]
    pub fn u32(&mut self, what: &str) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }

    #[inline]
    pub fn u64(&mut self, what: &str) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }

    /// A count, length or dimension: 64-bit from version 2 on, 32-bit in version 1.
    #[inline]
    pub fn len(&mut self, what: &str) -> Result<u64> {
        if self.layout.wide {
            self.u64(what)
        } else {
            self.u32(what).map(u64::from)
        }
    }

    /// A length-prefixed string: its bytes' span. The length is checked against the bytes left
    /// before anything is taken.
    #[inline]
    pub fn string(&mut self, what: &str) -> Result<Span> {
        let len_at = self.pos;
        let len64 = self.len(what)?;
        let Some(len) = usize::try_from(len64)
            .ok()
            .filter(|&len| len <= self.remaining())
        else {
            return Err(self.string_past_prefix(len_at, len64, what));
        };
        let span = Span {
            start: self.pos,
            len,
        };
        self.pos += span.len;
        Ok(span)
    }

    /// The error for a string of `len` bytes that does not fit in the bytes at hand (the
    /// reader is just past its length field): too long for the source, or, when only a prefix
    /// is at hand, truncated (read more).
    #[cold]
    #[inline(never)]
    fn string_past_prefix(&self, len_at: usize, len: u64, what: &str) -> Error {
        if len <= self.left() {
            return Error::at(
                self.pos as u64,
                ErrorKind::Truncated {
                    reading: what.to_string(),
                    needed: len,
                    remaining: self.left(),
                    empty_file: false,
                },
            );
        }
        Error::at(
            len_at as u64,
            ErrorKind::StringTooLong {
                reading: what.to_string(),
                len,
                remaining: self.left(),
            },
        )
    }

    /// Whether `count` items of at least `min_size` bytes each fit in the bytes left (checked
    /// before anything is allocated or looped over for them).
    #[inline]
    pub fn fits(&self, count: u64, min_size: u64) -> bool {
        count
            .checked_mul(min_size)
            .is_some_and(|need| need <= self.left())
    }

    /// Why items of `min_size` bytes each that do not fit ([`ByteReader::fits`]) cannot be.
    pub fn shortfall(&self, min_size: u64) -> Shortfall {
        Shortfall::Bytes {
            min_size,
            remaining: self.left(),
        }
    }

    /// Steps over `count` strings (an array's elements), checking every length. This is the
    /// loop that dominates opening a model (a vocabulary is hundreds of thousands of strings),
    /// so the common layout (little-endian, 64-bit lengths) gets a loop of its own.
    pub fn skip_strings(&mut self, count: u64, what: &str) -> Result<()> {
        if !(self.layout.wide && self.layout.order == ByteOrder::Little) {
            for _ in 0..count {
                self.string(what)?;
            }
            return Ok(());
        }
        let data = self.data;
        let mut pos = self.pos;
        for _ in 0..count {
            let Some(&len) = data[pos..].first_chunk::<8>() else {
                self.pos = pos;
                return Err(self.truncated(8, what));
            };
            let len64 = u64::from_le_bytes(len);
            let start = pos + 8;
            let Some(len) = usize::try_from(len64)
                .ok()
                .filter(|&len| len <= data.len() - start)
            else {
                self.pos = start;
                return Err(self.string_past_prefix(pos, len64, what));
            };
            pos = start + len;
        }
        self.pos = pos;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LE: Layout = Layout {
        order: ByteOrder::Little,
        wide: true,
    };

    #[test]
    fn reads_numbers_in_both_orders() {
        let bytes = [1, 2, 3, 4, 5, 6, 7, 8];
        assert_eq!(
            ByteReader::new(&bytes, 0, LE).u32("x").unwrap(),
            0x0403_0201
        );
        let be = Layout {
            order: ByteOrder::Big,
            wide: true,
        };
        assert_eq!(
            ByteReader::new(&bytes, 0, be).u32("x").unwrap(),
            0x0102_0304
        );
        assert_eq!(
            ByteReader::new(&bytes, 0, be).u64("x").unwrap(),
            0x0102_0304_0506_0708
        );
    }

    #[test]
    fn reads_past_the_end_are_refused_with_the_offset() {
        let bytes = [0u8; 6];
        let mut r = ByteReader::new(&bytes, 0, LE);
        r.u32("a").unwrap();
        let e = r.u32("the tensor count").unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::Truncated);
        assert_eq!(e.offset(), Some(4));
        assert!(e.message().contains("the tensor count"), "{}", e.message());
        assert_eq!(r.pos(), 4, "a failed read does not move the cursor");
    }

    #[test]
    fn string_lengths_are_checked_before_use() {
        let mut bytes = u64::MAX.to_le_bytes().to_vec();
        bytes.extend_from_slice(b"abc");
        let e = ByteReader::new(&bytes, 0, LE).string("key").unwrap_err();
        assert_eq!(e.code(), crate::error::ErrorCode::StringTooLong);
        let mut ok = 3u64.to_le_bytes().to_vec();
        ok.extend_from_slice(b"abc");
        let span = ByteReader::new(&ok, 0, LE).string("key").unwrap();
        assert_eq!(span.of(&ok), b"abc");
    }
}
