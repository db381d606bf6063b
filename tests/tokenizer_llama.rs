//! The tokenizer against llama.cpp's own, in this process: the pinned `libllama.v0.5.0.so` (npm
//! `@node-llama-cpp/linux-x64` 3.22.1, `make ggml`; `GGUF_GGML_LIB_DIR` points elsewhere) loads
//! each vocabulary file of llama.cpp's sources with `vocab_only`, and `llama_tokenize`,
//! `llama_detokenize` and `llama_token_to_piece` answer beside ours on generated text: many
//! scripts, invalid UTF-8, NUL bytes, runs of one character, of whitespace and of digits,
//! special-token text glued to words, with every flag combination; and 96 KiB of real text in
//! many scripts (every tokenizer test input of llama.cpp, then its documentation). Zero
//! differences. PLaMo 2, of which llama.cpp's sources have no vocabulary, is compared on one
//! generated with this crate's writer.
//!
//! `llama_model_params` is passed by value: its layout in that build (80 bytes, `vocab_only` at
//! byte 72) is checked from `llama_model_default_params()` before use.

mod common;
#[path = "ggml/dl.rs"]
mod ggml_dl;

use common::ggml_dir;
use common::rng::RngStar as Rng;
use ggml_dl::Lib;
use gguf::tokenizer::Tokenizer;
use gguf::GgufFile;
use std::ffi::{c_char, c_void, CString};
use std::sync::OnceLock;

/// `struct llama_model_params` as bytes (8-byte aligned, 80 bytes in the pinned build).
#[repr(C)]
#[derive(Clone, Copy)]
struct ModelParams([u64; 10]);

type LogCallback = unsafe extern "C" fn(i32, *const c_char, *mut c_void);

#[allow(clippy::type_complexity)]
struct Llama {
    default_params: unsafe extern "C" fn() -> ModelParams,
    load: unsafe extern "C" fn(*const c_char, ModelParams) -> *mut c_void,
    get_vocab: unsafe extern "C" fn(*const c_void) -> *const c_void,
    tokenize:
        unsafe extern "C" fn(*const c_void, *const c_char, i32, *mut i32, i32, bool, bool) -> i32,
    detokenize:
        unsafe extern "C" fn(*const c_void, *const i32, i32, *mut c_char, i32, bool, bool) -> i32,
    to_piece: unsafe extern "C" fn(*const c_void, i32, *mut c_char, i32, i32, bool) -> i32,
    special: Vec<(&'static str, unsafe extern "C" fn(*const c_void) -> i32)>,
    add_bos: unsafe extern "C" fn(*const c_void) -> bool,
    add_eos: unsafe extern "C" fn(*const c_void) -> bool,
}

unsafe extern "C" fn quiet(_level: i32, _text: *const c_char, _user: *mut c_void) {}

// Each symbol is transmuted to the field's type, which names its prototype.
#[allow(clippy::missing_transmute_annotations)]
fn llama() -> &'static Llama {
    static LLAMA: OnceLock<Llama> = OnceLock::new();
    LLAMA.get_or_init(|| {
        let lib = Lib::open(&ggml_dir().join("libllama.v0.5.0.so"));
        let sym = |name: &str| lib.sym(name);
        // SAFETY: the library stays loaded for the process, so the function pointers stay
        // valid; each is transmuted to its prototype in llama.h.
        unsafe {
            let log_set: unsafe extern "C" fn(Option<LogCallback>, *mut c_void) =
                std::mem::transmute(sym("llama_log_set"));
            log_set(Some(quiet), std::ptr::null_mut());
            let init: unsafe extern "C" fn() = std::mem::transmute(sym("llama_backend_init"));
            init();
            let mut special = Vec::new();
            for name in [
                "bos", "eos", "eot", "sep", "nl", "pad", "fim_pre", "fim_suf", "fim_mid",
                "fim_pad", "fim_rep", "fim_sep",
            ] {
                special.push((
                    name,
                    std::mem::transmute::<*mut c_void, unsafe extern "C" fn(*const c_void) -> i32>(
                        sym(&format!("llama_vocab_{name}")),
                    ),
                ));
            }
            Llama {
                default_params: std::mem::transmute(sym("llama_model_default_params")),
                load: std::mem::transmute(sym("llama_model_load_from_file")),
                get_vocab: std::mem::transmute(sym("llama_model_get_vocab")),
                tokenize: std::mem::transmute(sym("llama_tokenize")),
                detokenize: std::mem::transmute(sym("llama_detokenize")),
                to_piece: std::mem::transmute(sym("llama_token_to_piece")),
                special,
                add_bos: std::mem::transmute(sym("llama_vocab_get_add_bos")),
                add_eos: std::mem::transmute(sym("llama_vocab_get_add_eos")),
            }
        }
    })
}

