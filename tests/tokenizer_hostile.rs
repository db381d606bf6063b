//! Hostile vocabularies made from scratch (no reference files needed): each refusal names the
//! byte offset of what it refuses, through the Rust API and `gguf_last_error_offset()`, and no
//! vocabulary makes loading or tokenizing take memory or time out of proportion to its size and
//! the text's.

mod common;

use gguf::ffi::{gguf_close, gguf_last_error_offset, gguf_open_memory, gguf_tokenizer_open};
use gguf::tokenizer::Tokenizer;
use gguf::{GgufFile, MetadataValue, ValueType, Writer};

fn strings(items: &[Vec<u8>]) -> MetadataValue {
    MetadataValue::Array(
        ValueType::String,
        items.iter().cloned().map(MetadataValue::String).collect(),
    )
}

/// A file of `model`'s vocabulary `tokens` (types NORMAL unless `types` says), with `more`
/// keys after.
fn vocab_file(
    model: &str,
    tokens: &[Vec<u8>],
    types: Option<&[i32]>,
    more: &[(&str, MetadataValue)],
) -> Vec<u8> {
    let mut w = Writer::new();
    w.add_metadata("tokenizer.ggml.model", MetadataValue::string(model))
        .unwrap();
    w.add_metadata("tokenizer.ggml.tokens", strings(tokens))
        .unwrap();
    let types: Vec<i32> = types.map_or_else(|| vec![1; tokens.len()], <[i32]>::to_vec);
    w.add_metadata(
        "tokenizer.ggml.token_type",
        MetadataValue::Array(
            ValueType::Int32,
            types.into_iter().map(MetadataValue::I32).collect(),
        ),
    )
    .unwrap();
    for (k, v) in more {
        w.add_metadata(k, v.clone()).unwrap();
    }
    w.header_bytes().unwrap()
}

/// Where `needle` first occurs in `hay` at or after `from`.
fn find(hay: &[u8], needle: &[u8], from: usize) -> usize {
    from + hay[from..]
        .windows(needle.len())
        .position(|w| w == needle)
        .unwrap_or_else(|| panic!("{:?} is not in the file", String::from_utf8_lossy(needle)))
}

/// Where the value of `key` starts (past its 8-byte length, its bytes and its 4-byte type).
fn value_at(bytes: &[u8], key: &str) -> u64 {
    (find(bytes, key.as_bytes(), 0) + key.len() + 4) as u64
}

/// Element `i` of the fixed-size array at `key` (past the element type and the 8-byte count).
fn element_at(bytes: &[u8], key: &str, i: u64, size: u64) -> u64 {
    value_at(bytes, key) + 4 + 8 + i * size
}

/// The refusal of `bytes`' vocabulary, from the Rust API and from the C API, each with its
/// offset (the C one's -1 where there is none).
fn refusal(bytes: &[u8]) -> (String, Option<u64>, i64) {
    let file = GgufFile::from_bytes(bytes.to_vec()).unwrap();
    let e = match Tokenizer::from_file(&file) {
        Ok(_) => panic!("a hostile vocabulary was accepted"),
        Err(e) => e,
    };
    // SAFETY: `bytes` outlives the handle, which is closed before returning.
    let c_offset = unsafe {
        let h = gguf_open_memory(bytes.as_ptr().cast(), bytes.len());
        assert!(!h.is_null(), "{}", common::last_error());
        let tok = gguf_tokenizer_open(h);
        assert!(tok.is_null(), "the C API accepted a hostile vocabulary");
        let offset = gguf_last_error_offset();
        gguf_close(h);
        offset
    };
    (e.to_string(), e.offset(), c_offset)
}

/// `(message, offset)` is the refusal of `bytes`, naming `want` in its message, at `at`.
fn refused_at(bytes: &[u8], want: &str, at: u64) {
    let (message, offset, c_offset) = refusal(bytes);
    assert!(message.contains(want), "{message}");
    assert_eq!(offset, Some(at), "{message}");
    assert_eq!(c_offset, at as i64, "{message}");
    assert!(message.contains(&format!("offset {at}")), "{message}");
}

