//! The tokenizer's working memory stays bounded by its input and output, not by some large
//! multiple of the text: each algorithm tokenizes a few MiB of real multi-script text while a
//! counting allocator records the peak of the heap, which must stay below twice the input plus
//! twice the output (the output vector may be reallocated as it grows) plus 1 MiB.

mod common;

use gguf::tokenizer::Tokenizer;
use gguf::GgufFile;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to the system allocator unchanged; only the byte counts are kept.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's layout, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
            PEAK.fetch_max(live, Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: a block this allocator gave out, with its layout.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: a block this allocator gave out, with its layout, and the caller's size.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            // Old and new block both counted: a moving reallocation holds both a moment.
            let live = LIVE.fetch_add(new_size, Relaxed) + new_size;
            PEAK.fetch_max(live, Relaxed);
            LIVE.fetch_sub(layout.size(), Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// The counts are the process's: one measurement at a time.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// About `len` bytes of llama.cpp's tokenizer test texts (many scripts), repeated.
fn text(len: usize) -> Vec<u8> {
    let dir = common::llama_src_dir().join("models");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "inp"))
        .collect();
    names.sort();
    let mut one = Vec::new();
    for p in names {
        one.extend(std::fs::read(p).unwrap());
    }
    assert!(one.len() > 4096, "too little test text");
    let mut all = Vec::with_capacity(len + one.len());
    while all.len() < len {
        all.extend_from_slice(&one);
    }
    all
}

/// The peak of the heap while `name` tokenizes `input` (above what was live before), and the
/// output's size in bytes.
fn peak(name: &str, input: &[u8]) -> (usize, usize) {
    let path = common::llama_src_dir().join(format!("models/ggml-vocab-{name}.gguf"));
    let file = GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let out = tok.tokenize(input, true, true);
    let peak = PEAK.load(Relaxed) - before;
    assert!(out.len() > input.len() / 16, "{name}: too few tokens");
    (peak, out.capacity() * 4)
}

#[test]
fn working_memory_is_bounded_by_input_and_output() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let input = text(2 << 20);
    let mut over = Vec::new();
    for name in ["llama-spm", "nomic-bert-moe", "bert-bge"] {
        let (peak, output) = peak(name, &input);
        let bound = 2 * input.len() + 2 * output + (1 << 20);
        eprintln!(
            "{name}: input {} B, output {output} B, peak {peak} B, bound {bound} B",
            input.len()
        );
        if peak > bound {
            over.push(format!("{name}: peak {peak} B over {bound} B"));
        }
    }
    assert!(over.is_empty(), "{}", over.join("\n"));
}

/// Gemma 3's vocabulary has 31 user-defined newline tokens, one to 31 newlines long: in a run of
/// newlines each of them occurs at nearly every position, 31 occurrences per byte, which the
/// special-token partition once recorded all at once (about 800 MB for 1 MiB of newlines).
/// llama-spm's vocabulary with those 31 tokens added, user-defined as in Gemma 3's: the same
/// bound holds, and the tokens are llama.cpp's (the longest run taken left to right, then what
/// is left).
#[test]
fn nested_special_tokens_keep_the_working_memory_bounded() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use gguf::{MetadataValue, ValueType, Writer};
    let path = common::llama_src_dir().join("models/ggml-vocab-llama-spm.gguf");
    let src = GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let mut w = Writer::new();
    w.copy_metadata_from(&src).unwrap();
    let array = |key: &str| match MetadataValue::from(src.get(key).unwrap()) {
        MetadataValue::Array(_, items) => items,
        _ => panic!("{key} is not an array"),
    };
    let (mut tokens, mut scores, mut types) = (
        array("tokenizer.ggml.tokens"),
        array("tokenizer.ggml.scores"),
        array("tokenizer.ggml.token_type"),
    );
    let first = tokens.len();
    for len in 1..=31 {
        tokens.push(MetadataValue::String(vec![b'\n'; len]));
        scores.push(MetadataValue::F32(0.0));
        types.push(MetadataValue::I32(4)); // user-defined
    }
    for (key, ty, items) in [
        ("tokenizer.ggml.tokens", ValueType::String, tokens),
        ("tokenizer.ggml.scores", ValueType::Float32, scores),
        ("tokenizer.ggml.token_type", ValueType::Int32, types),
    ] {
        w.set_metadata(key, MetadataValue::Array(ty, items))
            .unwrap();
    }
    let file = GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    let id_of = |len: usize| (first + len - 1) as i32;

    let input = vec![b'\n'; 1 << 20];
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let out = tok.tokenize(&input, false, false);
    let peak = PEAK.load(Relaxed) - before;
    let bound = 2 * input.len() + 2 * out.capacity() * 4 + (1 << 20);
    eprintln!("newlines: peak {peak} B, bound {bound} B");
    assert!(peak <= bound, "peak {peak} B over {bound} B");
    let runs = input.len() / 31;
    let mut want = vec![id_of(31); runs];
    if input.len() % 31 != 0 {
        want.push(id_of(input.len() % 31));
    }
    assert_eq!(out, want);
}

