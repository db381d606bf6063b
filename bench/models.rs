//! The benchmark models: four GGUF files written with `gguf::Writer` from a seeded xorshift
//! stream (no external data), shaped like real models' headers with tiny tensor data.
//!
//! - `gemma3-like.gguf`: Gemma 3 270M's metadata and tensor names, a 262144-token SentencePiece
//!   vocabulary (tokens, scores, token types), 236 tensors of small shapes.
//! - `llama3-like.gguf`: Llama 3.1 8B's metadata and tensor names, a 128256-token byte-level BPE
//!   vocabulary with 280147 merges, 291 tensors of small shapes.
//! - `many-tensors.gguf`: 5000 small tensors, for name lookups.
//! - `tensors-1k.gguf`, `tensors-10k.gguf`, `tensors-100k.gguf`: 1000, 10000 and 100000 tiny
//!   tensors named like a mixture-of-experts model that stores one tensor per expert
//!   (`blk.L.ffn_up.E.weight`), with a handful of keys: opening them is all tensor infos.
//! - `gemma3-like-1tib.gguf`: gemma3-like's metadata and tensor names, with five tensors of about
//!   256 GiB each so the data section spans more than 1 TiB; a sparse file of which only the
//!   header is written.
//!
//! Included with `#[path]` by `examples/make_bench_models.rs` and `benches/open.rs`.

use gguf::{DataType, MappedFile, MetadataValue as V, ValueType, Writer};
use std::collections::HashSet;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Errors of the generators.
pub type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// File names, in the order they are written.
pub const GEMMA3: &str = "gemma3-like.gguf";
/// Llama 3 style model.
pub const LLAMA3: &str = "llama3-like.gguf";
/// 5000 tensors.
pub const MANY_TENSORS: &str = "many-tensors.gguf";
/// Sparse file whose data section spans more than 1 TiB.
pub const GEMMA3_1TIB: &str = "gemma3-like-1tib.gguf";
/// 1000 tensors, mixture-of-experts style.
pub const TENSORS_1K: &str = "tensors-1k.gguf";
/// 10000 tensors.
pub const TENSORS_10K: &str = "tensors-10k.gguf";
/// 100000 tensors.
pub const TENSORS_100K: &str = "tensors-100k.gguf";
/// The many-tensor models and their tensor counts.
pub const MOE: [(&str, usize); 3] = [
    (TENSORS_1K, 1_000),
    (TENSORS_10K, 10_000),
    (TENSORS_100K, 100_000),
];
/// Every model.
pub const ALL: [&str; 7] = [
    GEMMA3,
    LLAMA3,
    MANY_TENSORS,
    GEMMA3_1TIB,
    TENSORS_1K,
    TENSORS_10K,
    TENSORS_100K,
];

/// The vocabulary key every reader is asked for.
pub const TOKENS_KEY: &str = "tokenizer.ggml.tokens";

/// A deterministic xorshift64 stream.
pub struct Rng(u64);

impl Rng {
    /// A stream for `seed`.
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        (self.next_u64() >> 11) % n
    }

    /// True with probability `percent`/100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    /// `n` pseudo-random bytes.
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(n + 8);
        while out.len() < n {
            out.extend_from_slice(&self.next_u64().to_le_bytes());
        }
        out.truncate(n);
        out
    }
}

/// What was written, as read back.
pub struct Made {
    /// File name.
    pub name: &'static str,
    /// Full path.
    pub path: PathBuf,
    /// Size of the file (apparent size for the sparse one).
    pub file_size: u64,
    /// Header size: where the data section starts.
    pub header_size: u64,
    /// Number of metadata entries.
    pub keys: usize,
    /// Number of tensors.
    pub tensors: usize,
    /// Number of vocabulary tokens (0 if none).
    pub tokens: u64,
    /// Mean vocabulary token length in bytes (0 if none).
    pub mean_token_bytes: f64,
    /// The largest absolute tensor data offset.
    pub max_file_offset: u64,
}

/// Writes every model into `dir`; with `only_missing`, keeps the files that already exist.
pub fn generate(dir: &Path, only_missing: bool) -> Res<Vec<Made>> {
    generate_some(dir, only_missing, &ALL)
}

