//! The tokenizer against llama.cpp's own tokenizer test files: each
//! `models/ggml-vocab-*.gguf` with its `.inp` (test texts between `__ggml_vocab_test__` lines)
//! and `.out` (the ids llama.cpp's test-tokenizer-0 expects for each, without BOS/EOS and
//! without special-token parsing). Then hostile vocabularies, made from a real one, refused with
//! a clear error.

mod common;

use gguf::tokenizer::Tokenizer;
use gguf::{GgufFile, MetadataValue, ValueType, Writer};
use std::path::PathBuf;

fn models() -> PathBuf {
    common::llama_src_dir().join("models")
}

fn open(name: &str) -> GgufFile<Vec<u8>> {
    let path = models().join(format!("ggml-vocab-{name}.gguf"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    GgufFile::from_bytes(bytes).unwrap()
}

/// The tests of `name`: (text, expected ids), as test-tokenizer-0 reads them.
fn cases(name: &str) -> Vec<(Vec<u8>, Vec<i32>)> {
    let base = models().join(format!("ggml-vocab-{name}.gguf"));
    let inp = std::fs::read(base.with_extension("gguf.inp")).unwrap();
    let out = std::fs::read_to_string(base.with_extension("gguf.out")).unwrap();
    let sep = b"\n__ggml_vocab_test__\n";
    let mut texts = Vec::new();
    let mut pos = 0;
    while pos < inp.len() {
        match inp[pos..].windows(sep.len()).position(|w| w == sep) {
            Some(at) => {
                texts.push(inp[pos..pos + at].to_vec());
                pos += at + sep.len();
            }
            None => {
                texts.push(inp[pos..].to_vec());
                break;
            }
        }
    }
    let ids: Vec<Vec<i32>> = out
        .lines()
        .map(|l| l.split_whitespace().map(|t| t.parse().unwrap()).collect())
        .collect();
    assert_eq!(
        texts.len(),
        ids.len(),
        "{name}: .inp and .out disagree on the test count"
    );
    assert!(texts.len() > 10, "{name}: too few tests");
    texts.into_iter().zip(ids).collect()
}

/// Every test of `name` gives llama.cpp's ids; detokenizing them gives back text that
/// tokenizes to the same ids.
fn check(name: &str) {
    let file = open(name);
    let tok = Tokenizer::from_file(&file).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut failures = Vec::new();
    for (text, want) in cases(name) {
        let got = tok.tokenize(&text, false, false);
        if got != want {
            failures.push(format!(
                "{:?}\n    want {want:?}\n    got  {got:?}",
                String::from_utf8_lossy(&text)
            ));
            continue;
        }
        let back = tok.detokenize(&got, false, false).unwrap();
        let again = tok.tokenize(&back, false, false);
        let back2 = tok.detokenize(&again, false, false).unwrap();
        assert_eq!(
            back2,
            back,
            "{name}: {:?} does not round-trip",
            String::from_utf8_lossy(&text)
        );
    }
    // Hostile bytes (invalid UTF-8, NUL, special-token text cut short) with every flag: ids in
    // the vocabulary, and text back.
    let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ name.len() as u64;
    let n = tok.n_tokens();
    for _ in 0..40 {
        let mut text = Vec::new();
        for _ in 0..seed % 48 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let b = seed.to_le_bytes();
            text.push(if b[1] < 64 {
                b"<|/s>[]\n "[usize::from(b[2] % 9)]
            } else {
                b[3]
            });
        }
        for (add, parse) in [(false, false), (true, false), (false, true), (true, true)] {
            let ids = tok.tokenize(&text, add, parse);
            assert!(
                ids.iter().all(|&i| usize::try_from(i).is_ok_and(|i| i < n)),
                "{name}: an id outside the vocabulary for {text:?}"
            );
            for (remove, unparse) in [(false, false), (true, true)] {
                tok.detokenize(&ids, remove, unparse).unwrap();
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{name}: {} tests differ from llama.cpp:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

macro_rules! vocab_tests {
    ($($test:ident => $name:literal),* $(,)?) => {$(
        #[test]
        fn $test() {
            check($name);
        }
    )*};
}

vocab_tests! {
    llama_spm => "llama-spm",
    phi_3 => "phi-3",
    llama_bpe => "llama-bpe",
    falcon => "falcon",
    gpt_2 => "gpt-2",
    starcoder => "starcoder",
    deepseek_coder => "deepseek-coder",
    deepseek_llm => "deepseek-llm",
    qwen2 => "qwen2",
    qwen35 => "qwen35",
    refact => "refact",
    command_r => "command-r",
    mpt => "mpt",
    gemma_4 => "gemma-4",
    bert_bge => "bert-bge",
}

#[test]
fn spm_special_tokens_and_flags_are_llama_cpp_s() {
    let tok = Tokenizer::from_file(&open("llama-spm")).unwrap();
    let s = tok.special_tokens();
    assert_eq!((s.bos, s.eos, s.unk), (Some(1), Some(2), Some(0)));
    assert_eq!(s.nl, Some(13));
    assert!(tok.add_bos() && !tok.add_eos());
    assert_eq!(tok.tokenize(b"", true, false), vec![1]);
    assert_eq!(tok.tokenize(b"", false, false), Vec::<i32>::new());
    // Special-token text is a token only when asked for.
    let with = tok.tokenize(b"Hello</s>", true, true);
    assert_eq!(with.first(), Some(&1));
    assert_eq!(with.last(), Some(&2));
    let without = tok.tokenize(b"Hello</s>", true, false);
    assert!(!without[1..].contains(&2), "{without:?}");
    // Detokenizing drops the leading space the tokenizer added; remove_special drops BOS but
    // then keeps that space (llama.cpp's rule).
    let ids = tok.tokenize(b"Hello world", true, false);
    assert_eq!(
        tok.detokenize(&ids[1..], false, false).unwrap(),
        b"Hello world"
    );
    assert_eq!(tok.detokenize(&ids, true, false).unwrap(), b" Hello world");
    assert_eq!(
        tok.detokenize(&ids, false, true).unwrap(),
        b"<s> Hello world"
    );
    assert_eq!(tok.token_to_piece(1, 0, false), Some(&b""[..]));
    assert_eq!(tok.token_to_piece(1, 0, true), Some(&b"<s>"[..]));
    assert_eq!(tok.token_to_piece(13, 0, true), Some(&b"\n"[..]));
    assert_eq!(tok.token_to_piece(i32::MAX, 0, true), None);
    assert!(tok.detokenize(&[5, -1], false, false).is_err());
}

#[test]
fn phi_3_special_tokens_strip_the_spaces_after_them() {
    let tok = Tokenizer::from_file(&open("phi-3")).unwrap();
    let a = tok.tokenize(b"<|user|>\nHi", false, true);
    let b = tok.tokenize(b"<|user|>Hi", false, true);
    assert_eq!(a, b);
}

/// The metadata of `name` with `edit` applied, as a file.
fn edited(name: &str, edit: impl FnOnce(&mut Writer)) -> GgufFile<Vec<u8>> {
    let src = open(name);
    let mut w = Writer::new();
    w.copy_metadata_from(&src).unwrap();
    edit(&mut w);
    GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap()
}

fn refused(file: &GgufFile<Vec<u8>>) -> String {
    match Tokenizer::from_file(file) {
        Ok(_) => panic!("a hostile vocabulary was accepted"),
        Err(e) => e.to_string(),
    }
}

fn tokens_of(name: &str) -> Vec<Vec<u8>> {
    let f = open(name);
    let a = f.get("tokenizer.ggml.tokens").unwrap().as_array().unwrap();
    a.strings().unwrap().map(<[u8]>::to_vec).collect()
}

fn string_array(items: Vec<Vec<u8>>) -> MetadataValue {
    MetadataValue::Array(
        ValueType::String,
        items.into_iter().map(MetadataValue::String).collect(),
    )
}

#[test]
fn hostile_vocabularies_are_refused_with_a_clear_error() {
    let e = refused(&edited("llama-spm", |w| {
        w.set_metadata("tokenizer.ggml.model", MetadataValue::string("llamas"))
            .unwrap();
    }));
    assert!(e.contains("unknown tokenizer model 'llamas'"), "{e}");

    let e = refused(&edited("llama-spm", |w| {
        let mut t = tokens_of("llama-spm");
        t[500] = t[400].clone();
        w.set_metadata("tokenizer.ggml.tokens", string_array(t))
            .unwrap();
    }));
    assert!(e.contains("tokens 400 and 500 are both"), "{e}");

    let e = refused(&edited("llama-spm", |w| {
        w.set_metadata("tokenizer.ggml.bos_token_id", MetadataValue::U32(32000))
            .unwrap();
    }));
    assert!(
        e.contains("tokenizer.ggml.bos_token_id is 32000, past the vocabulary"),
        "{e}"
    );

    let e = refused(&edited("llama-spm", |w| {
        let n = tokens_of("llama-spm").len();
        let mut scores = vec![MetadataValue::F32(0.0); n];
        scores[7] = MetadataValue::F32(f32::NAN);
        w.set_metadata(
            "tokenizer.ggml.scores",
            MetadataValue::Array(ValueType::Float32, scores),
        )
        .unwrap();
    }));
    assert!(e.contains("score of token 7 is NaN"), "{e}");

    let e = refused(&edited("llama-spm", |w| {
        let n = tokens_of("llama-spm").len();
        let mut types = vec![MetadataValue::I32(1); n];
        types[9] = MetadataValue::I32(7);
        w.set_metadata(
            "tokenizer.ggml.token_type",
            MetadataValue::Array(ValueType::Int32, types),
        )
        .unwrap();
    }));
    assert!(e.contains("token 9 has type 7"), "{e}");

    let e = refused(&edited("llama-spm", |w| {
        w.set_metadata(
            "tokenizer.ggml.scores",
            MetadataValue::Array(ValueType::Float32, vec![MetadataValue::F32(0.0); 3]),
        )
        .unwrap();
    }));
    assert!(e.contains("3 scores for 32000 tokens"), "{e}");

    let e = refused(&edited("llama-spm", |w| {
        w.remove_metadata("tokenizer.ggml.tokens");
    }));
    assert!(e.contains("no vocabulary"), "{e}");

    let e = refused(&edited("llama-spm", |w| {
        let mut t = tokens_of("llama-spm");
        t[3] = vec![b'x'; (1 << 20) + 1];
        w.set_metadata("tokenizer.ggml.tokens", string_array(t))
            .unwrap();
    }));
    assert!(e.contains("token 3 is 1048577 bytes long"), "{e}");
}

#[test]
fn a_tokenizer_outlives_its_file_and_serves_threads() {
    let tok = {
        let file = open("llama-spm");
        Tokenizer::from_file(&file).unwrap()
    };
    let want = tok.tokenize("Hello world, 🦙 here".as_bytes(), true, false);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..50 {
                    assert_eq!(
                        tok.tokenize("Hello world, 🦙 here".as_bytes(), true, false),
                        want
                    );
                }
            });
        }
    });
}

