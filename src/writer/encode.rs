//! Encoding: numbers in the file's byte order, counts and lengths in the version's width, and
//! metadata values (arrays copied from a file re-encoded when the layout differs).

use super::metadata::{MetadataValue, Stored};
use crate::error::{Error, ErrorCode, Result};
use crate::format::{ByteOrder, Layout};
use crate::reader::ByteReader;
use crate::types::ValueType;
use crate::value::read_value;

/// Encodes numbers in the file's byte order and lengths in the version's width.
pub(super) struct Encoder {
    pub buf: Vec<u8>,
    pub layout: Layout,
}

impl Encoder {
    fn put<const N: usize>(&mut self, le: [u8; N]) {
        let mut bytes = le;
        if self.layout.order == ByteOrder::Big {
            bytes.reverse();
        }
        self.buf.extend_from_slice(&bytes);
    }

    pub fn u32(&mut self, v: u32) {
        self.put(v.to_le_bytes());
    }

    pub fn u64(&mut self, v: u64) {
        self.put(v.to_le_bytes());
    }

    pub fn len(&mut self, v: u64) -> Result<()> {
        if self.layout.wide {
            self.u64(v);
        } else {
            let narrow = u32::try_from(v).map_err(|_| {
                Error::msg(
                    ErrorCode::InvalidArgument,
                    format!("version 1 cannot store the count or length {v}"),
                )
            })?;
            self.u32(narrow);
        }
        Ok(())
    }

    pub fn string(&mut self, s: &[u8]) -> Result<()> {
        self.len(s.len() as u64)?;
        self.buf.extend_from_slice(s);
        Ok(())
    }

    pub fn stored(&mut self, v: &Stored) -> Result<()> {
        match v {
            Stored::Value(v) => self.value(v),
            Stored::Encoded {
                elem,
                count,
                bytes,
                layout,
            } if *layout == self.layout => {
                self.u32(elem.id());
                self.len(*count)?;
                self.buf.extend_from_slice(bytes);
                Ok(())
            }
            Stored::Encoded {
                elem,
                count,
                bytes,
                layout,
            } => {
                // Decoded with the reader's rules from the layout it was stored in, then
                // written in this file's.
                let mut source = Encoder {
                    buf: Vec::with_capacity(12 + bytes.len()),
                    layout: *layout,
                };
                source.u32(elem.id());
                source.len(*count)?;
                source.buf.extend_from_slice(bytes);
                let mut r = ByteReader::new(&source.buf, 0, *layout);
                let raw = read_value(&mut r, ValueType::Array, "a copied array")?;
                self.value(&MetadataValue::from(raw.view(&source.buf, *layout)))
            }
        }
    }

    fn value(&mut self, v: &MetadataValue) -> Result<()> {
        use MetadataValue::*;
        match v {
            U8(x) => self.put(x.to_le_bytes()),
            I8(x) => self.put(x.to_le_bytes()),
            U16(x) => self.put(x.to_le_bytes()),
            I16(x) => self.put(x.to_le_bytes()),
            U32(x) => self.put(x.to_le_bytes()),
            I32(x) => self.put(x.to_le_bytes()),
            F32(x) => self.put(x.to_le_bytes()),
            Bool(x) => self.put([u8::from(*x)]),
            String(s) => self.string(s)?,
            Array(elem, items) => {
                self.u32(elem.id());
                self.len(items.len() as u64)?;
                for item in items {
                    self.value(item)?;
                }
            }
            U64(x) => self.put(x.to_le_bytes()),
            I64(x) => self.put(x.to_le_bytes()),
            F64(x) => self.put(x.to_le_bytes()),
        }
        Ok(())
    }
}
