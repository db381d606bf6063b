//! What the fuzz targets do with their input, shared with `tests/fuzz_regressions.rs`, which
//! replays every input in `fuzz/regressions/` (crashes found by fuzzing, once fixed).

#![allow(dead_code)]

use gguf::ffi::*;
use gguf::{ByteOrder, DataType, GgufFile, MetadataValue, Value, ValueType, Writer};
use std::ffi::CStr;
use std::hint::black_box;

/// Walks a value completely (arrays element by element).
fn walk(value: Value<'_>) -> u64 {
    match value {
        Value::Array(a) => {
            let mut n = 0;
            for item in a.iter() {
                n += walk(item);
            }
            assert_eq!(a.iter().count() as u64, a.len());
            n
        }
        Value::String(s) => s.len() as u64,
        other => {
            black_box(other);
            1
        }
    }
}

fn exercise_rust(data: &[u8]) {
    let Ok(f) = GgufFile::from_bytes(data) else {
        return;
    };
    for (i, e) in f.metadata().enumerate() {
        black_box(walk(e.value));
        assert_eq!(f.metadata_index(e.key), Some(i));
    }
    for (i, t) in f.tensors().enumerate() {
        assert_eq!(t.data.len() as u64, t.size);
        assert!(t.file_offset + t.size <= data.len() as u64);
        assert_eq!(f.tensor_index(t.name), Some(i));
        black_box((t.data.first(), t.data.last()));
    }
}

/// Checks that `ptr` (of `len` bytes) lies inside `data`.
fn inside(data: &[u8], ptr: *const u8, len: u64) {
    let start = data.as_ptr() as usize;
    let p = ptr as usize;
    assert!(p >= start && p + len as usize <= start + data.len());
}

unsafe fn exercise_c(data: &[u8]) {
    unsafe {
        let h = gguf_open_memory(data.as_ptr().cast(), data.len());
        if h.is_null() {
            assert_ne!(gguf_last_error_code(), 0);
            assert!(!CStr::from_ptr(gguf_last_error()).to_bytes().is_empty());
            return;
        }
        black_box((
            gguf_version(h),
            gguf_alignment(h),
            gguf_data_offset(h),
            gguf_byte_order(h),
        ));
        assert_eq!(gguf_file_size(h), data.len() as u64);
        for i in 0..gguf_metadata_count(h) {
            let kv = &*gguf_get_metadata_by_index(h, i);
            let key = CStr::from_ptr(kv.key);
            if key.to_bytes().len() as u64 == kv.key_len {
                assert!(std::ptr::eq(gguf_get_metadata(h, kv.key), kv));
            }
            if kv.r#type == ValueType::String as u32 {
                assert!(CStr::from_ptr(kv.value.str).to_bytes().len() as u64 <= kv.str_len);
            }
            if kv.r#type != ValueType::Array as u32 || kv.key_len != key.to_bytes().len() as u64 {
                continue;
            }
            inside(data, kv.array_data.cast(), kv.array_bytes);
            let elem = kv.array_type;
            let mut n = u64::MAX;
            macro_rules! typed {
                ($f:ident, $t:expr) => {{
                    let p = $f(h, kv.key, &mut n);
                    assert_eq!(p.is_null(), elem != $t as u32, stringify!($f));
                    if !p.is_null() {
                        assert_eq!(n, kv.array_len);
                        if n > 0 {
                            black_box(*p.add(n as usize - 1));
                        }
                        assert_eq!($f(h, kv.key, &mut n), p, "same pointer on the second call");
                    }
                }};
            }
            typed!(gguf_get_uint8_array, ValueType::Uint8);
            typed!(gguf_get_int8_array, ValueType::Int8);
            typed!(gguf_get_uint16_array, ValueType::Uint16);
            typed!(gguf_get_int16_array, ValueType::Int16);
            typed!(gguf_get_uint32_array, ValueType::Uint32);
            typed!(gguf_get_int32_array, ValueType::Int32);
            typed!(gguf_get_float_array, ValueType::Float32);
            typed!(gguf_get_bool_array, ValueType::Bool);
            typed!(gguf_get_uint64_array, ValueType::Uint64);
            typed!(gguf_get_int64_array, ValueType::Int64);
            typed!(gguf_get_float64_array, ValueType::Float64);
            let strings = gguf_get_string_array(h, kv.key, &mut n);
            assert_eq!(strings.is_null(), elem != ValueType::String as u32);
            if !strings.is_null() {
                for j in 0..n as usize {
                    black_box(CStr::from_ptr(*strings.add(j)));
                }
                for j in [0, n / 2, n.saturating_sub(1), n] {
                    let mut len = u64::MAX;
                    let s = gguf_get_array_string(h, kv.key, j, &mut len);
                    assert_eq!(s.is_null(), j >= n);
                    if !s.is_null() {
                        inside(data, s.cast(), len);
                    }
                }
            }
        }
        for i in 0..gguf_tensor_count(h) {
            let t = gguf_get_tensor_by_index(h, i);
            let info = &*t;
            let p = gguf_tensor_data(h, t).cast::<u8>();
            assert!(!p.is_null());
            inside(data, p, info.size_bytes);
            assert_eq!(
                p as usize - data.as_ptr() as usize,
                info.file_offset as usize
            );
            if info.size_bytes > 0 {
                black_box((*p, *p.add(info.size_bytes as usize - 1)));
            }
            if CStr::from_ptr(info.name).to_bytes().len() as u64 == info.name_len {
                assert!(std::ptr::eq(gguf_get_tensor(h, info.name), t));
            }
        }
        assert!(gguf_get_tensor_by_index(h, gguf_tensor_count(h)).is_null());
        assert!(gguf_get_metadata_by_index(h, gguf_metadata_count(h)).is_null());
        gguf_close(h);
    }
}