/// A vocabulary of `model` with `tokens` (all of type NORMAL), as a file.
fn made(model: &str, tokens: &[Vec<u8>]) -> GgufFile<Vec<u8>> {
    let mut w = Writer::new();
    w.add_metadata("tokenizer.ggml.model", MetadataValue::string(model))
        .unwrap();
    w.add_metadata("tokenizer.ggml.tokens", string_array(tokens.to_vec()))
        .unwrap();
    w.add_metadata(
        "tokenizer.ggml.token_type",
        MetadataValue::Array(ValueType::Int32, vec![MetadataValue::I32(1); tokens.len()]),
    )
    .unwrap();
    GgufFile::from_bytes(w.header_bytes().unwrap()).unwrap()
}

/// RWKV (no vocabulary file of llama.cpp's sources has one): tokens are escaped byte strings,
/// the text is cut greedily into the longest token at each position, and pieces unescape.
#[test]
fn rwkv_cuts_the_longest_token_and_unescapes_pieces() {
    let mut tokens: Vec<Vec<u8>> = (0..=255u8)
        .map(|b| {
            if b.is_ascii_graphic() && b != b'\\' || b == b' ' {
                vec![b]
            } else {
                format!("\\x{b:02x}").into_bytes()
            }
        })
        .collect();
    for t in ["Hel", "Hello", " world", "\\n\\n", "\\\\"] {
        tokens.push(t.as_bytes().to_vec());
    }
    let tok = Tokenizer::from_file(&made("rwkv", &tokens)).unwrap();
    let ids = tok.tokenize(b"Hello world\n\n\n!\\\xff", true, false);
    assert_eq!(ids, vec![257, 258, 259, 10, 33, 260, 255]);
    assert_eq!(
        tok.detokenize(&ids, false, false).unwrap(),
        b"Hello world\n\n\n!\\\xff"
    );
    assert_eq!(tok.token_to_piece(259, 0, false), Some(&b"\n\n"[..]));
    assert_eq!(tok.token_to_piece(0x41, 0, false), Some(&b"A"[..]));
    // add_special adds nothing; the newline token is the first token of "\n".
    assert_eq!(tok.tokenize(b"", true, true), Vec::<i32>::new());
    assert_eq!(tok.special_tokens().nl, Some(10));
}

