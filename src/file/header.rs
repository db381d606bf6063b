//! The header: the magic and version, the counts, the metadata entries, and the parse that puts
//! the file together (the tensor infos are read by [`super::walk`]).

use super::entry_error::{entry_error, reading, Entry};
use super::parsed::{KvRecord, Parsed};
use super::walk::{check_tensor_ranges, read_tensor_infos, TensorInfos};
use crate::error::{AlignmentFound, Error, ErrorKind, FirstSeen, Result, Shortfall};
use crate::format::{self, ByteOrder, Layout, ALIGNMENT_KEY, DEFAULT_ALIGNMENT};
use crate::index::NameIndex;
use crate::reader::ByteReader;
use crate::text::quote;
use crate::types::ValueType;
use crate::value::{self, RawValue};

/// Reads the magic and version; returns the version and byte order.
fn read_preamble(bytes: &[u8], size: u64) -> Result<(u32, ByteOrder)> {
    let probe = Layout::new(3, ByteOrder::Little);
    let mut r = ByteReader::sized(bytes, 0, probe, size);
    let magic = r.take(4, "the magic")?;
    if magic != format::MAGIC {
        return Err(Error::at_with(0, || ErrorKind::BadMagic {
            found: [magic[0], magic[1], magic[2], magic[3]],
        }));
    }
    let raw = r.u32("the version")?;
    let supported = format::MIN_VERSION..=format::MAX_VERSION;
    if supported.contains(&raw) {
        Ok((raw, ByteOrder::Little))
    } else if supported.contains(&raw.swap_bytes()) {
        Ok((raw.swap_bytes(), ByteOrder::Big))
    } else {
        Err(Error::at_with(4, || ErrorKind::UnsupportedVersion {
            found: raw,
        }))
    }
}

/// Reads a count from the header and checks that `count` entries of at least `min_size` bytes
/// each could fit in the rest of the file, before anything is allocated for them.
fn read_count(r: &mut ByteReader<'_>, what: &str, min_size: u64, kind: Count) -> Result<usize> {
    let at = r.pos();
    let count = r.len(what).map_err(header)?;
    if !r.fits(count, min_size) {
        let e = Error::at_with(at as u64, || kind.error(count, r.shortfall(min_size)));
        return Err(header(e));
    }
    // Over the first bytes of a file read by position, nothing is allocated for entries that
    // the bytes at hand cannot hold yet: the loader reads more first (up to its limit).
    let at_hand = (r.bytes().len() - r.pos()) as u64;
    let need = count.saturating_mul(min_size);
    if need > at_hand && r.left() > at_hand {
        return Err(Error::at_with(r.pos() as u64, || ErrorKind::Truncated {
            reading: format!("the entries {what} announces"),
            needed: need,
            remaining: at_hand,
            empty_file: false,
        }));
    }
    // Positions are kept as u32 in places; a file this large would need over 100 GB of header.
    if let Some(count) = u32::try_from(count)
        .ok()
        .and_then(|c| usize::try_from(c).ok())
    {
        return Ok(count);
    }
    let max = u64::from(u32::MAX);
    Err(Error::at_with(at as u64, || {
        kind.error(count, Shortfall::Limit { max })
    }))
}

/// Which count of the header [`read_count`] reads.
#[derive(Clone, Copy)]
enum Count {
    Tensors,
    Keys,
}

impl Count {
    #[cold]
    fn error(self, count: u64, shortfall: Shortfall) -> ErrorKind {
        match self {
            Count::Tensors => ErrorKind::TensorCountTooLarge { count, shortfall },
            Count::Keys => ErrorKind::KeyCountTooLarge { count, shortfall },
        }
    }
}

/// An error in the header (magic, version, counts), saying that the file ends early when the
/// bytes ran out; other errors there are clear as they are.
#[cold]
#[inline(never)]
fn header(e: Error) -> Error {
    if e.is_early_end() {
        reading(e, format_args!("the header"))
    } else {
        e
    }
}

/// Whether `e`, from parsing the first `have` bytes of a file of `size` bytes, only says that
/// the header goes on past them: parse a longer prefix.
pub(crate) fn needs_more(e: &Error, have: u64, size: u64) -> bool {
    have < size && e.code() == crate::error::ErrorCode::Truncated
}