fn spm_tokens() -> Vec<Vec<u8>> {
    let mut t: Vec<Vec<u8>> = ["<unk>", "<s>", "</s>", "alpha", "beta", "gamma", "delta"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    t.extend((0..20).map(|i| format!("word{i}").into_bytes()));
    t
}

#[test]
fn vocabulary_refusals_name_the_byte_offset_of_the_element() {
    let tokens = spm_tokens();
    let n = tokens.len();
    let scores = |s: Vec<f32>| {
        MetadataValue::Array(
            ValueType::Float32,
            s.into_iter().map(MetadataValue::F32).collect(),
        )
    };

    // A NaN score: its four bytes (a payload of its own, found in the file).
    let nan = f32::from_bits(0x7fc0_1234);
    let mut s = vec![0.5f32; n];
    s[5] = nan;
    let bytes = vocab_file(
        "llama",
        &tokens,
        None,
        &[("tokenizer.ggml.scores", scores(s))],
    );
    let at = find(&bytes, &0x7fc0_1234u32.to_le_bytes(), 0) as u64;
    assert_eq!(at, element_at(&bytes, "tokenizer.ggml.scores", 5, 4));
    refused_at(&bytes, "the score of token 5 is NaN", at);

    // Too few scores: the array.
    let bytes = vocab_file(
        "llama",
        &tokens,
        None,
        &[("tokenizer.ggml.scores", scores(vec![0.0; 3]))],
    );
    refused_at(
        &bytes,
        "3 scores for 27 tokens",
        value_at(&bytes, "tokenizer.ggml.scores"),
    );

    // A type out of range.
    let mut types = vec![1; n];
    types[4] = 9;
    let bytes = vocab_file("llama", &tokens, Some(&types), &[]);
    refused_at(
        &bytes,
        "token 4 has type 9",
        element_at(&bytes, "tokenizer.ggml.token_type", 4, 4),
    );

    // A duplicate token: the second, at its length field.
    let mut t = tokens.clone();
    t[3] = b"twin-token".to_vec();
    t[6] = b"twin-token".to_vec();
    let bytes = vocab_file("llama", &t, None, &[]);
    let first = find(&bytes, b"twin-token", 0);
    let second = find(&bytes, b"twin-token", first + 1);
    refused_at(&bytes, "tokens 3 and 6 are both", (second - 8) as u64);

    // A token too long.
    let mut t = tokens.clone();
    t[2] = vec![b'x'; (1 << 20) + 1];
    let bytes = vocab_file("llama", &t, None, &[]);
    refused_at(
        &bytes,
        "token 2 is 1048577 bytes long",
        (find(&bytes, b"xxxx", 0) - 8) as u64,
    );

    // A special-token id past the vocabulary: the key's value.
    let bytes = vocab_file(
        "llama",
        &tokens,
        None,
        &[("tokenizer.ggml.bos_token_id", MetadataValue::U32(99))],
    );
    refused_at(
        &bytes,
        "tokenizer.ggml.bos_token_id is 99",
        value_at(&bytes, "tokenizer.ggml.bos_token_id"),
    );

    // A merge naming no token, and one without a space.
    let bpe: Vec<Vec<u8>> = ["a", "b", "ab", "c"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    for (bad, want) in [(&b"a q"[..], "names 'q'"), (b"abc", "has no space")] {
        let merges = vec![b"a b".to_vec(), bad.to_vec()];
        let bytes = vocab_file(
            "gpt2",
            &bpe,
            None,
            &[("tokenizer.ggml.merges", strings(&merges))],
        );
        let at = find(&bytes, bad, find(&bytes, b"tokenizer.ggml.merges", 0)) - 8;
        refused_at(&bytes, want, at as u64);
    }

    // A byte token in a WordPiece vocabulary.
    let wpm: Vec<Vec<u8>> = ["[PAD]", "<0x41>", "b"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect();
    let bytes = vocab_file("bert", &wpm, Some(&[3, 6, 1]), &[]);
    refused_at(
        &bytes,
        "token 1 is a byte token",
        (find(&bytes, b"<0x41>", 0) - 8) as u64,
    );
}

/// A byte-level BPE token's piece repeats its whole text for each code point outside GPT-2's
/// byte alphabet (llama.cpp's `[UNK_BYTE_0x...]`): a token of 100,000 `€` (300 KB) would make
/// a piece of 30 GB. It is refused, quickly and with its offset; one of 1,000 is kept, with
/// llama.cpp's piece.
#[test]
fn a_bpe_token_whose_piece_would_be_huge_is_refused() {
    let euro = "€".as_bytes();
    let merges = [("tokenizer.ggml.merges", strings(&[b"a b".to_vec()]))];
    let with = |token: Vec<u8>| {
        let tokens = vec![b"a".to_vec(), b"b".to_vec(), b"ab".to_vec(), token];
        vocab_file("gpt2", &tokens, None, &merges)
    };

    let huge = euro.repeat(100_000);
    let bytes = with(huge.clone());
    assert!(bytes.len() < 310_000);
    let started = std::time::Instant::now();
    let at = (find(&bytes, &huge[..30], 0) - 8) as u64;
    refused_at(&bytes, "token 3's piece would be", at);
    let (message, _, _) = refusal(&bytes);
    assert!(
        message.contains("100000 code points outside GPT-2's byte alphabet"),
        "{message}"
    );
    // Each of the two opens reads 300 KB of text once: far below a second, where writing the
    // piece would take minutes (or abort the process).
    assert!(started.elapsed().as_secs() < 300, "{:?}", started.elapsed());

    // 1,000 of them: a piece of 3 MB, under the limit, exactly as llama.cpp writes it.
    let token = euro.repeat(1000);
    let file = GgufFile::from_bytes(with(token.clone())).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    let mut want = Vec::new();
    for _ in 0..1000 {
        want.extend_from_slice(b"[UNK_BYTE_0xe282ac");
        want.extend_from_slice(&token);
        want.push(b']');
    }
    assert_eq!(tok.token_to_piece(3, 0, false), Some(&want[..]));

    // A token mixing both: the bytes GPT-2's alphabet stands for, and the rest spelled out.
    let file = GgufFile::from_bytes(with("aĠ€é".as_bytes().to_vec())).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    let mut want = b"a ".to_vec();
    want.extend_from_slice(b"[UNK_BYTE_0xe282ac");
    want.extend_from_slice("aĠ€é".as_bytes());
    want.extend_from_slice(b"]\xe9");
    assert_eq!(tok.token_to_piece(3, 0, false), Some(&want[..]));
}

/// A token of 64 KiB `a` then `b`: every position of a run of `a` starts a walk 64 KiB long
/// (and WordPiece tried every length up to the longest token's at each, hashing each), though
/// only one-byte tokens match. A MiB of `a` takes linear time: about a second here, where the
/// walks did not finish in minutes (hours, at their quadratic rate).
fn long_prefix_token() -> Vec<u8> {
    let mut t = vec![b'a'; 1 << 16];
    t.push(b'b');
    t
}

/// Runs `f`, asserting it took less than five minutes: a debug build's linear time is about a
/// second here (room for the emulated targets of tools/cross.sh, tens of times slower), the
/// walks' quadratic time hours.
fn quick<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let started = std::time::Instant::now();
    let out = f();
    let took = started.elapsed();
    assert!(took.as_secs() < 300, "{what} took {took:?}");
    out
}

#[test]
fn wordpiece_is_linear_in_the_word_whatever_the_tokens() {
    let tokens: Vec<Vec<u8>> = vec![
        b"[PAD]".to_vec(),
        b"[UNK]".to_vec(),
        "\u{2581}a".as_bytes().to_vec(),
        b"a".to_vec(),
        b"aaaa".to_vec(),
        long_prefix_token(),
        vec![b'b'; 1 << 16],
    ];
    let bytes = vocab_file(
        "bert",
        &tokens,
        Some(&[3, 2, 1, 1, 1, 1, 1]),
        &[
            ("tokenizer.ggml.unknown_token_id", MetadataValue::U32(1)),
            ("tokenizer.ggml.padding_token_id", MetadataValue::U32(0)),
        ],
    );
    let file = GgufFile::from_bytes(bytes).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    let text = vec![b'a'; (1 << 20) + 2];
    let ids = quick("a MiB of 'a'", || tok.tokenize(&text, false, false));
    // "▁a", then the longest token at each position: "aaaa" while four are left, then "a".
    let rest = text.len() - 1;
    let mut want = vec![2];
    want.extend(vec![4; rest / 4]);
    want.extend(vec![3; rest % 4]);
    assert_eq!(ids, want);
    // A word with a byte no token covers is the unknown token, however long.
    let mut text = vec![b'a'; 1 << 20];
    text.push(b'c');
    let ids = quick("a MiB of 'a' then 'c'", || {
        tok.tokenize(&text, false, false)
    });
    assert_eq!(ids, vec![1]);
}

#[test]
fn rwkv_is_linear_in_the_text_whatever_the_tokens() {
    let tokens: Vec<Vec<u8>> = vec![b"a".to_vec(), b"aa".to_vec(), long_prefix_token()];
    let file = GgufFile::from_bytes(vocab_file("rwkv", &tokens, None, &[])).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    let mut text = vec![b'a'; (1 << 20) + 1];
    let ids = quick("a MiB of 'a'", || tok.tokenize(&text, false, false));
    let mut want = vec![1; text.len() / 2];
    want.push(0);
    assert_eq!(ids, want);
    // The long token itself, then a byte no token starts with (unknown: skipped, none here).
    text.truncate(0);
    text.extend_from_slice(&long_prefix_token());
    text.extend_from_slice(b"ca");
    let ids = quick("the long token", || tok.tokenize(&text, false, false));
    assert_eq!(ids, vec![2, 0]);
}

#[test]
fn unigram_is_linear_in_the_text_whatever_the_tokens() {
    let tokens: Vec<Vec<u8>> = vec![
        b"<unk>".to_vec(),
        b"a".to_vec(),
        b"aa".to_vec(),
        long_prefix_token(),
    ];
    let scores = MetadataValue::Array(
        ValueType::Float32,
        [0.0, -1.0, -2.5, -1.0]
            .into_iter()
            .map(MetadataValue::F32)
            .collect(),
    );
    let bytes = vocab_file(
        "t5",
        &tokens,
        Some(&[2, 1, 1, 1]),
        &[
            ("tokenizer.ggml.scores", scores),
            ("tokenizer.ggml.unknown_token_id", MetadataValue::U32(0)),
        ],
    );
    let file = GgufFile::from_bytes(bytes).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    // Every `a` alone is the best path ("aa" costs more than two of them).
    let text = vec![b'a'; 1 << 20];
    let ids = quick("a MiB of 'a'", || tok.tokenize(&text, false, false));
    assert_eq!(ids, vec![1; text.len()]);
    // The long token, then unknown bytes (one unknown token for the run).
    let mut text = long_prefix_token();
    text.extend_from_slice(b"xyz");
    let ids = quick("the long token", || tok.tokenize(&text, false, false));
    assert_eq!(ids, vec![3, 0]);
}

#[test]
fn plamo2_is_linear_in_the_text_whatever_the_tokens() {
    let mut tokens: Vec<Vec<u8>> = vec![b"<unk>".to_vec()];
    let mut types = vec![2];
    for b in 0..256 {
        tokens.push(format!("<0x{b:02X}>").into_bytes());
        types.push(6);
    }
    tokens.extend([b"a".to_vec(), b"aa".to_vec(), long_prefix_token()]);
    types.extend([1, 1, 1]);
    let mut scores = vec![0.0f32; 257];
    scores.extend([-1.0, -2.5, -1.0]);
    let scores = MetadataValue::Array(
        ValueType::Float32,
        scores.into_iter().map(MetadataValue::F32).collect(),
    );
    let bytes = vocab_file(
        "plamo2",
        &tokens,
        Some(&types),
        &[("tokenizer.ggml.scores", scores)],
    );
    let file = GgufFile::from_bytes(bytes).unwrap();
    let tok = Tokenizer::from_file(&file).unwrap();
    let text = vec![b'a'; 1 << 20];
    let ids = quick("a MiB of 'a'", || tok.tokenize(&text, false, false));
    assert_eq!(ids, vec![257; text.len()]);
    // The long token, then a code point no token has: its byte token.
    let mut text = long_prefix_token();
    text.push(b'x');
    let ids = quick("the long token", || tok.tokenize(&text, false, false));
    assert_eq!(ids, vec![259, 1 + i32::from(b'x')]);
}