/// The `open` target: parse arbitrary bytes, then call every accessor.
pub fn exercise_open(data: &[u8]) {
    exercise_rust(data);
    // SAFETY: `data` outlives the handle, which is closed inside.
    unsafe { exercise_c(data) };
}

/// Draws choices from the fuzzer's bytes (zeros once they run out).
struct Choices<'a>(&'a [u8]);

impl Choices<'_> {
    fn byte(&mut self) -> u8 {
        let (&b, rest) = self.0.split_first().unwrap_or((&0, &[]));
        self.0 = rest;
        b
    }
    fn below(&mut self, n: u64) -> u64 {
        u64::from_le_bytes([self.byte(), self.byte(), 0, 0, 0, 0, 0, 0]) % n
    }
    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(std::array::from_fn(|_| self.byte()))
    }
    fn bytes(&mut self, max: u64) -> Vec<u8> {
        let n = self.below(max + 1);
        (0..n).map(|_| self.byte()).collect()
    }
    fn value(&mut self, ty: ValueType, depth: usize) -> MetadataValue {
        use MetadataValue as V;
        let x = self.u64();
        match ty {
            ValueType::Uint8 => V::U8(x as u8),
            ValueType::Int8 => V::I8(x as i8),
            ValueType::Uint16 => V::U16(x as u16),
            ValueType::Int16 => V::I16(x as i16),
            ValueType::Uint32 => V::U32(x as u32),
            ValueType::Int32 => V::I32(x as i32),
            ValueType::Float32 => V::F32(f32::from_bits(x as u32)),
            ValueType::Bool => V::Bool(x & 1 == 1),
            ValueType::String => V::String(self.bytes(24)),
            ValueType::Uint64 => V::U64(x),
            ValueType::Int64 => V::I64(x as i64),
            ValueType::Float64 => V::F64(f64::from_bits(x)),
            ValueType::Array => {
                let max = if depth >= 3 { 12 } else { 13 };
                let elem = ValueType::ALL[self.below(max) as usize];
                let elem = if elem == ValueType::Array && depth >= 3 {
                    ValueType::Uint8
                } else {
                    elem
                };
                let n = self.below(6);
                V::Array(elem, (0..n).map(|_| self.value(elem, depth + 1)).collect())
            }
        }
    }
}

fn same(a: &MetadataValue, b: &MetadataValue) -> bool {
    use MetadataValue::*;
    match (a, b) {
        (F32(x), F32(y)) => x.to_bits() == y.to_bits(),
        (F64(x), F64(y)) => x.to_bits() == y.to_bits(),
        (Array(ta, xs), Array(tb, ys)) => {
            ta == tb && xs.len() == ys.len() && xs.iter().zip(ys).all(|(x, y)| same(x, y))
        }
        _ => a == b,
    }
}