/// Parses `bytes`, the whole file or (when `size` is larger) its first bytes.
pub(super) fn parse(bytes: &[u8], size: u64) -> Result<Parsed> {
    let (version, order) = read_preamble(bytes, size).map_err(header)?;
    let layout = Layout::new(version, order);
    let len = layout.len_size() as u64;
    let mut r = ByteReader::sized(bytes, 8, layout, size);

    // Smallest encodings: a tensor info with an empty name and no dimensions; a key of one byte
    // with a one-byte value.
    let min_tensor = len + 4 + 4 + 8;
    let min_kv = len + 1 + 4 + 1;
    let tensor_count = read_count(&mut r, "the tensor count", min_tensor, Count::Tensors)?;
    let kv_count = read_count(&mut r, "the key-value count", min_kv, Count::Keys)?;

    let kvs = read_metadata(&mut r, kv_count)?;
    let key_index = NameIndex::build(kvs.len(), |i| kvs[i].key.of(bytes)).map_err(|(a, b)| {
        Error::at_with(kvs[b].at as u64, || ErrorKind::DuplicateKey {
            key: quote(kvs[b].key.of(bytes)),
            first: FirstSeen::AtOffset(kvs[a].at as u64),
        })
    })?;
    let alignment = match key_index.find(ALIGNMENT_KEY, |i| kvs[i].key.of(bytes)) {
        Some(i) => check_alignment(&kvs[i])?,
        None => DEFAULT_ALIGNMENT,
    };

    let n = tensor_count as u64;
    if !r.fits(n, min_tensor) {
        let e = Error::at_with(r.pos() as u64, || {
            Count::Tensors.error(n, r.shortfall(min_tensor))
        });
        return Err(reading(e, format_args!("the tensor infos")));
    }
    let tensors_at = r.pos();
    let infos = read_tensor_infos(bytes, size, tensors_at, tensor_count, layout, alignment)?;
    let TensorInfos {
        tensors,
        end,
        tensor_index,
        in_order,
        max_end,
    } = infos;

    let data_offset = format::align_up(end as u64, alignment).ok_or_else(|| {
        Error::at_with(end as u64, || ErrorKind::SizeOverflow {
            tensor: None,
            what: "data section offset overflows".to_string(),
        })
    })?;
    // The common case, decided without another pass: every tensor ends inside the file, and the
    // data lie in file order without overlapping. Anything else gets the full check, which
    // finds the first offender.
    let all_inside = data_offset
        .checked_add(max_end)
        .is_some_and(|end| end <= size);
    if !(all_inside && in_order) {
        check_tensor_ranges(bytes, size, &tensors, layout, data_offset)?;
    }

    Ok(Parsed {
        version,
        layout,
        alignment,
        data_offset,
        tensor_infos: (tensors_at as u64, end as u64),
        size,
        kvs,
        tensors,
        key_index,
        tensor_index,
    })
}

fn read_metadata(r: &mut ByteReader<'_>, kv_count: usize) -> Result<Vec<KvRecord>> {
    let mut kvs = Vec::with_capacity(kv_count);
    let (bytes, layout) = (r.bytes(), r.layout());
    for i in 0..kv_count {
        let at = r.pos();
        let entry = |e| entry_error(e, bytes, layout, Entry::Metadata, (at, i, kv_count));
        let key = r.string("the key").map_err(entry)?;
        if key.len == 0 {
            let e = Error::at_with(at as u64, || ErrorKind::EmptyKey { refused: false });
            return Err(entry(e));
        }
        let ty = value::read_value_type(r, "the value type").map_err(entry)?;
        let value = value::read_value(r, ty, "the value").map_err(entry)?;
        kvs.push(KvRecord { at, key, value });
    }
    Ok(kvs)
}

fn check_alignment(kv: &KvRecord) -> Result<u64> {
    let found = match kv.value {
        RawValue::Scalar {
            ty: ValueType::Uint32,
            bits,
        } => bits,
        other => {
            let found = AlignmentFound::Type(other.value_type());
            let e = Error::at_with(kv.at as u64, || ErrorKind::BadAlignment { found });
            return Err(e.with_context("general.alignment"));
        }
    };
    if !found.is_power_of_two() || found > format::MAX_ALIGNMENT {
        let found = AlignmentFound::Value(found);
        let e = Error::at_with(kv.at as u64, || ErrorKind::BadAlignment { found });
        return Err(e.with_context("general.alignment"));
    }
    Ok(found)
}