/// A vocabulary loaded by llama.cpp.
struct LlamaVocab(*const c_void);

impl LlamaVocab {
    fn load(path: &std::path::Path) -> LlamaVocab {
        let l = llama();
        let cpath = CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: prototypes from llama.h; the params buffer is the struct's size and
        // alignment, its layout checked from the defaults (n_gpu_layers -1 at byte 16,
        // use_extra_bufts true at byte 74, vocab_only false at 72).
        unsafe {
            let mut p = (l.default_params)();
            let bytes: [u8; 80] = std::mem::transmute(p.0);
            assert_eq!(&bytes[16..20], &(-1i32).to_le_bytes(), "n_gpu_layers");
            assert_eq!(
                bytes[72..75],
                [0, 0, 1],
                "vocab_only, check_tensors, use_extra_bufts"
            );
            let mut bytes = bytes;
            bytes[72] = 1;
            p.0 = std::mem::transmute::<[u8; 80], [u64; 10]>(bytes);
            let model = (l.load)(cpath.as_ptr(), p);
            assert!(!model.is_null(), "libllama cannot load {}", path.display());
            LlamaVocab((l.get_vocab)(model))
        }
    }

    fn tokenize(&self, text: &[u8], add_special: bool, parse_special: bool) -> Vec<i32> {
        let l = llama();
        // PLaMo 2's byte fallback gives three tokens for an invalid byte: asked again with the
        // room llama_tokenize says it needs.
        let mut out = vec![0i32; text.len() + 8];
        loop {
            // SAFETY: the buffers are as long as the lengths passed.
            let n = unsafe {
                (l.tokenize)(
                    self.0,
                    text.as_ptr().cast(),
                    i32::try_from(text.len()).unwrap(),
                    out.as_mut_ptr(),
                    i32::try_from(out.len()).unwrap(),
                    add_special,
                    parse_special,
                )
            };
            if n < 0 {
                out.resize(usize::try_from(-n).unwrap(), 0);
                continue;
            }
            out.truncate(usize::try_from(n).unwrap());
            return out;
        }
    }

    fn detokenize(&self, tokens: &[i32], remove_special: bool, unparse_special: bool) -> Vec<u8> {
        let l = llama();
        let mut cap = tokens.len() * 16 + 16;
        loop {
            let mut out = vec![0u8; cap];
            // SAFETY: the buffers are as long as the lengths passed.
            let n = unsafe {
                (l.detokenize)(
                    self.0,
                    tokens.as_ptr(),
                    i32::try_from(tokens.len()).unwrap(),
                    out.as_mut_ptr().cast(),
                    i32::try_from(cap).unwrap(),
                    remove_special,
                    unparse_special,
                )
            };
            if n < 0 {
                cap = usize::try_from(-n).unwrap();
                continue;
            }
            out.truncate(usize::try_from(n).unwrap());
            return out;
        }
    }

    fn piece(&self, token: i32, lstrip: i32, special: bool) -> Vec<u8> {
        let l = llama();
        let mut out = vec![0u8; 1024];
        // SAFETY: the buffer is as long as the length passed.
        let n = unsafe {
            (l.to_piece)(
                self.0,
                token,
                out.as_mut_ptr().cast(),
                1024,
                lstrip,
                special,
            )
        };
        assert!(n >= 0, "piece of {token} longer than 1024");
        out.truncate(usize::try_from(n).unwrap());
        out
    }
}

const SAMPLES: &[&str] = &[
    "Hello world",
    " Hello World!",
    "The quick brown fox jumps over the lazy dog.",
    "I'm sure you've seen it; they'll say we'd won't can't",
    "Ünïcödé façade naïve café",
    "Привет, как дела? Всё хорошо.",
    "Γειά σου Κόσμε",
    "שלום עולם",
    "مرحبا بالعالم",
    "नमस्ते दुनिया",
    "こんにちは世界、カタカナ",
    "你好，世界！我们在这里。",
    "안녕하세요 세계",
    "สวัสดีชาวโลก",
    "ሰላም ለዓለም",
    "Ꭳꮃꮝ",
    "🦙🦙 llama 🚀✨ 👨‍👩‍👧‍👦 🇫🇷",
    "e\u{301}\u{308} a\u{30a}",
    "fn main() { println!(\"{}\", 1 + 2); }",
    "    indented\n\tcode\r\n",
    "3.14159 1234567890 ١٢٣",
    "x² ½ ⅓ Ⅻ ①",
    "\u{200b}\u{feff}\u{a0}\u{3000}",
    "a\u{0}b",
    "<s>",
    "</s>",
    "<unk>",
    "<|endoftext|>",
    "<|im_start|>user\nhi<|im_end|>",
    "[CLS] [SEP] [MASK]",
    "<mask>",
    "<start_of_turn>",
    "<|user|>\n",
    "<|assistant|>",
    "▁▁ ▁",
    "'s 're 'VE 'Ll",
];