/// The `roundtrip` target: write what the choices describe, read it back, compare.
pub fn exercise_roundtrip(data: &[u8]) {
    let mut c = Choices(data);
    let mut w = Writer::new();
    w.set_version(1 + c.below(3) as u32).unwrap();
    w.set_byte_order(if c.byte() & 1 == 1 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    });
    if c.byte() & 1 == 1 {
        w.set_alignment(1 << c.below(13)).unwrap();
    }
    let mut kvs = Vec::new();
    for i in 0..c.below(8) {
        let ty = ValueType::ALL[c.below(13) as usize];
        let key = format!("k{i}.{}", String::from_utf8_lossy(&c.bytes(8)));
        let value = c.value(ty, 1);
        if w.add_metadata(&key, value.clone()).is_ok() {
            kvs.push((key, value));
        }
    }
    let mut tensors = Vec::new();
    for i in 0..c.below(6) {
        let dtype = DataType::ALL[c.below(DataType::ALL.len() as u64) as usize];
        let mut dims: Vec<u64> = (0..c.below(5)).map(|_| c.below(4)).collect();
        if let Some(first) = dims.first_mut() {
            *first = dtype.block_elems() * c.below(3);
        }
        let Some(size) = dtype.tensor_bytes(&dims) else {
            continue;
        };
        let fill = c.byte();
        let bytes = vec![fill; size as usize];
        if w.add_tensor(format!("t{i}"), &dims, dtype, bytes.clone())
            .is_ok()
        {
            tensors.push((format!("t{i}"), dims, dtype, bytes));
        }
    }
    let file = w
        .to_bytes()
        .expect("the writer accepted everything it was given");
    let f = GgufFile::from_bytes(&file[..]).expect("what the writer writes, the reader reads");
    for (key, value) in &kvs {
        let read = MetadataValue::from(f.get(key).expect("key present"));
        assert!(same(&read, value), "{key}: wrote {value:?}, read {read:?}");
    }
    assert_eq!(f.tensor_count(), tensors.len());
    for (name, dims, dtype, bytes) in &tensors {
        let t = f.tensor(name).expect("tensor present");
        assert_eq!(&t.dims[..dims.len()], &dims[..]);
        assert_eq!(t.dtype, *dtype);
        assert_eq!(t.data, &bytes[..]);
    }
    exercise_open(&file);
}

/// A file read by position in chunks of the sizes `chunks` cycles through (0: as much as asked),
/// as a slow disk or a network source delivers it.
struct Chunked {
    bytes: Vec<u8>,
    chunks: Vec<usize>,
    next: std::sync::atomic::AtomicUsize,
}

impl gguf::read_at::ReadAt for Chunked {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }

    fn read_at(&self, offset: u64, dst: &mut [u8]) -> gguf::Result<usize> {
        let k = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let chunk = match self.chunks[k % self.chunks.len()] {
            0 => dst.len(),
            n => n.min(dst.len()),
        };
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(self.bytes.len());
        let n = chunk.min(self.bytes.len() - start);
        dst[..n].copy_from_slice(&self.bytes[start..start + n]);
        Ok(n)
    }

    fn describe(&self) -> String {
        "<fuzz source>".to_string()
    }

    fn parallel(&self) -> bool {
        true
    }
}

/// What a parse gives, comparable across sources: the facts of an accepted file, or the code,
/// offset and message of a refusal.
fn outcome<S: AsRef<[u8]>>(r: &gguf::Result<GgufFile<S>>) -> String {
    match r {
        Ok(f) => format!(
            "ok v{} {} keys {} tensors data at {} size {}",
            f.version(),
            f.metadata_count(),
            f.tensor_count(),
            f.data_offset(),
            f.file_size()
        ),
        Err(e) => format!("{:?} at {:?}: {}", e.code(), e.offset(), e.message()),
    }
}

/// The C read callback over a whole file in memory (`user`: a `Vec<u8>`), answering each
/// request in full.
unsafe extern "C" fn serve(
    user: *mut std::ffi::c_void,
    offset: u64,
    dst: *mut std::ffi::c_void,
    size: u64,
) -> i64 {
    // SAFETY: `user` is the harness's `Vec<u8>`; `dst` has `size` writable bytes, and the
    // library asks for no more than the file's declared size (the Vec's length).
    unsafe {
        let bytes = &*(user as *const Vec<u8>);
        let start = (offset as usize).min(bytes.len());
        let n = (size as usize).min(bytes.len() - start);
        std::ptr::copy_nonoverlapping(bytes.as_ptr().add(start), dst.cast::<u8>(), n);
        n as i64
    }
}

