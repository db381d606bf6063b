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