/// One generated text.
fn text(rng: &mut Rng, specials: &[Vec<u8>]) -> Vec<u8> {
    let mut t = Vec::new();
    let parts = 1 + rng.below(6);
    for _ in 0..parts {
        match rng.below(10) {
            0..=2 => t.extend_from_slice(SAMPLES[rng.below(SAMPLES.len())].as_bytes()),
            3 => {
                // A run of one character.
                let c = [
                    " ", "\n", "a", "0", "\t", "é", "🦙", "-", "=", ".", "\u{3000}",
                ][rng.below(11)];
                for _ in 0..rng.below(40) {
                    t.extend_from_slice(c.as_bytes());
                }
            }
            4 => {
                // Random bytes: invalid UTF-8, NUL, controls.
                for _ in 0..rng.below(12) {
                    t.push((rng.next() >> 24) as u8);
                }
            }
            5 => {
                // Code points from everywhere.
                for _ in 0..rng.below(10) {
                    let cp = match rng.below(4) {
                        0 => rng.below(0x80) as u32,
                        1 => rng.below(0x800) as u32,
                        2 => rng.below(0x10000) as u32,
                        _ => rng.below(0x110000) as u32,
                    };
                    if let Some(c) = char::from_u32(cp) {
                        let mut b = [0; 4];
                        t.extend_from_slice(c.encode_utf8(&mut b).as_bytes());
                    }
                }
            }
            6 if !specials.is_empty() => {
                // A special token's text glued to a word or space.
                t.extend_from_slice(&specials[rng.below(specials.len())]);
                t.extend_from_slice([&b"word"[..], b" ", b"\n", b""][rng.below(4)]);
            }
            7 => {
                for _ in 0..rng.below(20) {
                    t.push(b'0' + rng.below(10) as u8);
                }
            }
            8 => {
                for _ in 0..rng.below(10) {
                    t.push([b' ', b'\n', b'\t', b'\r', 0x0b, 0x0c][rng.below(6)]);
                }
            }
            _ => t.extend_from_slice(b"Word"),
        }
    }
    t
}

/// Breaks every sequence llama.cpp would decode to a code point past U+10FFFF (a lead byte
/// 0xF4..=0xF7 and three continuation bytes): its `unicode_cpt_to_utf8` throws on those, and
/// the exception crosses `llama_tokenize`'s C boundary and aborts the process. (Ours encodes
/// the 21 bits it decoded; the lead byte becomes 0xFF here, still invalid UTF-8.)
fn llama_safe(t: &mut [u8]) {
    let mut i = 0;
    while i < t.len() {
        let b = t[i];
        let n = match b {
            _ if b & 0x80 == 0 || b & 0x40 == 0 => 1,
            _ if b & 0x20 == 0 => 2,
            _ if b & 0x10 == 0 => 3,
            _ if b & 0x08 == 0 => 4,
            _ => 1,
        };
        if n == 1 || i + n > t.len() || !t[i + 1..i + n].iter().all(|&c| c & 0xc0 == 0x80) {
            i += 1;
            continue;
        }
        if n == 4 {
            let cp = u32::from(b & 7) << 18
                | u32::from(t[i + 1] & 0x3f) << 12
                | u32::from(t[i + 2] & 0x3f) << 6
                | u32::from(t[i + 3] & 0x3f);
            if cp > 0x10ffff {
                t[i] = 0xff;
                i += 1;
                continue;
            }
        }
        i += n;
    }
}

/// Every `.inp` of llama.cpp's models (many scripts), then its README and documentation, cut
/// to 96 KiB.
fn real_text() -> Vec<u8> {
    let src = common::llama_src_dir();
    let files = |dir: &str, ext: &str| {
        let mut v: Vec<_> = std::fs::read_dir(src.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == ext))
            .collect();
        v.sort();
        v
    };
    let mut text = Vec::new();
    for p in files("models", "inp")
        .into_iter()
        .chain(files("docs", "md"))
    {
        text.extend(std::fs::read(p).unwrap());
    }
    text.extend(std::fs::read(src.join("README.md")).unwrap_or_default());
    assert!(text.len() > 96 * 1024, "too little real text");
    text.truncate(96 * 1024);
    text
}

fn compare(name: &str, texts: usize) {
    let path = common::llama_src_dir().join(format!("models/ggml-vocab-{name}.gguf"));
    compare_file(name, &path, texts);
}

