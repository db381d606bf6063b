//! What the fuzz targets do with their input, shared with `tests/fuzz_regressions.rs`, which
//! replays every input in `fuzz/regressions/` (crashes found by fuzzing, once fixed).

#![allow(dead_code)]

use gguf::ffi::*;
use gguf::{ByteOrder, DataType, GgufFile, MetadataValue, Value, ValueType, Writer};
use std::ffi::CStr;
use std::hint::black_box;
#[path = "../tests/common/values.rs"]
mod values;
use values::{outcome, same, scalar};

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
    // The hyperparameters and the memory estimate read the header's numbers: an estimate or a
    // refusal, with the default parameters and with extreme ones.
    let Ok(model) = gguf::Model::single(f, "fuzz.gguf".into()) else {
        return;
    };
    let extreme = gguf::memory::MemoryParams {
        n_ctx: u32::MAX,
        n_ubatch: u32::MAX,
        n_seq_max: 256,
        n_gpu_layers: -1,
        ..gguf::memory::MemoryParams::default()
    };
    for p in [gguf::memory::MemoryParams::default(), extreme] {
        if let Ok(e) = gguf::memory::estimate(&model, &p) {
            assert_eq!(
                e.total,
                e.weights + e.k + e.v + e.recurrent + e.output + e.compute
            );
        }
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
        if let Some(v) = scalar(ty, x) {
            return v;
        }
        match ty {
            ValueType::String => V::String(self.bytes(24)),
            _ => {
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

/// The `tokenize` input's layout: two bytes (little-endian) give the length of a prefix, the
/// prefix holds 32 bytes of choices and then the text, and the rest is a GGUF file holding a
/// vocabulary (`fuzz/seeds/tokenize/` holds vocabularies cut down from llama.cpp's test files).
pub fn split_tokenize_input(data: &[u8]) -> (&[u8], &[u8], &[u8]) {
    let n = usize::from(u16::from_le_bytes([
        data.first().copied().unwrap_or(0),
        data.get(1).copied().unwrap_or(0),
    ]));
    let rest = data.get(2..).unwrap_or_default();
    let (prefix, file) = rest.split_at(n.min(rest.len()));
    let (choices, text) = prefix.split_at(32.min(prefix.len()));
    (choices, text, file)
}

/// A `tokenize` input from its parts.
pub fn tokenize_input(choices: &[u8; 32], text: &[u8], file: &[u8]) -> Vec<u8> {
    let n = u16::try_from(32 + text.len()).expect("a short text");
    let mut out = n.to_le_bytes().to_vec();
    out.extend_from_slice(choices);
    out.extend_from_slice(text);
    out.extend_from_slice(file);
    out
}

const SPECIAL_KEYS: &[&str] = &[
    "bos_token_id",
    "eos_token_id",
    "eot_token_id",
    "eom_token_id",
    "unknown_token_id",
    "seperator_token_id",
    "padding_token_id",
    "mask_token_id",
    "cls_token_id",
    "fim_pre_token_id",
    "fim_suf_token_id",
    "fim_mid_token_id",
    "fim_pad_token_id",
    "fim_rep_token_id",
    "fim_sep_token_id",
];

const FLAG_KEYS: &[&str] = &[
    "add_bos_token",
    "add_eos_token",
    "add_sep_token",
    "add_space_prefix",
    "remove_extra_whitespaces",
];

const MODELS: &[&str] = &[
    "llama",
    "gpt2",
    "bert",
    "t5",
    "rwkv",
    "plamo2",
    "no_vocab",
    "none",
    "hybriddna",
    "whitespace",
    "gemma4",
    "",
];

const PRES: &[&str] = &[
    "default",
    "llama3",
    "qwen2",
    "deepseek-llm",
    "deepseek-coder",
    "deepseek-v3",
    "falcon",
    "gpt-2",
    "starcoder",
    "command-r",
    "gpt-4o",
    "tekken",
    "kimi-k2",
    "gemma4",
    "chatglm-bpe",
    "viking",
    "jais",
    "superbpe",
    "bloom",
    "refact",
    "",
    "nonexistent",
];

/// Mutates the vocabulary `kvs` describes, one of a dozen ways chosen by `c`.
fn mutate_vocabulary(c: &mut Choices, kvs: &mut Vec<(String, MetadataValue)>) {
    use MetadataValue as V;
    let find =
        |kvs: &Vec<(String, MetadataValue)>, key: &str| kvs.iter().position(|(k, _)| k == key);
    let set = |kvs: &mut Vec<(String, MetadataValue)>, key: &str, v: MetadataValue| match kvs
        .iter()
        .position(|(k, _)| k == key)
    {
        Some(i) => kvs[i].1 = v,
        None => kvs.push((key.to_string(), v)),
    };
    let n_tokens = match find(kvs, "tokenizer.ggml.tokens").map(|i| &kvs[i].1) {
        Some(V::Array(_, items)) => items.len() as u64,
        _ => 0,
    };
    let token_string = |kvs: &Vec<(String, MetadataValue)>, i: u64| -> Vec<u8> {
        match find(kvs, "tokenizer.ggml.tokens").map(|k| &kvs[k].1) {
            Some(V::Array(_, items)) => match items.get(i as usize) {
                Some(V::String(s)) => s.clone(),
                _ => Vec::new(),
            },
            _ => Vec::new(),
        }
    };
    let array_item =
        |kvs: &mut Vec<(String, MetadataValue)>, key: &str, i: u64, v: MetadataValue| {
            if let Some(k) = kvs.iter().position(|(k, _)| k == key) {
                if let V::Array(_, items) = &mut kvs[k].1 {
                    if !items.is_empty() {
                        let n = items.len();
                        items[i as usize % n] = v;
                    }
                }
            }
        };
    // A token at the end, with its score and type.
    let push_token =
        |kvs: &mut Vec<(String, MetadataValue)>, text: Vec<u8>, score: f32, ty: i32| {
            for (key, v) in [
                ("tokens", V::String(text)),
                ("scores", V::F32(score)),
                ("token_type", V::I32(ty)),
            ] {
                if let Some(k) = find(kvs, &format!("tokenizer.ggml.{key}")) {
                    if let V::Array(_, items) = &mut kvs[k].1 {
                        items.push(v);
                    }
                }
            }
        };
    match c.below(15) {
        13 => {
            // A long token: a run of one byte (up to 4 KiB), maybe ending in another. Over a
            // run of that byte every walk goes far while the tokens matched stay short.
            let b = c.byte();
            let mut t = vec![b; 1 + c.below(4096) as usize];
            if c.byte() & 1 == 1 {
                t.push(c.byte());
            }
            let ty = i32::from(c.byte() % 7);
            push_token(kvs, t, -(c.byte() as f32), ty);
        }
        14 => {
            // Nested tokens, a run of one byte each one longer (up to 40), all of one type:
            // special ones occur many times at each position of a run (the partition).
            let b = c.byte();
            let ty = [1, 3, 4][c.below(3) as usize];
            for len in 1..=1 + c.below(40) as usize {
                push_token(kvs, vec![b; len], -(len as f32), ty);
            }
        }
        0 => {
            // A token's text: random bytes, or another token's (a duplicate).
            let i = c.below(n_tokens.max(1));
            let s = if c.byte() & 1 == 1 {
                let j = c.below(n_tokens.max(1));
                token_string(kvs, j)
            } else {
                c.bytes(12)
            };
            array_item(kvs, "tokenizer.ggml.tokens", i, V::String(s));
        }
        1 => {
            let i = c.below(n_tokens.max(1));
            let t = i32::from(c.byte() as i8 % 9);
            array_item(kvs, "tokenizer.ggml.token_type", i, V::I32(t));
        }
        2 => {
            let i = c.below(n_tokens.max(1));
            let s = match c.byte() % 5 {
                0 => f32::NAN,
                1 => f32::INFINITY,
                2 => f32::NEG_INFINITY,
                3 => -1e30,
                _ => f32::from_bits(c.u64() as u32),
            };
            array_item(kvs, "tokenizer.ggml.scores", i, V::F32(s));
        }
        3 => {
            // A merge: two tokens' texts, random bytes, or no space at all.
            let (a, b) = (c.below(n_tokens.max(1)), c.below(n_tokens.max(1)));
            let mut m = token_string(kvs, a);
            match c.byte() % 3 {
                0 => {
                    m.push(b' ');
                    m.extend(token_string(kvs, b));
                }
                1 => m = c.bytes(10),
                _ => {}
            }
            let i = c.u64();
            array_item(kvs, "tokenizer.ggml.merges", i, V::String(m));
        }
        4 => {
            let key = SPECIAL_KEYS[c.below(SPECIAL_KEYS.len() as u64) as usize];
            let id = match c.byte() % 5 {
                0 => 0,
                1 => n_tokens.saturating_sub(1),
                2 => n_tokens,
                3 => c.u64() & 0xffff_ffff,
                _ => c.below(n_tokens.max(1)),
            };
            set(kvs, &format!("tokenizer.ggml.{key}"), V::U32(id as u32));
        }
        5 => {
            let m = MODELS[c.below(MODELS.len() as u64) as usize];
            set(
                kvs,
                "tokenizer.ggml.model",
                V::String(m.as_bytes().to_vec()),
            );
        }
        6 => {
            let p = PRES[c.below(PRES.len() as u64) as usize];
            set(kvs, "tokenizer.ggml.pre", V::String(p.as_bytes().to_vec()));
        }
        7 => {
            // An array cut short (tokens, scores, types or merges out of step).
            let keys = ["tokens", "scores", "token_type", "merges"];
            let key = format!("tokenizer.ggml.{}", keys[c.below(4) as usize]);
            let keep = c.below(n_tokens + 1) as usize;
            if let Some(k) = find(kvs, &key) {
                if let V::Array(_, items) = &mut kvs[k].1 {
                    items.truncate(keep);
                }
            }
        }
        8 => {
            let key = FLAG_KEYS[c.below(FLAG_KEYS.len() as u64) as usize];
            let b = c.byte() & 1 == 1;
            set(kvs, &format!("tokenizer.ggml.{key}"), V::Bool(b));
        }
        9 => {
            if !kvs.is_empty() {
                let i = c.below(kvs.len() as u64) as usize;
                kvs.remove(i);
            }
        }
        10 => {
            // A new token at the end, with its score and type.
            let t = c.bytes(16);
            let score = -(c.byte() as f32);
            let ty = i32::from(c.byte() % 7);
            push_token(kvs, t, score, ty);
        }
        11 => {
            // A key of the wrong type.
            if !kvs.is_empty() {
                let i = c.below(kvs.len() as u64) as usize;
                let ty = ValueType::ALL[c.below(13) as usize];
                kvs[i].1 = c.value(ty, 1);
            }
        }
        _ => {
            // Attributes (lstrip/rstrip and the rest) on a token.
            let i = c.below(n_tokens.max(1));
            let a = c.u64() as i32;
            let key = "tokenizer.ggml.token_attr";
            if find(kvs, key).is_none() && n_tokens > 0 {
                let zeros = (0..n_tokens).map(|_| V::I32(0)).collect();
                set(kvs, key, V::Array(ValueType::Int32, zeros));
            }
            array_item(kvs, key, i, V::I32(a));
        }
    }
}

/// The `tokenize` target: a vocabulary (the input's file, mutated as its choices say: tokens'
/// texts, types, scores, merges, special ids, names, flags, attributes; long tokens and nested
/// ones, which hostile vocabularies use to make work quadratic) opened as a tokenizer must
/// give a tokenizer or an error with a message, never a panic; an accepted one tokenizes the
/// input's text (now and then a longer one made from it) with every flag into ids in range, adds exactly its BOS/EOS
/// with `add_special`, detokenizes what it gave, gives a piece for each id, refuses ids out of
/// range, and the C API gives the same counts under its sizing rule.
pub fn exercise_tokenize(data: &[u8]) {
    use gguf::tokenizer::Tokenizer;
    let (choices, text, file) = split_tokenize_input(data);
    let mut c = Choices(choices);
    let Ok(f) = GgufFile::from_bytes(file) else {
        return;
    };
    // Now and then a longer text: the text repeated, or a run of its first byte (the runs
    // that long and nested tokens make costly), 4 KiB or more.
    let longer: Vec<u8>;
    let text = match c.byte() % 8 {
        0 if !text.is_empty() => {
            longer = text.repeat(4096 / text.len() + 1);
            &longer[..]
        }
        1 => {
            longer = vec![text.first().copied().unwrap_or(b'a'); 4096];
            &longer[..]
        }
        _ => text,
    };
    let mut kvs: Vec<(String, MetadataValue)> = f
        .metadata()
        .map(|e| {
            (
                String::from_utf8_lossy(e.key).into_owned(),
                MetadataValue::from(e.value),
            )
        })
        .collect();
    for _ in 0..c.below(4) {
        mutate_vocabulary(&mut c, &mut kvs);
    }
    let mut w = Writer::new();
    for (k, v) in kvs {
        if w.add_metadata(&k, v).is_err() {
            return;
        }
    }
    let Ok(bytes) = w.to_bytes() else { return };
    let f = GgufFile::from_bytes(&bytes[..]).expect("what the writer writes, the reader reads");
    let t = match Tokenizer::from_file(&f) {
        Ok(t) => t,
        Err(e) => {
            assert!(!e.message().is_empty());
            return;
        }
    };
    let n = t.n_tokens();
    let sp = t.special_tokens();
    for id in [
        sp.bos, sp.eos, sp.eot, sp.unk, sp.sep, sp.pad, sp.mask, sp.nl,
    ]
    .into_iter()
    .flatten()
    {
        assert!(
            (0..n as i64).contains(&i64::from(id)),
            "special id {id} of {n}"
        );
    }
    for parse in [false, true] {
        let plain = t.tokenize(text, false, parse);
        let full = t.tokenize(text, true, parse);
        for &id in &full {
            assert!(id >= 0 && (id as usize) < n, "id {id} of {n}");
            assert!(t
                .token_to_piece(id, c.byte().into(), c.byte() & 1 == 1)
                .is_some());
        }
        // add_special adds at most one token before and one after, nothing in between.
        let at = if plain.is_empty() {
            Some(0)
        } else {
            full.windows(plain.len()).position(|w| w == &plain[..])
        };
        assert!(
            full.len() <= plain.len() + 2 && at.is_some_and(|p| p <= 1),
            "add_special changed the tokens: {plain:?} -> {full:?}"
        );
        for flags in 0..4 {
            t.detokenize(&full, flags & 1 == 1, flags & 2 == 2)
                .expect("ids the tokenizer gave detokenize");
        }
    }
    let bad = [n as i32, -1, i32::MAX, i32::MIN];
    for id in bad {
        assert!(t.token_to_piece(id, 0, true).is_none());
        assert!(t.detokenize(&[id], false, false).is_err());
    }

    // The C API on the same file: the same count, nothing written past max_tokens.
    let flags = u32::from(c.byte() & 3);
    let expected = t.tokenize(
        text,
        flags & GGUF_TOKENIZE_ADD_SPECIAL != 0,
        flags & GGUF_TOKENIZE_PARSE_SPECIAL != 0,
    );
    // SAFETY: `bytes` outlives the file handle; every buffer has the room given for it.
    unsafe {
        let h = gguf_open_memory(bytes.as_ptr().cast(), bytes.len());
        assert!(!h.is_null());
        let tok = gguf_tokenizer_open(h);
        gguf_close(h);
        assert!(!tok.is_null(), "the C API refuses what Rust accepts");
        let room = c.below(expected.len() as u64 + 2) as usize;
        let mut buf = vec![-7i32; room + 4];
        let got = gguf_tokenize(
            tok,
            text.as_ptr().cast(),
            text.len() as u64,
            if room == 0 {
                std::ptr::null_mut()
            } else {
                buf.as_mut_ptr()
            },
            room as u64,
            flags,
        );
        assert_eq!(got, expected.len() as i64);
        let written = expected.len().min(room);
        if expected.len() <= room {
            assert_eq!(&buf[..written], &expected[..]);
        }
        assert!(
            buf[room..].iter().all(|&x| x == -7),
            "written past max_tokens"
        );
        let mut piece = [0u8; 8];
        for &id in expected.iter().take(8) {
            // Its one flag is UNPARSE_SPECIAL (the tokenize flags' second bit, as it happens).
            let len = gguf_token_to_piece(tok, id, piece.as_mut_ptr().cast(), 8, flags & 2);
            assert!(len >= 0);
        }
        gguf_tokenizer_close(tok);
    }
}

/// The chat target's input: a template and a request, split at the first NUL (all template
/// when there is none, with a small request of its own).
pub fn split_chat_input(data: &[u8]) -> (&[u8], &[u8]) {
    match data.iter().position(|&b| b == 0) {
        Some(at) => (&data[..at], &data[at + 1..]),
        None => (
            data,
            br#"{"messages": [{"role": "user", "content": "hi"}], "add_generation_prompt": true}"#,
        ),
    }
}

/// Compiles the input's template and renders its request, through the Rust API and the C API:
/// the two agree, nothing panics, and the text stays within the renderer's output bound.
pub fn exercise_chat(data: &[u8]) {
    let (template, request) = split_chat_input(data);
    let Ok(source) = std::str::from_utf8(template) else {
        return;
    };
    let ours = gguf::chat::ChatTemplate::new(source).and_then(|t| t.render(request));
    if let Ok(text) = &ours {
        assert!(text.len() <= gguf::chat::MAX_OUTPUT_BYTES);
    }
    let mut out = vec![0u8; 4096];
    // SAFETY: each pointer is valid for the length given with it.
    let n = unsafe {
        gguf_chat_render_template(
            template.as_ptr().cast(),
            template.len() as u64,
            request.as_ptr().cast(),
            request.len() as u64,
            out.as_mut_ptr().cast(),
            out.len() as u64,
            0,
        )
    };
    match &ours {
        Ok(text) => {
            assert_eq!(n, text.len() as i64);
            if text.len() <= out.len() {
                assert_eq!(&out[..text.len()], text.as_bytes());
            }
        }
        Err(e) => {
            assert_eq!(n, -1);
            assert_eq!(gguf_last_error_code() as u32, e.code() as u32);
        }
    }
}

/// A small llama-like model for [`exercise_requantize`], written once per process: two layers,
/// rows of 32 and 256 values, F32 and F16 weights.
fn requantize_source() -> &'static std::path::Path {
    static PATH: std::sync::OnceLock<std::path::PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        let path =
            std::env::temp_dir().join(format!("gguf-fuzz-requantize-{}.gguf", std::process::id()));
        let mut w = Writer::new();
        w.set_sync(false);
        w.add_metadata("general.architecture", MetadataValue::string("llama"))
            .unwrap();
        w.add_metadata("llama.block_count", MetadataValue::U32(2))
            .unwrap();
        w.add_metadata("llama.attention.head_count", MetadataValue::U32(2))
            .unwrap();
        let mut tensors = vec![
            (
                "token_embd.weight".to_string(),
                vec![256u64, 4],
                DataType::F32,
            ),
            ("output.weight".to_string(), vec![256, 4], DataType::F16),
            ("output_norm.weight".to_string(), vec![256], DataType::F32),
        ];
        for l in 0..2 {
            for (n, row) in [
                ("attn_q", 256),
                ("attn_v", 256),
                ("ffn_down", 32),
                ("ffn_up", 256),
            ] {
                tensors.push((format!("blk.{l}.{n}.weight"), vec![row, 2], DataType::F32));
            }
            tensors.push((
                format!("blk.{l}.attn_norm.weight"),
                vec![256],
                DataType::F32,
            ));
        }
        for (i, (name, dims, ty)) in tensors.iter().enumerate() {
            let n: u64 = dims.iter().product();
            let v: Vec<f32> = (0..n)
                .map(|k| ((k * 37 + i as u64 * 11) % 101) as f32 / 50.0 - 1.0)
                .collect();
            let bytes = if *ty == DataType::F16 {
                let mut out = vec![0u8; v.len() * 2];
                gguf::quantize::quantize(DataType::F16, &v, dims[0] as usize, None, &mut out)
                    .unwrap();
                out
            } else {
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            };
            w.add_tensor(name, dims, *ty, bytes).unwrap();
        }
        w.write_file(&path).unwrap();
        path
    })
}