/// Writes the models named in `names` (from [`ALL`]) into `dir`, as [`generate`] does.
pub fn generate_some(dir: &Path, only_missing: bool, names: &[&'static str]) -> Res<Vec<Made>> {
    if let Some(unknown) = names.iter().find(|n| !ALL.contains(n)) {
        return Err(format!("no benchmark model named {unknown}").into());
    }
    std::fs::create_dir_all(dir)?;
    let missing =
        |name: &str| names.contains(&name) && (!only_missing || !dir.join(name).is_file());
    if missing(GEMMA3) || missing(GEMMA3_1TIB) {
        let meta = gemma3_metadata();
        if missing(GEMMA3) {
            write_with_data(&dir.join(GEMMA3), &meta, &gemma3_tensors(false), 0x6e33)?;
        }
        if missing(GEMMA3_1TIB) {
            write_header_only(&dir.join(GEMMA3_1TIB), &meta, &gemma3_tensors(true))?;
        }
    }
    if missing(LLAMA3) {
        write_with_data(
            &dir.join(LLAMA3),
            &llama3_metadata(),
            &llama3_tensors(),
            0x11a3,
        )?;
    }
    if missing(MANY_TENSORS) {
        write_with_data(
            &dir.join(MANY_TENSORS),
            &many_metadata(),
            &many_tensors(),
            0x5000,
        )?;
    }
    for (name, count) in MOE {
        if missing(name) {
            write_with_data(
                &dir.join(name),
                &moe_metadata(count),
                &moe_tensors(count),
                count as u64,
            )?;
        }
    }
    let made = names
        .iter()
        .map(|name| describe(name, &dir.join(name)))
        .collect::<Res<Vec<Made>>>()?;
    let big = made.iter().find(|m| m.name == GEMMA3_1TIB);
    if let Some(big) = big.filter(|big| big.max_file_offset <= 1 << 40) {
        return Err(format!(
            "{}: expected a tensor above 2^40, the largest offset is {}",
            big.path.display(),
            big.max_file_offset
        )
        .into());
    }
    Ok(made)
}

/// Opens a model with `MappedFile` and describes it.
pub fn describe(name: &'static str, path: &Path) -> Res<Made> {
    let file = MappedFile::open(path)?;
    let (tokens, mean_token_bytes) = match file.get(TOKENS_KEY).and_then(|v| v.as_array()) {
        Some(a) => {
            let total: usize = a.strings().map_or(0, |s| s.map(<[u8]>::len).sum());
            (a.len(), total as f64 / a.len().max(1) as f64)
        }
        None => (0, 0.0),
    };
    Ok(Made {
        name,
        path: path.to_path_buf(),
        file_size: file.file_size(),
        header_size: file.data_offset(),
        keys: file.metadata_count(),
        tensors: file.tensor_count(),
        tokens,
        mean_token_bytes,
        max_file_offset: file.tensors().map(|t| t.file_offset).max().unwrap_or(0),
    })
}

type Meta = Vec<(String, V)>;
type TensorSpec = (String, Vec<u64>, DataType);

fn new_writer(meta: &Meta) -> Res<Writer> {
    let mut w = Writer::new();
    for (k, v) in meta {
        w.add_metadata(k, v.clone())?;
    }
    Ok(w)
}

/// Writes to a temporary name and renames, so an interrupted run leaves no half file behind.
fn temp_path(path: &Path) -> PathBuf {
    let mut name = path.file_name().expect("a file name").to_os_string();
    name.push(".partial");
    path.with_file_name(name)
}

fn write_with_data(path: &Path, meta: &Meta, tensors: &[TensorSpec], seed: u64) -> Res<()> {
    let mut w = new_writer(meta)?;
    let mut rng = Rng::new(seed);
    for (name, dims, dtype) in tensors {
        let size = dtype.tensor_bytes(dims).ok_or("tensor size overflows")?;
        w.add_tensor(name, dims, *dtype, rng.bytes(size as usize))?;
    }
    let tmp = temp_path(path);
    w.write_file(&tmp)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

/// Writes only the header, then extends the file to its full size without writing (sparse).
fn write_header_only(path: &Path, meta: &Meta, tensors: &[TensorSpec]) -> Res<()> {
    let mut w = new_writer(meta)?;
    let mut end = 0u64;
    for (name, dims, dtype) in tensors {
        w.add_tensor_info(name, dims, *dtype)?;
    }
    let header = w.header_bytes()?;
    for ((_, dims, dtype), offset) in tensors.iter().zip(w.tensor_offsets()?) {
        let size = dtype.tensor_bytes(dims).ok_or("tensor size overflows")?;
        end = end.max(offset + size);
    }
    let tmp = temp_path(path);
    let mut file = std::fs::File::create(&tmp)?;
    file.write_all(&header)?;
    file.set_len(header.len() as u64 + end)?;
    drop(file);
    std::fs::rename(&tmp, path)?;
    Ok(())
}

fn s(v: &str) -> V {
    V::string(v)
}

fn string_array(items: impl IntoIterator<Item = Vec<u8>>) -> V {
    V::Array(
        ValueType::String,
        items.into_iter().map(V::String).collect(),
    )
}

// ---------------------------------------------------------------------------------------------
// Gemma 3 (SentencePiece vocabulary)

const GEMMA3_VOCAB: usize = 262_144;

/// Gemma 3 270M's layout, shrunk: 18 layers, 13 tensors each, plus the embedding and final norm.
fn gemma3_tensors(huge: bool) -> Vec<TensorSpec> {
    const EMBD: u64 = 256;
    const HEAD: u64 = 64;
    const FFN: u64 = 512;
    // About 256 GiB each: 2^36 F32 elements, and 65536 x 3947580 Q8_0 elements.
    let huge_f32 = vec![65_536, 1_048_576];
    let huge_q8 = vec![65_536, 3_947_580];
    let mut t: Vec<TensorSpec> = Vec::new();
    let embd = if huge {
        huge_q8.clone()
    } else {
        vec![EMBD, 1024]
    };
    t.push(("token_embd.weight".into(), embd, DataType::Q8_0));
    for l in 0..18u32 {
        let n = |what: &str| format!("blk.{l}.{what}.weight");
        let up = if huge && l % 4 == 3 {
            huge_f32.clone()
        } else {
            vec![EMBD, FFN]
        };
        let up_type = if huge && l % 4 == 3 {
            DataType::F32
        } else {
            DataType::Q4_K
        };
        t.extend([
            (n("attn_norm"), vec![EMBD], DataType::F32),
            (n("attn_q"), vec![EMBD, 4 * HEAD], DataType::Q8_0),
            (n("attn_k"), vec![EMBD, HEAD], DataType::Q8_0),
            (n("attn_v"), vec![EMBD, HEAD], DataType::BF16),
            (n("attn_q_norm"), vec![HEAD], DataType::F32),
            (n("attn_k_norm"), vec![HEAD], DataType::F32),
            (n("attn_output"), vec![4 * HEAD, EMBD], DataType::Q8_0),
            (n("post_attention_norm"), vec![EMBD], DataType::F32),
            (n("ffn_norm"), vec![EMBD], DataType::F32),
            (n("ffn_gate"), vec![EMBD, FFN], DataType::Q4_K),
            (n("ffn_up"), up, up_type),
            (n("ffn_down"), vec![FFN, EMBD], DataType::Q6_K),
            (n("post_ffw_norm"), vec![EMBD], DataType::F32),
        ]);
    }
    t.push(("output_norm.weight".into(), vec![EMBD], DataType::F32));
    t
}

fn gemma3_metadata() -> Meta {
    let (tokens, scores, types) = sentencepiece_vocab(GEMMA3_VOCAB, 0x6e3a);
    vec![
        ("general.architecture".into(), s("gemma3")),
        ("general.type".into(), s("model")),
        ("general.name".into(), s("Gemma 3 270m It")),
        ("general.finetune".into(), s("it")),
        ("general.basename".into(), s("gemma-3")),
        ("general.size_label".into(), s("270M")),
        ("general.license".into(), s("gemma")),
        (
            "general.tags".into(),
            string_array(
                ["gemma3", "gemma", "google", "text-generation"]
                    .iter()
                    .map(|t| t.as_bytes().to_vec()),
            ),
        ),
        ("general.quantization_version".into(), V::U32(2)),
        ("general.file_type".into(), V::U32(7)),
        ("gemma3.context_length".into(), V::U32(32_768)),
        ("gemma3.embedding_length".into(), V::U32(640)),
        ("gemma3.block_count".into(), V::U32(18)),
        ("gemma3.feed_forward_length".into(), V::U32(2048)),
        ("gemma3.attention.head_count".into(), V::U32(4)),
        ("gemma3.attention.head_count_kv".into(), V::U32(1)),
        ("gemma3.attention.key_length".into(), V::U32(256)),
        ("gemma3.attention.value_length".into(), V::U32(256)),
        (
            "gemma3.attention.layer_norm_rms_epsilon".into(),
            V::F32(1e-6),
        ),
        ("gemma3.attention.sliding_window".into(), V::U32(512)),
        ("gemma3.rope.freq_base".into(), V::F32(1_000_000.0)),
        ("tokenizer.ggml.model".into(), s("llama")),
        ("tokenizer.ggml.pre".into(), s("default")),
        (TOKENS_KEY.into(), string_array(tokens)),
        (
            "tokenizer.ggml.scores".into(),
            V::Array(ValueType::Float32, scores.into_iter().map(V::F32).collect()),
        ),
        (
            "tokenizer.ggml.token_type".into(),
            V::Array(ValueType::Int32, types.into_iter().map(V::I32).collect()),
        ),
        ("tokenizer.ggml.bos_token_id".into(), V::U32(2)),
        ("tokenizer.ggml.eos_token_id".into(), V::U32(1)),
        ("tokenizer.ggml.unknown_token_id".into(), V::U32(3)),
        ("tokenizer.ggml.padding_token_id".into(), V::U32(0)),
        ("tokenizer.ggml.add_bos_token".into(), V::Bool(true)),
        ("tokenizer.ggml.add_eos_token".into(), V::Bool(false)),
        ("tokenizer.ggml.add_space_prefix".into(), V::Bool(false)),
        ("tokenizer.chat_template".into(), s(GEMMA3_TEMPLATE)),
    ]
}

/// Token types, as llama.cpp numbers them.
const NORMAL: i32 = 1;
const UNKNOWN: i32 = 2;
const CONTROL: i32 = 3;
const UNUSED: i32 = 5;
const BYTE: i32 = 6;

const SPACE: &str = "\u{2581}"; // '▁', 3 bytes in UTF-8

/// A SentencePiece vocabulary: special tokens, 256 byte tokens, then unique pieces, many of
/// them starting with '▁'.
fn sentencepiece_vocab(n: usize, seed: u64) -> (Vec<Vec<u8>>, Vec<f32>, Vec<i32>) {
    let mut tokens: Vec<Vec<u8>> = Vec::with_capacity(n);
    let mut types = Vec::with_capacity(n);
    for (t, ty) in [
        ("<pad>", CONTROL),
        ("<eos>", CONTROL),
        ("<bos>", CONTROL),
        ("<unk>", UNKNOWN),
        ("<mask>", CONTROL),
        ("[multimodal]", CONTROL),
    ] {
        tokens.push(t.into());
        types.push(ty);
    }
    for i in 0..99 {
        tokens.push(format!("<unused{i}>").into_bytes());
        types.push(UNUSED);
    }
    for t in [
        "<start_of_turn>",
        "<end_of_turn>",
        "<start_of_image>",
        "<end_of_image>",
    ] {
        tokens.push(t.into());
        types.push(CONTROL);
    }
    for b in 0..=255u8 {
        tokens.push(format!("<0x{b:02X}>").into_bytes());
        types.push(BYTE);
    }
    let last = b"<image_soft_token>".to_vec();
    let mut seen: HashSet<Vec<u8>> = tokens.iter().cloned().collect();
    seen.insert(last.clone());
    let mut rng = Rng::new(seed);
    while tokens.len() < n - 1 {
        let piece = sp_piece(&mut rng);
        if seen.insert(piece.clone()) {
            tokens.push(piece);
            types.push(NORMAL);
        }
    }
    tokens.push(last);
    types.push(CONTROL);
    let scores = types
        .iter()
        .enumerate()
        .map(|(i, &ty)| if ty == NORMAL { -(i as f32) } else { 0.0 })
        .collect();
    (tokens, scores, types)
}

/// Letters roughly by English frequency.
const LETTERS: &[u8] = b"eeeeeeeeeeeettttttttaaaaaaaaoooooooiiiiiiinnnnnnnssssssrrrrrrhhhhhlllldddcccuuummfwgypbvkjxqz";
const PUNCT: &[u8] = b"0123456789.,;:!?()[]{}<>-_=+*/\\\"'#@$%&|~`^";

fn push_char(out: &mut Vec<u8>, c: char) {
    let mut buf = [0u8; 4];
    out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
}

fn latin_word(rng: &mut Rng, out: &mut Vec<u8>) {
    let n = 1 + rng.below(4) + rng.below(4) + rng.below(3);
    let capital = rng.chance(12);
    for i in 0..n {
        let c = LETTERS[rng.below(LETTERS.len() as u64) as usize];
        out.push(if capital && i == 0 {
            c.to_ascii_uppercase()
        } else {
            c
        });
    }
}

/// Raw text of one word-like piece: Latin, Cyrillic, CJK, Devanagari, digits or punctuation.
fn raw_word(rng: &mut Rng, out: &mut Vec<u8>) {
    match rng.below(100) {
        0..=61 => latin_word(rng, out),
        62..=73 => {
            for _ in 0..1 + rng.below(5) {
                push_char(out, char::from_u32(0x430 + rng.below(32) as u32).unwrap());
            }
        }
        74..=84 => {
            for _ in 0..1 + rng.below(3) {
                push_char(
                    out,
                    char::from_u32(0x4E00 + rng.below(0x5000) as u32).unwrap(),
                );
            }
        }
        85..=90 => {
            for _ in 0..1 + rng.below(4) {
                push_char(out, char::from_u32(0x915 + rng.below(0x30) as u32).unwrap());
            }
        }
        _ => {
            for _ in 0..1 + rng.below(3) {
                out.push(PUNCT[rng.below(PUNCT.len() as u64) as usize]);
            }
        }
    }
}

/// Cuts `piece` to at most `max` bytes at a character boundary.
fn cap(mut piece: Vec<u8>, max: usize) -> Vec<u8> {
    while piece.len() > max {
        piece.pop();
        while piece.last().is_some_and(|&b| b & 0xC0 == 0x80) {
            piece.pop();
        }
        if piece.last().is_some_and(|&b| b >= 0xC0) {
            piece.pop();
        }
    }
    piece
}

fn sp_piece(rng: &mut Rng) -> Vec<u8> {
    let mut p = Vec::new();
    if rng.chance(4) {
        // Runs of spaces and newlines (code indentation).
        let unit = if rng.chance(70) { SPACE } else { "\n" };
        for _ in 0..1 + rng.below(8) {
            p.extend_from_slice(unit.as_bytes());
        }
        return cap(p, 24);
    }
    if rng.chance(58) {
        p.extend_from_slice(SPACE.as_bytes());
    }
    raw_word(rng, &mut p);
    if rng.chance(8) {
        raw_word(rng, &mut p);
    }
    cap(p, 24)
}

// ---------------------------------------------------------------------------------------------
// Llama 3 (GPT-2 byte-level BPE vocabulary)

const LLAMA3_BASE: usize = 128_000;
const LLAMA3_MERGES: usize = 280_147;

fn llama3_tensors() -> Vec<TensorSpec> {
    const EMBD: u64 = 256;
    const KV: u64 = 64;
    const FFN: u64 = 512;
    let mut t: Vec<TensorSpec> =
        vec![("token_embd.weight".into(), vec![EMBD, 512], DataType::Q4_K)];
    for l in 0..32u32 {
        let n = |what: &str| format!("blk.{l}.{what}.weight");
        t.extend([
            (n("attn_norm"), vec![EMBD], DataType::F32),
            (n("attn_q"), vec![EMBD, EMBD], DataType::Q4_K),
            (n("attn_k"), vec![EMBD, KV], DataType::Q4_K),
            (n("attn_v"), vec![EMBD, KV], DataType::Q6_K),
            (n("attn_output"), vec![EMBD, EMBD], DataType::Q4_K),
            (n("ffn_norm"), vec![EMBD], DataType::F32),
            (n("ffn_gate"), vec![EMBD, FFN], DataType::Q4_K),
            (n("ffn_up"), vec![EMBD, FFN], DataType::Q4_K),
            (n("ffn_down"), vec![FFN, EMBD], DataType::Q6_K),
        ]);
    }
    t.push(("output_norm.weight".into(), vec![EMBD], DataType::F32));
    t.push(("output.weight".into(), vec![EMBD, 512], DataType::Q6_K));
    t
}

fn llama3_metadata() -> Meta {
    let (tokens, types, merges) = bpe_vocab(0x11a3);
    vec![
        ("general.architecture".into(), s("llama")),
        ("general.type".into(), s("model")),
        ("general.name".into(), s("Meta Llama 3.1 8B Instruct")),
        ("general.finetune".into(), s("Instruct")),
        ("general.basename".into(), s("Meta-Llama-3.1")),
        ("general.size_label".into(), s("8B")),
        ("general.license".into(), s("llama3.1")),
        (
            "general.languages".into(),
            string_array(
                ["en", "de", "fr", "it", "pt", "hi", "es", "th"]
                    .iter()
                    .map(|t| t.as_bytes().to_vec()),
            ),
        ),
        ("general.quantization_version".into(), V::U32(2)),
        ("general.file_type".into(), V::U32(15)),
        ("llama.block_count".into(), V::U32(32)),
        ("llama.context_length".into(), V::U32(131_072)),
        ("llama.embedding_length".into(), V::U32(4096)),
        ("llama.feed_forward_length".into(), V::U32(14_336)),
        ("llama.attention.head_count".into(), V::U32(32)),
        ("llama.attention.head_count_kv".into(), V::U32(8)),
        ("llama.rope.freq_base".into(), V::F32(500_000.0)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            V::F32(1e-5),
        ),
        ("llama.rope.dimension_count".into(), V::U32(128)),
        ("llama.vocab_size".into(), V::U32(128_256)),
        ("tokenizer.ggml.model".into(), s("gpt2")),
        ("tokenizer.ggml.pre".into(), s("llama-bpe")),
        (TOKENS_KEY.into(), string_array(tokens)),
        (
            "tokenizer.ggml.token_type".into(),
            V::Array(ValueType::Int32, types.into_iter().map(V::I32).collect()),
        ),
        ("tokenizer.ggml.merges".into(), string_array(merges)),
        ("tokenizer.ggml.bos_token_id".into(), V::U32(128_000)),
        ("tokenizer.ggml.eos_token_id".into(), V::U32(128_009)),
        ("tokenizer.chat_template".into(), s(LLAMA3_TEMPLATE)),
    ]
}

/// GPT-2's byte-to-character map: printable bytes stand for themselves, the others for
/// U+0100 onwards (so ' ' is 'Ġ' and '\n' is 'Ċ'). Returns the characters in GPT-2's order.
fn byte_chars() -> ([char; 256], Vec<u8>) {
    let mut order: Vec<u8> = (b'!'..=b'~')
        .chain(0xA1..=0xAC)
        .chain(0xAE..=0xFF)
        .collect();
    let mut map = ['\0'; 256];
    for &b in &order {
        map[b as usize] = char::from(b);
    }
    let mut next = 0x100u32;
    for b in 0..=255u8 {
        if map[b as usize] == '\0' {
            map[b as usize] = char::from_u32(next).unwrap();
            next += 1;
            order.push(b);
        }
    }
    (map, order)
}

fn bpe_vocab(seed: u64) -> (Vec<Vec<u8>>, Vec<i32>, Vec<Vec<u8>>) {
    let (map, order) = byte_chars();
    let encode = |raw: &[u8]| {
        let mut out = Vec::with_capacity(raw.len() * 2);
        for &b in raw {
            push_char(&mut out, map[b as usize]);
        }
        out
    };
    let mut tokens: Vec<Vec<u8>> = order.iter().map(|&b| encode(&[b])).collect();
    let mut seen: HashSet<Vec<u8>> = tokens.iter().cloned().collect();
    let mut rng = Rng::new(seed);
    while tokens.len() < LLAMA3_BASE {
        let mut raw = Vec::new();
        match rng.below(100) {
            0..=3 => {
                for _ in 0..1 + rng.below(4) {
                    raw.push(if rng.chance(60) { b'\n' } else { b' ' });
                }
            }
            4..=8 => {
                if rng.chance(50) {
                    raw.push(b' ');
                }
                for _ in 0..1 + rng.below(3) {
                    raw.push(b'0' + rng.below(10) as u8);
                }
            }
            _ => {
                if rng.chance(62) {
                    raw.push(b' ');
                }
                match rng.below(100) {
                    0..=79 => latin_word(&mut rng, &mut raw),
                    _ => raw_word(&mut rng, &mut raw),
                }
            }
        }
        let token = cap(encode(&raw), 24);
        if !token.is_empty() && seen.insert(token.clone()) {
            tokens.push(token);
        }
    }
    let mut types = vec![NORMAL; tokens.len()];
    for i in 0..256 {
        let name = match i {
            0 => "<|begin_of_text|>".to_string(),
            1 => "<|end_of_text|>".to_string(),
            2 => "<|reserved_special_token_0|>".to_string(),
            3 => "<|reserved_special_token_1|>".to_string(),
            4 => "<|finetune_right_pad_id|>".to_string(),
            5 => "<|reserved_special_token_2|>".to_string(),
            6 => "<|start_header_id|>".to_string(),
            7 => "<|end_header_id|>".to_string(),
            8 => "<|eom_id|>".to_string(),
            9 => "<|eot_id|>".to_string(),
            10 => "<|python_tag|>".to_string(),
            _ => format!("<|reserved_special_token_{}|>", i - 8),
        };
        tokens.push(name.into_bytes());
        types.push(CONTROL);
    }
    // Merges "a b": a learned token split at a character boundary, earlier tokens more often.
    let mut merges = Vec::with_capacity(LLAMA3_MERGES);
    while merges.len() < LLAMA3_MERGES {
        let span = (LLAMA3_BASE - 256) as u64;
        let id = 256 + rng.below(span).min(rng.below(span)) as usize;
        let t = &tokens[id];
        let starts: Vec<usize> = (1..t.len()).filter(|&i| t[i] & 0xC0 != 0x80).collect();
        if starts.is_empty() {
            continue;
        }
        let at = starts[rng.below(starts.len() as u64) as usize];
        let mut m = Vec::with_capacity(t.len() + 1);
        m.extend_from_slice(&t[..at]);
        m.push(b' ');
        m.extend_from_slice(&t[at..]);
        merges.push(m);
    }
    (tokens, types, merges)
}

// ---------------------------------------------------------------------------------------------
// Many tensors

fn many_tensors() -> Vec<TensorSpec> {
    const NAMES: [&str; 10] = [
        "attn_norm",
        "attn_q",
        "attn_k",
        "attn_v",
        "attn_output",
        "ffn_norm",
        "ffn_gate",
        "ffn_up",
        "ffn_down",
        "ffn_gate_inp",
    ];
    (0..500u32)
        .flat_map(|l| {
            NAMES.iter().enumerate().map(move |(i, what)| {
                let dtype = match i {
                    0 | 5 => DataType::F32,
                    9 => DataType::F16,
                    _ => DataType::Q8_0,
                };
                (format!("blk.{l}.{what}.weight"), vec![32], dtype)
            })
        })
        .collect()
}

fn many_metadata() -> Meta {
    vec![
        ("general.architecture".into(), s("llama")),
        ("general.type".into(), s("model")),
        ("general.name".into(), s("many tensors")),
        ("general.file_type".into(), V::U32(7)),
        ("general.quantization_version".into(), V::U32(2)),
        ("llama.block_count".into(), V::U32(500)),
        ("llama.context_length".into(), V::U32(4096)),
        ("llama.embedding_length".into(), V::U32(32)),
        ("llama.feed_forward_length".into(), V::U32(32)),
        ("llama.attention.head_count".into(), V::U32(1)),
        ("llama.attention.head_count_kv".into(), V::U32(1)),
        (
            "llama.attention.layer_norm_rms_epsilon".into(),
            V::F32(1e-5),
        ),
        ("llama.rope.freq_base".into(), V::F32(10_000.0)),
    ]
}

/// `count` tensors laid out like a mixture-of-experts model with one tensor per expert (as
/// Mixtral's first GGUF files were): per layer the attention tensors, the router, then 64
/// experts' gate, up and down projections; the last layer is cut where the count is reached.
/// Shapes are tiny and types mixed, so the data section stays small (a few bytes a tensor).
fn moe_tensors(count: usize) -> Vec<TensorSpec> {
    const EXPERTS: u32 = 64;
    let layer = |l: u32| {
        let n = move |what: &str| format!("blk.{l}.{what}.weight");
        let attn = [
            (n("attn_norm"), vec![32], DataType::F32),
            (n("attn_q"), vec![32, 2], DataType::Q8_0),
            (n("attn_k"), vec![32], DataType::Q8_0),
            (n("attn_v"), vec![32], DataType::Q8_0),
            (n("attn_output"), vec![32, 2], DataType::Q8_0),
            (n("ffn_norm"), vec![32], DataType::F32),
            (n("ffn_gate_inp"), vec![32, 2], DataType::F16),
        ];
        let experts = (0..EXPERTS).flat_map(move |e| {
            let n = move |what: &str| format!("blk.{l}.{what}.{e}.weight");
            [
                (n("ffn_gate"), vec![256], DataType::Q4_K),
                (n("ffn_up"), vec![256], DataType::Q4_K),
                (n("ffn_down"), vec![32], DataType::Q8_0),
            ]
        });
        attn.into_iter().chain(experts)
    };
    let head = [("token_embd.weight".to_string(), vec![32, 4], DataType::Q8_0)];
    head.into_iter()
        .chain((0..).flat_map(layer))
        .take(count)
        .collect()
}

fn moe_metadata(count: usize) -> Meta {
    vec![
        ("general.architecture".into(), s("llama")),
        ("general.type".into(), s("model")),
        ("general.name".into(), s(&format!("{count} tensors"))),
        ("general.file_type".into(), V::U32(15)),
        ("general.quantization_version".into(), V::U32(2)),
        (
            "llama.block_count".into(),
            V::U32(count.div_ceil(199) as u32),
        ),
        ("llama.context_length".into(), V::U32(4096)),
        ("llama.embedding_length".into(), V::U32(32)),
        ("llama.expert_count".into(), V::U32(64)),
        ("llama.expert_used_count".into(), V::U32(2)),
        ("llama.attention.head_count".into(), V::U32(1)),
        ("llama.rope.freq_base".into(), V::F32(10_000.0)),
    ]
}

// ---------------------------------------------------------------------------------------------
// Chat templates: Jinja of the size and shape of the models' own (Gemma 3's, Llama 3.1's).

const GEMMA3_TEMPLATE: &str = r#"{{ bos_token }}
{%- if messages[0]['role'] == 'system' -%}
    {%- if messages[0]['content'] is string -%}
        {%- set first_user_prefix = messages[0]['content'] + '

' -%}
    {%- else -%}
        {%- set first_user_prefix = messages[0]['content'][0]['text'] + '

' -%}
    {%- endif -%}
    {%- set loop_messages = messages[1:] -%}
{%- else -%}
    {%- set first_user_prefix = "" -%}
    {%- set loop_messages = messages -%}
{%- endif -%}
{%- if tools is defined and tools is not none -%}
    {%- set tool_prefix = 'You can call the following functions. To call one, answer with a JSON object {"name": ..., "arguments": {...}} and nothing else.

' -%}
    {%- for tool in tools -%}
        {%- set tool_prefix = tool_prefix + (tool | tojson(indent=2)) + '

' -%}
    {%- endfor -%}
    {%- set first_user_prefix = tool_prefix + first_user_prefix -%}
{%- endif -%}
{%- for message in loop_messages -%}
    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) and message['role'] != 'tool' -%}
        {{ raise_exception("Conversation roles must alternate user/assistant/user/assistant/...") }}
    {%- endif -%}
    {%- if (message['role'] == 'assistant') -%}
        {%- set role = "model" -%}
    {%- elif (message['role'] == 'tool') -%}
        {%- set role = "user" -%}
    {%- else -%}
        {%- set role = message['role'] -%}
    {%- endif -%}
    {{ '<start_of_turn>' + role + '
' + (first_user_prefix if loop.first else "") }}
    {%- if message['role'] == 'tool' -%}
        {{ 'Result of ' + message['name'] + ':
' }}
    {%- endif -%}
    {%- if message['content'] is string -%}
        {{ message['content'] | trim }}
    {%- elif message['content'] is iterable -%}
        {%- for item in message['content'] -%}
            {%- if item['type'] == 'image' -%}
                {{ '<start_of_image>' }}
            {%- elif item['type'] == 'text' -%}
                {{ item['text'] | trim }}
            {%- endif -%}
        {%- endfor -%}
    {%- else -%}
        {{ raise_exception("Invalid content type") }}
    {%- endif -%}
    {%- if message['tool_calls'] is defined and message['tool_calls'] -%}
        {%- for call in message['tool_calls'] -%}
            {%- if call['function'] is defined -%}
                {%- set call = call['function'] -%}
            {%- endif -%}
            {{ '{"name": "' + call['name'] + '", "arguments": ' + (call['arguments'] | tojson) + '}' }}
            {%- if not loop.last -%}{{ '
' }}{%- endif -%}
        {%- endfor -%}
    {%- endif -%}
    {{ '<end_of_turn>
' }}
{%- endfor -%}
{%- if add_generation_prompt -%}
    {{'<start_of_turn>model
'}}
{%- endif -%}
{#- Images are replaced by <start_of_image> followed by the soft tokens the vision tower emits;
    text inside an image turn is kept in order. Roles other than system, user, assistant and
    tool are refused. A system message is folded into the first user turn, as Gemma has no
    system role of its own. Tools, when given, are listed before the first user message, one
    JSON schema per function, each followed by a blank line. -#}
"#;

const LLAMA3_TEMPLATE: &str = r#"{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- set date_string = "26 Jul 2024" %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content']|trim %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message + builtin tools #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if builtin_tools is defined or tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{%- if builtin_tools is defined %}
    {{- "Tools: " + builtin_tools | reject('equalto', 'code_interpreter') | join(", ") + "\n\n"}}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
    {%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {%- if builtin_tools is defined and tool_call.name in builtin_tools %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- "<|python_tag|>" + tool_call.name + ".call(" }}
            {%- for arg_name, arg_val in tool_call.arguments | items %}
                {{- arg_name + '="' + arg_val + '"' }}
                {%- if not loop.last %}
                    {{- ", " }}
                {%- endif %}
            {%- endfor %}
            {{- ")" }}
        {%- else  %}
            {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
            {{- '{"name": "' + tool_call.name + '", ' }}
            {{- '"parameters": ' }}
            {{- tool_call.arguments | tojson }}
            {{- "}" }}
        {%- endif %}
        {%- if builtin_tools is defined %}
            {{- "<|eom_id|>" }}
        {%- else %}
            {{- "<|eot_id|>" }}
        {%- endif %}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"#;