fn compare_file(name: &str, path: &std::path::Path, texts: usize) {
    compare_file_with(name, path, texts, &[]);
}

/// [`compare_file`], with `extra` put before the first generated texts.
fn compare_file_with(name: &str, path: &std::path::Path, texts: usize, extra: &[&[u8]]) {
    let path = path.to_path_buf();
    let file = GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap();
    let ours = Tokenizer::from_file(&file).unwrap();
    let theirs = LlamaVocab::load(&path);

    // Special tokens and flags.
    if std::env::var_os("TK_TRACE").is_some() {
        eprintln!("loaded");
    }
    let l = llama();
    let s = ours.special_tokens();
    for (what, f) in &l.special {
        let mine = match *what {
            "bos" => s.bos,
            "eos" => s.eos,
            "eot" => s.eot,
            "sep" => s.sep,
            "nl" => s.nl,
            "pad" => s.pad,
            "fim_pre" => s.fim_pre,
            "fim_suf" => s.fim_suf,
            "fim_mid" => s.fim_mid,
            "fim_pad" => s.fim_pad,
            "fim_rep" => s.fim_rep,
            _ => s.fim_sep,
        };
        // SAFETY: the vocabulary is alive.
        let want = unsafe { f(theirs.0) };
        assert_eq!(mine.unwrap_or(-1), want, "{name}: {what}");
    }
    // SAFETY: the vocabulary is alive.
    unsafe {
        assert_eq!(ours.add_bos(), (l.add_bos)(theirs.0), "{name}: add_bos");
        assert_eq!(ours.add_eos(), (l.add_eos)(theirs.0), "{name}: add_eos");
    }

    // Every token's piece.
    let n = i32::try_from(ours.n_tokens()).unwrap();
    if std::env::var_os("TK_TRACE").is_some() {
        eprintln!("pieces of {n} tokens");
    }
    for id in 0..n {
        for (lstrip, special) in [(0, true), (0, false), (1, true)] {
            let mine = ours.token_to_piece(id, lstrip as u32, special).unwrap();
            assert_eq!(
                mine,
                &theirs.piece(id, lstrip, special)[..],
                "{name}: piece of {id} (lstrip {lstrip}, special {special})"
            );
        }
    }

    // Generated texts.
    let specials: Vec<Vec<u8>> = (0..n)
        .filter(|&i| ours.is_control(i) || ours.token_text(i).is_some_and(|t| t.starts_with(b"<")))
        .take(200)
        .map(|i| ours.token_text(i).unwrap().to_vec())
        .collect();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ name.len() as u64);
    let mut diffs = Vec::new();
    for i in 0..texts {
        let mut t = text(&mut rng, &specials);
        if let Some(e) = extra.get(i) {
            t.splice(0..0, e.iter().copied());
        }
        llama_safe(&mut t);
        for (add, parse) in [(false, false), (true, false), (false, true), (true, true)] {
            if std::env::var_os("TK_TRACE").is_some() {
                eprintln!("{add} {parse} {:?}", String::from_utf8_lossy(&t));
            }
            let want = theirs.tokenize(&t, add, parse);
            let got = ours.tokenize(&t, add, parse);
            if got != want {
                diffs.push(format!(
                    "tokenize {:?} add {add} parse {parse}\n  llama {want:?}\n  ours  {got:?}",
                    String::from_utf8_lossy(&t)
                ));
                continue;
            }
            for (remove, unparse) in [(false, false), (true, false), (false, true), (true, true)] {
                let want_text = theirs.detokenize(&want, remove, unparse);
                let got_text = ours.detokenize(&want, remove, unparse).unwrap();
                if got_text != want_text {
                    diffs.push(format!(
                        "detokenize {want:?} remove {remove} unparse {unparse}\n  llama {:?}\n  ours  {:?}",
                        String::from_utf8_lossy(&want_text),
                        String::from_utf8_lossy(&got_text)
                    ));
                }
            }
        }
        // Random ids back to text.
        let ids: Vec<i32> = (0..rng.below(12))
            .map(|_| rng.below(n as usize) as i32)
            .collect();
        for (remove, unparse) in [(false, false), (true, true)] {
            let want_text = theirs.detokenize(&ids, remove, unparse);
            let got_text = ours.detokenize(&ids, remove, unparse).unwrap();
            if got_text != want_text {
                diffs.push(format!(
                    "detokenize {ids:?} remove {remove} unparse {unparse}\n  llama {:?}\n  ours  {:?}",
                    String::from_utf8_lossy(&want_text),
                    String::from_utf8_lossy(&got_text)
                ));
            }
        }
    }
    // Real text in many scripts: every tokenizer test input of llama.cpp, then its documentation.
    let real = real_text();
    for (add, parse) in [(false, false), (true, true)] {
        let want = theirs.tokenize(&real, add, parse);
        let got = ours.tokenize(&real, add, parse);
        if got != want {
            let at = got.iter().zip(&want).take_while(|(a, b)| a == b).count();
            diffs.push(format!(
                "real text, add {add} parse {parse}: first difference at token {at}: llama {:?}, ours {:?}",
                &want[at..want.len().min(at + 8)],
                &got[at..got.len().min(at + 8)]
            ));
        } else {
            let want_text = theirs.detokenize(&want, add, parse);
            if ours.detokenize(&want, add, parse).unwrap() != want_text {
                diffs.push(format!("real text back, remove {add} unparse {parse}"));
            }
        }
    }
    let shown: Vec<_> = diffs.iter().take(12).cloned().collect();
    assert!(
        diffs.is_empty(),
        "{name}: {} differences from llama.cpp:\n{}",
        diffs.len(),
        shown.join("\n")
    );
}