/// The `read` target: the first bytes choose how the file is served (the first read's size,
/// the sizes of the chunks each read returns) and which tensors are read (some listed twice),
/// the rest is the file. The header read by position in growing prefixes must give exactly
/// the parse of the whole file; then every tensor read by `read_tensors` (and `read_tensor`
/// at chosen offsets) must give the bytes of the whole file, through the Rust API and through
/// `gguf_open_reader` and `gguf_read_tensors`; and out-of-range reads are refused.
pub fn exercise_read(data: &[u8]) {
    use gguf::load::{self, LoadOptions};
    use std::sync::Arc;

    let mut c = Choices(data.get(..16).unwrap_or(data));
    let file = data.get(16..).unwrap_or_default().to_vec();
    let first_chunk = 1 + c.below(1 << 12);
    let chunks: Vec<usize> = (0..1 + c.below(4))
        .map(|_| match c.byte() {
            b @ 0..=127 => usize::from(b),
            b => usize::from(b) * 97,
        })
        .collect();
    let threads = c.below(4) as u32;
    let repeat = c.u64();
    let source = Arc::new(Chunked {
        bytes: file.clone(),
        chunks,
        next: Default::default(),
    });
    let whole = GgufFile::from_bytes(&file[..]);
    let by_position = gguf::source::parse_source_from(source, first_chunk);
    assert_eq!(
        outcome(&whole),
        outcome(&by_position),
        "the header read by position from {first_chunk} bytes on parses otherwise"
    );
    let (Ok(whole), Ok(by_position)) = (whole, by_position) else {
        return;
    };
    let model = gguf::Model::single(by_position, "<fuzz source>".into()).unwrap();
    let n = whole.tensor_count();
    // Every tensor, then some listed again (bit k of `repeat` lists tensor k % n once more).
    let mut order: Vec<usize> = (0..n).collect();
    if n > 0 {
        order.extend((0..64).filter(|k| repeat >> k & 1 == 1).map(|k| k % n));
    }
    let expected: Vec<&[u8]> = whole.tensors().map(|t| t.data).collect();
    let mut bufs: Vec<Vec<u8>> = order
        .iter()
        .map(|&i| vec![0xEE; expected[i].len()])
        .collect();
    let requests = order
        .iter()
        .zip(bufs.iter_mut())
        .map(|(&i, b)| (i, &mut b[..]))
        .collect();
    let options = LoadOptions {
        threads,
        direct: false,
    };
    load::read_tensors(&model, requests, options, &mut |done, total| done <= total)
        .expect("every tensor of an accepted file is read");
    for (&i, b) in order.iter().zip(&bufs) {
        assert!(b[..] == *expected[i], "tensor {i} read by position differs");
    }
    for (i, t) in expected.iter().enumerate() {
        let len = t.len() as u64;
        let offset = repeat % (len + 1);
        let mut part = vec![0u8; (len - offset) as usize];
        load::read_tensor(&model, i, offset, &mut part).unwrap();
        assert!(part[..] == t[offset as usize..]);
        let e = load::read_tensor(&model, i, offset + 1, &mut part).unwrap_err();
        assert_eq!(e.code(), gguf::ErrorCode::InvalidArgument);
    }

    // The same through the C API.
    // SAFETY: `file` outlives the handle, closed below; each buffer has the bytes it is given
    // for.
    unsafe {
        let user = &file as *const Vec<u8> as *mut std::ffi::c_void;
        let h = gguf_open_reader(Some(serve), user, file.len() as u64, 0);
        assert!(!h.is_null(), "an accepted file fails through a reader");
        let infos: Vec<*const GGUFTensorInfo> = order
            .iter()
            .map(|&i| gguf_get_tensor_by_index(h, i as u64))
            .collect();
        for b in bufs.iter_mut() {
            b.fill(0xEE);
        }
        let dsts: Vec<*mut std::ffi::c_void> =
            bufs.iter_mut().map(|b| b.as_mut_ptr().cast()).collect();
        let ok = gguf_read_tensors(
            h,
            infos.as_ptr(),
            dsts.as_ptr(),
            order.len() as u64,
            threads,
            0,
            None,
            std::ptr::null_mut(),
        );
        assert!(ok, "gguf_read_tensors fails on an accepted file");
        for (&i, b) in order.iter().zip(&bufs) {
            assert!(
                b[..] == *expected[i],
                "tensor {i} read through the C API differs"
            );
        }
        if let (Some(&info), Some(b)) = (infos.first(), bufs.first_mut()) {
            let offset = repeat % ((*info).size_bytes + 1);
            assert!(!gguf_read_tensor(
                h,
                info,
                offset,
                b.as_mut_ptr().cast(),
                u64::MAX
            ));
            let nulls = [std::ptr::null::<GGUFTensorInfo>()];
            let huge = [1u64 << 40, 1 << 61, u64::MAX];
            for n in huge {
                assert!(!gguf_read_tensors(
                    h,
                    nulls.as_ptr(),
                    dsts.as_ptr(),
                    n,
                    0,
                    0,
                    None,
                    std::ptr::null_mut()
                ));
            }
        }
        gguf_close(h);
    }
}
