//! A parsed header described for JavaScript in four flat parts, so that JavaScript builds its
//! objects with one text decode and typed-array reads, not one call per value:
//!
//! - words (`u32`, little-endian): the header and each value, below;
//! - numbers: 8-byte slots and arrays' elements (little-endian, each array at a multiple of 8);
//! - text: every string that is valid UTF-8 and does not start with a byte order mark, one
//!   after another (JavaScript decodes it once and cuts it by UTF-16 positions);
//! - raw: the other strings' bytes (JavaScript decodes each alone, as a `TextDecoder` does).
//!
//! A string is two words: its UTF-16 start and length in the text, or `0x8000_0000 | start`
//! and its byte length in raw.
//!
//! A value is its type (`GGUF_TYPE_*`) and then: UINT8..INT32 and BOOL, one word (signed
//! types sign-extended); FLOAT32, its bits; STRING, a string; UINT64, INT64 and FLOAT64, the
//! byte position of their slot in numbers; ARRAY, the element type and count, then for numeric
//! elements their byte position in numbers, for strings each string, for arrays each array as
//! a value.
//!
//! The words begin with: version, little-endian (0 or 1), metadata count, tensor count, the
//! byte position in numbers of seven slots (tensor count, metadata count, data offset,
//! alignment, tensor infos' start and end, file size). Each metadata entry follows (its key, a
//! string, and its value), then each tensor: its name, its number of dimensions, its type id,
//! and the byte position in numbers of its dimensions followed by its offset.

use gguf::value::Array;
use gguf::{ByteOrder, GgufFile, Value, ValueType};

/// What [`describe`] makes.
pub struct Description {
    parts: [Vec<u8>; 4],
}

impl Description {
    /// Part `i`, or nothing past the last.
    pub fn part(&self, i: u32) -> &[u8] {
        usize::try_from(i)
            .ok()
            .and_then(|i| self.parts.get(i))
            .map_or(&[], |p| p.as_slice())
    }
}

struct Out {
    words: Vec<u8>,
    numbers: Vec<u8>,
    text: Vec<u8>,
    text_utf16: u64,
    raw: Vec<u8>,
    order: ByteOrder,
}