/// Splits a requantize input: 8 bytes of choices, then lines: `PATTERN=TYPE` arguments up to
/// an empty line, then tensor names to search.
pub fn split_requantize_input(data: &[u8]) -> ([u8; 8], Vec<String>, Vec<Vec<u8>>) {
    let mut choices = [0u8; 8];
    let n = data.len().min(8);
    choices[..n].copy_from_slice(&data[..n]);
    let rest = &data[n..];
    let mut args = Vec::new();
    let mut names = Vec::new();
    let mut in_names = false;
    for line in rest.split(|&b| b == b'\n').take(16) {
        if line.is_empty() {
            in_names = true;
        } else if in_names {
            names.push(line.to_vec());
        } else {
            args.push(String::from_utf8_lossy(line).into_owned());
        }
    }
    (choices, args, names)
}

/// Reads `--tensor-type` arguments and the other options from the input, searches the patterns
/// over fixed and given names, plans a requantization of a small model with them and, one time
/// in four, writes it (no file may be left after a failure; a pattern's search may fail, never
/// hang or panic).
pub fn exercise_requantize(data: &[u8]) {
    use gguf::requantize::{parse_tensor_type, plan, requantize_file, Options, Pattern};
    let (c, args, names) = split_requantize_input(data);
    let fixed: [&[u8]; 6] = [
        b"blk.0.attn_q.weight",
        b"blk.1.ffn_down.weight",
        b"token_embd.weight",
        b"output.weight",
        b"",
        b"blk.10.ffn_up_exps.weight",
    ];
    let mut types = Vec::new();
    for a in &args {
        let Ok((p, t)) = parse_tensor_type(a) else {
            continue;
        };
        let pattern = Pattern::new(&p).expect("a pattern parse_tensor_type accepted compiles");
        for n in fixed.iter().copied().chain(names.iter().map(|n| &n[..])) {
            if let Err(e) = pattern.search(n) {
                assert!(e.to_string().contains("pattern"), "{e}");
            }
        }
        types.push((p, t));
    }
    // Raw patterns too, not lower-cased.
    for a in &args {
        if let Ok(p) = Pattern::new(a) {
            for n in &names {
                black_box(p.search(n).is_ok());
            }
        }
    }
    const PRESETS: [&str; 12] = [
        "Q4_K_M",
        "Q8_0",
        "COPY",
        "F16",
        "Q2_K",
        "IQ4_XS",
        "Q5_K_S",
        "Q4_0",
        "BF16",
        "TQ1_0",
        "MXFP4_MOE",
        "Q6_K",
    ];
    let mut o = match Options::for_preset(PRESETS[usize::from(c[0]) % PRESETS.len()]) {
        Ok(o) => o,
        Err(_) => return,
    };
    o.sync = false;
    o.pure = c[1] & 1 != 0;
    o.leave_output_tensor = c[1] & 2 != 0;
    o.allow_requantize = c[1] & 4 != 0;
    o.keep_split = c[1] & 8 != 0;
    let pick = |b: u8| DataType::ALL[usize::from(b) % DataType::ALL.len()];
    if c[2] & 1 != 0 {
        o.output_tensor_type = Some(pick(c[3]));
    }
    if c[2] & 2 != 0 {
        o.token_embedding_type = Some(pick(c[4]));
    }
    o.split_max_tensors = usize::from(c[5] % 8);
    o.threads = u32::from(c[6] % 3);
    o.tensor_types = types;
    let src = requantize_source();
    let model = gguf::Model::open(src, gguf::OpenOptions::default()).unwrap();
    let planned = plan(&model, &o);
    if c[7] % 4 != 0 {
        black_box(planned.is_ok());
        return;
    }
    let dir = std::env::temp_dir().join(format!("gguf-fuzz-requantize-out-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let dst = dir.join("out.gguf");
    let r = requantize_file(src, &dst, &o, &mut |_| true);
    let left = std::fs::read_dir(&dir).unwrap().count();
    match r {
        Ok(s) => {
            assert!(planned.is_ok());
            assert_eq!(left, s.files.len());
            for f in &s.files {
                GgufFile::from_bytes(std::fs::read(f).unwrap()).unwrap();
            }
        }
        Err(e) => {
            assert_eq!(left, 0, "{e}: files left");
            black_box(e.to_string());
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