/// A Unigram vocabulary with a score of -inf makes the unknown character's score -inf too
/// (llama.cpp's: the lowest score less 10), so no path reaches past a character no token has,
/// and llama.cpp's whole table gives only the unknown token of such a position: the table is
/// still cut as it goes (what the parts before gave is dropped when the path ends unreached),
/// within the same bound, with llama.cpp's tokens.
#[test]
fn an_infinite_unigram_score_keeps_the_working_memory_bounded() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use gguf::{MetadataValue as V, ValueType, Writer};
    let mut w = Writer::new();
    w.add_metadata("tokenizer.ggml.model", V::string("t5"))
        .unwrap();
    let tokens = [&b"<unk>"[..], b"a", b"b"];
    w.add_metadata(
        "tokenizer.ggml.tokens",
        V::Array(
            ValueType::String,
            tokens.iter().map(|t| V::String(t.to_vec())).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.scores",
        V::Array(
            ValueType::Float32,
            [0.0, -1.0, f32::NEG_INFINITY]
                .into_iter()
                .map(V::F32)
                .collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.token_type",
        V::Array(
            ValueType::Int32,
            [2, 1, 1].into_iter().map(V::I32).collect(),
        ),
    )
    .unwrap();
    w.add_metadata("tokenizer.ggml.unknown_token_id", V::U32(0))
        .unwrap();
    let file = GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    for (input, want) in [
        // Every position reached: one `a` each.
        (vec![b'a'; 1 << 20], vec![1; 1 << 20]),
        // An `x` every KiB: nothing past the first is reached, llama.cpp gives the unknown
        // token alone.
        (
            (0..1 << 20)
                .map(|i| if i % 1024 == 1023 { b'x' } else { b'a' })
                .collect(),
            vec![0],
        ),
    ] {
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let out = tok.tokenize(&input, false, false);
        let peak = PEAK.load(Relaxed) - before;
        let bound = 2 * input.len() + 2 * out.capacity() * 4 + (1 << 20);
        eprintln!("unigram, -inf: peak {peak} B, bound {bound} B");
        assert!(peak <= bound, "peak {peak} B over {bound} B");
        assert_eq!(out, want);
    }
}

/// A Unigram vocabulary of `a` and `aa`: in a run of `a` every position is spanned by an edge
/// (`aa` from the one before), so the Viterbi table is never cut and holds the whole run. What
/// it keeps per position stays within the same bound (once about 40 bytes a byte), and the
/// tokens are llama.cpp's: `aa` beats two `a`, and of two equal paths to an odd position the
/// one whose last edge starts first (`aa`) is kept, so an odd run starts with its `a`.
#[test]
fn an_uncut_unigram_table_keeps_the_working_memory_bounded() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    use gguf::{MetadataValue as V, ValueType, Writer};
    let mut w = Writer::new();
    w.add_metadata("tokenizer.ggml.model", V::string("t5"))
        .unwrap();
    w.add_metadata("tokenizer.ggml.add_space_prefix", V::Bool(false))
        .unwrap();
    let tokens = [&b"<unk>"[..], b"a", b"aa"];
    w.add_metadata(
        "tokenizer.ggml.tokens",
        V::Array(
            ValueType::String,
            tokens.iter().map(|t| V::String(t.to_vec())).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.scores",
        V::Array(
            ValueType::Float32,
            [0.0, -1.0, -1.5].into_iter().map(V::F32).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.token_type",
        V::Array(
            ValueType::Int32,
            [2, 1, 1].into_iter().map(V::I32).collect(),
        ),
    )
    .unwrap();
    w.add_metadata("tokenizer.ggml.unknown_token_id", V::U32(0))
        .unwrap();
    let file = GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    for len in [1 << 20, (1 << 20) + 1] {
        let input = vec![b'a'; len];
        let before = LIVE.load(Relaxed);
        PEAK.store(before, Relaxed);
        let out = tok.tokenize(&input, false, false);
        let peak = PEAK.load(Relaxed) - before;
        let bound = 2 * input.len() + 2 * out.capacity() * 4 + (1 << 20);
        eprintln!("unigram, a and aa, {len} B: peak {peak} B, bound {bound} B");
        assert!(peak <= bound, "peak {peak} B over {bound} B");
        let mut want = vec![1; len % 2];
        want.resize(len % 2 + len / 2, 2);
        assert_eq!(out, want);
    }
}