/// A count or position that the header's size bounds (a header is at most
/// `gguf::source::MAX_HEADER` bytes), as a word; saturated if it were ever larger.
fn word_of(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

impl Out {
    fn word(&mut self, w: u32) {
        self.words.extend_from_slice(&w.to_le_bytes());
    }

    fn count(&mut self, n: usize) {
        self.word(word_of(n as u64));
    }

    /// Pads numbers to a multiple of 8 and returns that position.
    fn slot(&mut self) -> u32 {
        let pad = (8 - self.numbers.len() % 8) % 8;
        self.numbers.resize(self.numbers.len() + pad, 0);
        word_of(self.numbers.len() as u64)
    }

    fn u64_slot(&mut self, v: [u8; 8]) -> u32 {
        let at = self.slot();
        self.numbers.extend_from_slice(&v);
        at
    }

    fn string(&mut self, s: &[u8]) {
        // ASCII (most keys and tokens) is valid UTF-8 of one UTF-16 unit a byte, and cannot
        // start with a byte order mark: no decoding needed.
        let units = if s.is_ascii() {
            Some(s.len() as u64)
        } else {
            match std::str::from_utf8(s) {
                Ok(text) if !text.starts_with('\u{feff}') => {
                    Some(text.chars().map(|c| c.len_utf16() as u64).sum())
                }
                _ => None,
            }
        };
        match units {
            Some(units) => {
                let start = word_of(self.text_utf16);
                self.word(start);
                self.word(word_of(units));
                self.text.extend_from_slice(s);
                self.text_utf16 += units;
            }
            None => {
                let start = word_of(self.raw.len() as u64);
                self.word(0x8000_0000 | start);
                self.count(s.len());
                self.raw.extend_from_slice(s);
            }
        }
    }

    fn value(&mut self, v: &Value<'_>) {
        self.word(v.value_type() as u32);
        match *v {
            Value::U8(x) => self.word(x.into()),
            Value::I8(x) => self.word(i32::from(x) as u32),
            Value::U16(x) => self.word(x.into()),
            Value::I16(x) => self.word(i32::from(x) as u32),
            Value::U32(x) => self.word(x),
            Value::I32(x) => self.word(x as u32),
            Value::F32(x) => self.word(x.to_bits()),
            Value::Bool(x) => self.word(x.into()),
            Value::String(s) => self.string(s),
            Value::U64(x) => {
                let at = self.u64_slot(x.to_le_bytes());
                self.word(at);
            }
            Value::I64(x) => {
                let at = self.u64_slot(x.to_le_bytes());
                self.word(at);
            }
            Value::F64(x) => {
                let at = self.u64_slot(x.to_le_bytes());
                self.word(at);
            }
            Value::Array(a) => self.array(&a),
        }
    }

    fn array(&mut self, a: &Array<'_>) {
        let elem = a.elem_type();
        self.word(elem as u32);
        self.word(word_of(a.len()));
        match elem {
            ValueType::String => {
                if let Some(strings) = a.strings() {
                    for s in strings {
                        self.string(s);
                    }
                }
            }
            ValueType::Array => {
                for v in a.iter() {
                    self.value(&v);
                }
            }
            _ => {
                let at = self.slot();
                self.word(at);
                if self.order == ByteOrder::Little {
                    self.numbers.extend_from_slice(a.raw_bytes());
                } else {
                    for v in a.iter() {
                        self.element(&v);
                    }
                }
            }
        }
    }

    /// A numeric element of a big-endian file, little-endian.
    fn element(&mut self, v: &Value<'_>) {
        let n = &mut self.numbers;
        match *v {
            Value::U8(x) => n.push(x),
            Value::I8(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::Bool(x) => n.push(x.into()),
            Value::U16(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::I16(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::U32(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::I32(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::F32(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::U64(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::I64(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::F64(x) => n.extend_from_slice(&x.to_le_bytes()),
            Value::String(_) | Value::Array(_) => {}
        }
    }
}

/// The header of `file`, described (the module's documentation has the layout).
pub fn describe(file: &GgufFile<Vec<u8>>) -> Description {
    // The header's length bounds the text, and, but for version 1's shorter string lengths,
    // the words (two a string, where the file has an 8-byte length and the bytes): reserved
    // once rather than grown by copying.
    let header_len = usize::try_from(file.tensor_info_range().end).unwrap_or(0);
    let mut out = Out {
        words: Vec::with_capacity(header_len),
        numbers: Vec::new(),
        text: Vec::with_capacity(header_len),
        text_utf16: 0,
        raw: Vec::new(),
        order: file.byte_order(),
    };
    out.word(file.version());
    out.word((file.byte_order() == ByteOrder::Little).into());
    out.count(file.metadata_count());
    out.count(file.tensor_count());
    let infos = file.tensor_info_range();
    let at = out.slot();
    for v in [
        file.tensor_count() as u64,
        file.metadata_count() as u64,
        file.data_offset(),
        file.alignment(),
        infos.start,
        infos.end,
        file.file_size(),
    ] {
        out.numbers.extend_from_slice(&v.to_le_bytes());
    }
    out.word(at);
    for e in file.metadata() {
        out.string(e.key);
        out.value(&e.value);
    }
    for t in file.tensors() {
        out.string(t.name);
        out.word(t.n_dims);
        out.word(t.dtype as u32);
        let at = out.slot();
        for d in &t.dims[..usize::try_from(t.n_dims).unwrap_or(0).min(t.dims.len())] {
            out.numbers.extend_from_slice(&d.to_le_bytes());
        }
        out.numbers.extend_from_slice(&t.offset.to_le_bytes());
        out.word(at);
    }
    Description {
        parts: [out.words, out.numbers, out.text, out.raw],
    }
}