macro_rules! differential {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            compare($name, 400);
        }
    )*};
}

differential! {
    llama_spm => "llama-spm",
    phi_3 => "phi-3",
    baichuan => "baichuan",
    nomic_bert_moe => "nomic-bert-moe",
    aquila => "aquila",
    command_r => "command-r",
    deepseek_coder => "deepseek-coder",
    deepseek_llm => "deepseek-llm",
    falcon => "falcon",
    gemma_4 => "gemma-4",
    gpt_2 => "gpt-2",
    gpt_neox => "gpt-neox",
    llama_bpe => "llama-bpe",
    mpt => "mpt",
    qwen2 => "qwen2",
    qwen35 => "qwen35",
    refact => "refact",
    starcoder => "starcoder",
    bert_bge => "bert-bge",
}

/// A PLaMo 2 vocabulary (there is none in llama.cpp's sources): the unknown, BOS, EOS and
/// padding tokens, the 256 byte tokens, and every run of one to four characters of the sample
/// texts as a normal token with a generated score (some equal, some tied at lengths), written
/// with this crate's writer beside llama-spm's hyperparameters, which a vocabulary-only load
/// reads.
#[test]
fn plamo2_generated() {
    use gguf::{MetadataValue as V, ValueType, Writer};
    let base = common::llama_src_dir().join("models/ggml-vocab-llama-spm.gguf");
    let base = GgufFile::from_bytes(std::fs::read(&base).unwrap()).unwrap();
    let mut tokens: Vec<Vec<u8>> = ["<unk>", "<|plamo:bos|>", "<|plamo:eos|>", "<|plamo:pad|>"]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
    let mut types = vec![2i32, 3, 3, 3];
    for b in 0..256 {
        tokens.push(format!("<0x{b:02X}>").into_bytes());
        types.push(6);
    }
    let mut seen = std::collections::HashSet::new();
    for sample in SAMPLES {
        let chars: Vec<char> = sample.chars().collect();
        for len in 1..=4 {
            for w in chars.windows(len) {
                let t: String = w.iter().collect();
                // No NUL: llama.cpp reads token texts as C strings.
                if !t.starts_with('<') && !t.contains('\0') && seen.insert(t.clone()) {
                    tokens.push(t.into_bytes());
                    types.push(1);
                }
            }
        }
    }
    let mut rng = Rng(0x005e_ed0f_91a0);
    let scores: Vec<V> = (0..tokens.len())
        .map(|i| {
            if i < 260 {
                V::F32(0.0)
            } else {
                // Few distinct values, so that costs tie.
                V::F32(-(rng.below(40) as f32) * 0.25)
            }
        })
        .collect();
    let mut w = Writer::new();
    for e in base.metadata() {
        if !e.key.starts_with(b"tokenizer.") && e.key != b"llama.vocab_size" {
            w.add_metadata(e.key, V::from(e.value)).unwrap();
        }
    }
    let n = tokens.len();
    w.add_metadata("llama.vocab_size", V::U32(u32::try_from(n).unwrap()))
        .unwrap();
    w.add_metadata("tokenizer.ggml.model", V::String(b"plamo2".to_vec()))
        .unwrap();
    w.add_metadata(
        "tokenizer.ggml.tokens",
        V::Array(
            ValueType::String,
            tokens.into_iter().map(V::String).collect(),
        ),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.scores",
        V::Array(ValueType::Float32, scores),
    )
    .unwrap();
    w.add_metadata(
        "tokenizer.ggml.token_type",
        V::Array(ValueType::Int32, types.into_iter().map(V::I32).collect()),
    )
    .unwrap();
    for (key, id) in [("bos", 1u32), ("eos", 2), ("unknown", 0), ("padding", 3)] {
        w.add_metadata(format!("tokenizer.ggml.{key}_token_id"), V::U32(id))
            .unwrap();
    }
    let dir = std::env::temp_dir().join(format!("libgguf-plamo2-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("plamo2.gguf");
    std::fs::write(&path, w.to_bytes().unwrap()).unwrap();
    compare_file("plamo2", &path, 400);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Unigram vocabularies written with this crate's writer (t5, no charsmap) whose tokens nest
/// and overlap: every run of one to four characters of the sample texts with and without a
/// leading U+2581, runs of `a` and of U+2581 one to 24 long, and tokens that continue far past
/// what matches (300 `a` then `b`), scores from few values (ties); once with every score
/// finite (the table is cut as it goes) and once with a normal token's score -inf (no unknown
/// edge can win, positions stay unreached: the table is kept whole, as llama.cpp's). Texts of
/// long runs of `a` and U+2581 first.
#[test]
fn unigram_generated() {
    use gguf::{MetadataValue as V, ValueType, Writer};
    let base = common::llama_src_dir().join("models/ggml-vocab-llama-spm.gguf");
    let base = GgufFile::from_bytes(std::fs::read(&base).unwrap()).unwrap();
    let mut tokens: Vec<Vec<u8>> = ["<pad>", "</s>", "<unk>"]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
    let mut types = vec![3i32, 3, 2];
    let mut seen = std::collections::HashSet::new();
    let mut add = |t: Vec<u8>, tokens: &mut Vec<Vec<u8>>, types: &mut Vec<i32>| {
        if !t.is_empty() && !t.starts_with(b"<") && !t.contains(&0) && seen.insert(t.clone()) {
            tokens.push(t);
            types.push(1);
        }
    };
    for sample in SAMPLES {
        let sample = sample.replace(' ', "\u{2581}");
        let chars: Vec<char> = sample.chars().collect();
        for len in 1..=4 {
            for w in chars.windows(len) {
                let t: String = w.iter().collect();
                add(t.clone().into_bytes(), &mut tokens, &mut types);
                add(format!("\u{2581}{t}").into_bytes(), &mut tokens, &mut types);
            }
        }
    }
    for len in 1..=24 {
        add(b"a".repeat(len), &mut tokens, &mut types);
        add("\u{2581}".repeat(len).into_bytes(), &mut tokens, &mut types);
    }
    let mut long = b"a".repeat(300);
    long.push(b'b');
    add(long, &mut tokens, &mut types);
    let n = tokens.len();
    let runs: Vec<Vec<u8>> = vec![b"a".repeat(5000), " ".repeat(3000).into_bytes(), {
        let mut t = b"a".repeat(299);
        t.extend_from_slice(b" aab ");
        t.repeat(20)
    }];
    let extra: Vec<&[u8]> = runs.iter().map(Vec::as_slice).collect();
    for infinite in [false, true] {
        let mut rng = Rng(0x007e_570f_0a11 + u64::from(infinite));
        let scores: Vec<V> = (0..n)
            .map(|i| {
                if i < 3 {
                    V::F32(0.0)
                } else if infinite && i == n / 2 {
                    V::F32(f32::NEG_INFINITY)
                } else {
                    V::F32(-(rng.below(24) as f32) * 0.5)
                }
            })
            .collect();
        let mut w = Writer::new();
        for e in base.metadata() {
            if !e.key.starts_with(b"tokenizer.") && e.key != b"llama.vocab_size" {
                w.add_metadata(e.key, V::from(e.value)).unwrap();
            }
        }
        w.add_metadata("llama.vocab_size", V::U32(u32::try_from(n).unwrap()))
            .unwrap();
        w.add_metadata("tokenizer.ggml.model", V::String(b"t5".to_vec()))
            .unwrap();
        w.add_metadata(
            "tokenizer.ggml.tokens",
            V::Array(
                ValueType::String,
                tokens.iter().cloned().map(V::String).collect(),
            ),
        )
        .unwrap();
        w.add_metadata(
            "tokenizer.ggml.scores",
            V::Array(ValueType::Float32, scores),
        )
        .unwrap();
        w.add_metadata(
            "tokenizer.ggml.token_type",
            V::Array(
                ValueType::Int32,
                types.iter().copied().map(V::I32).collect(),
            ),
        )
        .unwrap();
        for (key, id) in [("eos", 1u32), ("unknown", 2), ("padding", 0)] {
            w.add_metadata(format!("tokenizer.ggml.{key}_token_id"), V::U32(id))
                .unwrap();
        }
        let dir =
            std::env::temp_dir().join(format!("libgguf-unigram-{}-{infinite}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("unigram.gguf");
        std::fs::write(&path, w.to_bytes().unwrap()).unwrap();
        compare_file_with("unigram", &path, 300, &extra);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// llama.cpp's gpt-2 vocabulary written back with this crate's writer under another model and
/// pre-tokenizer name, with `extra` metadata and `more` tokens (text, type) after its own.
fn rewritten_gpt2(
    file_name: &str,
    model: &str,
    pre: &str,
    extra: &[(&str, gguf::MetadataValue)],
    more: &[(Vec<u8>, i32)],
) -> std::path::PathBuf {
    use gguf::{MetadataValue as V, Writer};
    let base = common::llama_src_dir().join("models/ggml-vocab-gpt-2.gguf");
    let base = GgufFile::from_bytes(std::fs::read(&base).unwrap()).unwrap();
    let mut w = Writer::new();
    let mut n_added = 0;
    for e in base.metadata() {
        let value = V::from(e.value);
        let value = match (e.key, value) {
            (b"tokenizer.ggml.model", _) => V::String(model.as_bytes().to_vec()),
            (b"tokenizer.ggml.pre", _) => V::String(pre.as_bytes().to_vec()),
            (b"tokenizer.ggml.tokens", V::Array(t, mut v)) => {
                v.extend(more.iter().map(|(text, _)| V::String(text.clone())));
                n_added += more.len();
                V::Array(t, v)
            }
            (b"tokenizer.ggml.token_type", V::Array(t, mut v)) => {
                v.extend(more.iter().map(|&(_, ty)| V::I32(ty)));
                V::Array(t, v)
            }
            (b"tokenizer.ggml.scores", V::Array(t, mut v)) => {
                v.extend(more.iter().map(|_| V::F32(0.0)));
                V::Array(t, v)
            }
            (_, v) => v,
        };
        w.add_metadata(e.key, value).unwrap();
    }
    assert_eq!(n_added, more.len());
    for (key, value) in extra {
        w.add_metadata(*key, value.clone()).unwrap();
    }
    let dir = std::env::temp_dir().join(format!("libgguf-{file_name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{file_name}.gguf"));
    std::fs::write(&path, w.to_bytes().unwrap()).unwrap();
    path
}

/// The `whitespace` model (BPE on the runs between whitespace, lower-cased where the normalizer
/// says so) over llama.cpp's gpt-2 vocabulary: with the `whitespace` pre-tokenizer (which turns
/// lower-casing off), with lower-casing turned back on by key, and under the gpt-2
/// pre-tokenizer (lower-casing on by default).
#[test]
fn whitespace_generated() {
    use gguf::MetadataValue as V;
    let extra: &[&[u8]] = &[
        "Hello  WORLD\tfoo\u{3000}BAR \u{2028}x".as_bytes(),
        "ÀÉÎ Straße".as_bytes(),
    ];
    for (name, pre, keys) in [
        ("whitespace", "whitespace", vec![]),
        (
            "whitespace-lower",
            "whitespace",
            vec![("tokenizer.ggml.normalizer.lowercase", V::Bool(true))],
        ),
        ("whitespace-gpt2", "gpt-2", vec![]),
    ] {
        let path = rewritten_gpt2(name, "whitespace", pre, &keys, &[]);
        compare_file_with(name, &path, 150, extra);
        // Each stretch between whitespace is tokenized alone, lower-cased where asked.
        let tok =
            Tokenizer::from_file(&GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap())
                .unwrap();
        let mut want = tok.tokenize(b"Ab.C", false, false);
        want.extend(tok.tokenize(b"dE", false, false));
        assert_eq!(
            tok.tokenize(b" Ab.C \n\tdE  ", false, false),
            want,
            "{name}"
        );
        let lower = tok.tokenize(b"ab.c", false, false);
        assert_eq!(want.starts_with(&lower), name != "whitespace", "{name}");
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

/// The `hybriddna` model over llama.cpp's gpt-2 vocabulary with `<dna>`, `</dna>`, `<oov>` and
/// every DNA 6-mer (with the U+E000 marker llama.cpp's loader cuts from the texts after `<oov>`)
/// added, and a few tokens that test the cut; then with the tags user-defined, and without
/// `<oov>`, where llama.cpp runs plain BPE and cuts nothing.
#[test]
fn hybriddna_generated() {
    const MARKER: &str = "\u{E000}";
    let mut kmers = Vec::new();
    for i in 0..4096u32 {
        let kmer: String = (0..6)
            .map(|j| ['A', 'C', 'G', 'T'][((i >> (2 * j)) & 3) as usize])
            .collect();
        kmers.push((format!("{kmer}{MARKER}").into_bytes(), 1));
    }
    // The marker alone (not cut), a short token with it, a special token with it.
    kmers.push((MARKER.as_bytes().to_vec(), 1));
    kmers.push((format!("AC{MARKER}").into_bytes(), 1));
    kmers.push((format!("<x>{MARKER}").into_bytes(), 4));
    let with = |oov: bool, tag_type: i32| {
        let mut more = vec![
            (b"<dna>".to_vec(), tag_type),
            (b"</dna>".to_vec(), tag_type),
        ];
        if oov {
            more.push((b"<oov>".to_vec(), 3));
        }
        more.extend(kmers.iter().cloned());
        more
    };
    let extra: &[&[u8]] = &[
        b"x <dna>acgtACGTNNacg</dna> and <dna>ACGTAC",
        b"<dna></dna>y<dna>ACGTACGTACGTA</dna></dna><dna>",
        "<dna>AC\u{E000}\u{E000}gattaca \n</dna>CCCCCC<x>".as_bytes(),
        b"</dna><dna",
    ];
    // Tags of type normal reach the session; user-defined ones are cut out before it, as
    // special tokens always are.
    for (name, oov, tag_type) in [
        ("hybriddna", true, 1),
        ("hybriddna-user-tags", true, 4),
        ("hybriddna-no-oov", false, 1),
    ] {
        let path = rewritten_gpt2(name, "hybriddna", "gpt-2", &[], &with(oov, tag_type));
        compare_file_with(name, &path, 150, extra);
        let tok =
            Tokenizer::from_file(&GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap())
                .unwrap();
        let ids = tok.tokenize(b"<dna>acgtacGG</dna>", false, false);
        if oov && tag_type == 1 {
            // <dna>, ACGTAC, GGAAAA, </dna>; the k-mers' pieces lose the marker.
            assert_eq!(ids.len(), 4, "{ids:?}");
            assert_eq!(
                tok.detokenize(&ids, false, false).unwrap(),
                b"<dna>ACGTACGGAAAA</dna>"
            );
        } else {
            assert!(ids.len() > 4, "{ids:?}");
        }
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }
}

/// The prompts chat templates make, tokenized with special-token text parsed and nothing added
/// (as an engine feeds a rendered prompt): llama.cpp's ids, on every vocabulary file that
/// carries templates (each of its templates) and on Gemma 4's vocabulary with the Gemma
/// templates of llama.cpp's `models/templates/`, over the conversations of
/// `tests/chat/conversations.jsonl`.
#[test]
fn rendered_chat_prompts_tokenize_as_llama_cpp_tokenizes_them() {
    let models = common::llama_src_dir().join("models");
    let conversations: Vec<String> =
        std::fs::read_to_string(common::manifest_dir().join("tests/chat/conversations.jsonl"))
            .unwrap()
            .lines()
            .filter_map(|l| l.split_once('\t').map(|(_, j)| j.to_string()))
            .collect();
    let mut prompts = 0;
    let mut check =
        |label: &str, file: &GgufFile<Vec<u8>>, path: &std::path::Path, source: &str| {
            let ours = Tokenizer::from_file(file).unwrap();
            let theirs = LlamaVocab::load(path);
            let template = gguf::chat::ChatTemplate::new(source).unwrap();
            let specials = gguf::chat::special_token_variables(file);
            for request in &conversations {
                // Templates that refuse a conversation (roles, tools) have no prompt to compare.
                let Ok(prompt) = template.render_with(request.as_bytes(), &specials) else {
                    continue;
                };
                let want = theirs.tokenize(prompt.as_bytes(), false, true);
                let got = ours.tokenize(prompt.as_bytes(), false, true);
                assert_eq!(got, want, "{label}: the prompt {prompt:?}");
                prompts += 1;
            }
        };
    for name in ["command-r", "gemma-4", "phi-3", "qwen2", "qwen35"] {
        let path = models.join(format!("ggml-vocab-{name}.gguf"));
        let file = GgufFile::from_bytes(std::fs::read(&path).unwrap()).unwrap();
        let names = gguf::chat::template_names(&file);
        assert!(!names.is_empty(), "{name} carries no template");
        for t in names {
            let source = gguf::chat::file_template(&file, t.as_deref()).unwrap();
            check(&format!("{name}:{t:?}"), &file, &path, &source);
        }
    }
    let gemma = models.join("ggml-vocab-gemma-4.gguf");
    let file = GgufFile::from_bytes(std::fs::read(&gemma).unwrap()).unwrap();
    for t in [
        "google-gemma-2-2b-it.jinja",
        "google-gemma-4-31B-it.jinja",
        "google-gemma-4-31B-it-interleaved.jinja",
    ] {
        let source = std::fs::read_to_string(models.join("templates").join(t)).unwrap();
        check(&format!("gemma-4 vocabulary, {t}"), &file, &gemma, &source);
    }
    assert!(prompts >= 50, "only {prompts} prompts compared");
}