#[test]
fn bpe_variants_load_and_incomplete_vocabularies_are_refused_by_name() {
    // `whitespace` and `hybriddna` are byte-level BPE with llama.cpp's gpt2 defaults.
    for model in ["hybriddna", "whitespace"] {
        let e = refused(&made(model, &[b"a".to_vec(), b"b".to_vec()]));
        assert!(e.contains("the BPE vocabulary has no merges"), "{e}");
        let gpt2 = Tokenizer::from_file(&open("gpt-2")).unwrap();
        let tok = Tokenizer::from_file(&edited("gpt-2", |w| {
            w.set_metadata("tokenizer.ggml.model", MetadataValue::string(model))
                .unwrap();
        }))
        .unwrap();
        assert_eq!(
            tok.tokenize(b"hello,world", true, true),
            gpt2.tokenize(b"hello,world", true, true)
        );
        let e = refused(&edited("gpt-2", |w| {
            w.set_metadata("tokenizer.ggml.model", MetadataValue::string(model))
                .unwrap();
            w.set_metadata("tokenizer.ggml.pre", MetadataValue::string("gpt-9"))
                .unwrap();
        }));
        assert!(e.contains("unknown pre-tokenizer 'gpt-9'"), "{e}");
    }
    // PLaMo 2 needs every byte token, as llama.cpp's does.
    let e = refused(&made("plamo2", &[b"a".to_vec(), b"b".to_vec()]));
    assert!(
        e.contains("the PLaMo 2 vocabulary has no byte token <0x00>"),
        "{e}"
    );
    let e = refused(&edited("llama-bpe", |w| {
        w.set_metadata("tokenizer.ggml.pre", MetadataValue::string("llama-9"))
            .unwrap();
    }));
    assert!(e.contains("unknown pre-tokenizer 'llama-9'"), "{e}");
    let e = refused(&edited("gpt-2", |w| {
        let mut merges: Vec<Vec<u8>> = open("gpt-2")
            .get("tokenizer.ggml.merges")
            .unwrap()
            .as_array()
            .unwrap()
            .strings()
            .unwrap()
            .map(<[u8]>::to_vec)
            .collect();
        merges[17] = b"\xc4\xa0 qqqqzzzz".to_vec();
        w.set_metadata("tokenizer.ggml.merges", string_array(merges))
            .unwrap();
    }));
    assert!(
        e.contains("merge 17") && e.contains("which is no token"),
        "{e}"
    );
}
