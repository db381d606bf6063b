//! Writes `fuzz/seeds/tokenize/`: for each of llama.cpp's vocabulary test files, a small
//! vocabulary cut from it with this crate's writer (its first tokens, its special tokens and
//! its shortest tokens, at most 500; the first 600 merges among them; every other key as it is,
//! the chat template and a large precompiled character map left out), behind a short text, in the `tokenize` fuzz target's
//! input layout.
//!
//! cargo run --example make_tokenize_seeds LLAMA_MODELS_DIR [OUTPUT_DIR]

#[path = "../fuzz/harness.rs"]
#[allow(unused_imports)]
mod harness;

use gguf::{GgufFile, MetadataValue as V, Writer};
use std::collections::HashMap;

const KEEP: usize = 500;
const TEXT: &str =
    "Hello world! 3.14 <s> </s> <|endoftext|> [CLS] \u{2581}a  \u{e4}\u{df} \u{4f60}\u{597d} \
                    \u{1f600}\n\t  x";

fn cut(file: &[u8]) -> Vec<u8> {
    let f = GgufFile::from_bytes(file).expect("a GGUF file");
    let kvs: Vec<(String, V)> = f
        .metadata()
        .map(|e| {
            (
                String::from_utf8_lossy(e.key).into_owned(),
                V::from(e.value),
            )
        })
        .collect();
    let tokens: Vec<Vec<u8>> = match kvs.iter().find(|(k, _)| k == "tokenizer.ggml.tokens") {
        Some((_, V::Array(_, items))) => items
            .iter()
            .map(|v| match v {
                V::String(s) => s.clone(),
                _ => Vec::new(),
            })
            .collect(),
        _ => panic!("no tokens"),
    };
    let n = tokens.len();
    let mut keep: Vec<usize> = Vec::new();
    let mut kept = vec![false; n];
    let mut take = |i: usize, keep: &mut Vec<usize>| {
        if i < n && !kept[i] && keep.len() < KEEP {
            kept[i] = true;
            keep.push(i);
        }
    };
    for (k, v) in &kvs {
        if k.starts_with("tokenizer.ggml.") && k.ends_with("_id") {
            if let V::U32(id) = v {
                take(*id as usize, &mut keep);
            }
        }
    }
    for i in 0..300 {
        take(i, &mut keep);
    }
    for len in 1..=3 {
        for (i, t) in tokens.iter().enumerate() {
            if t.len() == len {
                take(i, &mut keep);
            }
        }
    }
    keep.sort_unstable();
    let new_id: HashMap<usize, u32> = keep
        .iter()
        .enumerate()
        .map(|(new, &old)| (old, new as u32))
        .collect();
    let kept_text: std::collections::HashSet<&[u8]> =
        keep.iter().map(|&i| &tokens[i][..]).collect();
    let mut w = Writer::new();
    for (k, v) in kvs {
        let v = match v {
            V::Array(ty, items) if k == "tokenizer.ggml.merges" => {
                let items = items
                    .into_iter()
                    .filter(|m| {
                        let V::String(m) = m else { return false };
                        let Some(sp) = m.iter().position(|&b| b == b' ') else {
                            return false;
                        };
                        let (a, b) = (&m[..sp], &m[sp + 1..]);
                        let ab = [a, b].concat();
                        kept_text.contains(a)
                            && kept_text.contains(b)
                            && kept_text.contains(&ab[..])
                    })
                    .take(600)
                    .collect();
                V::Array(ty, items)
            }
            V::Array(ty, items) if k.starts_with("tokenizer.ggml.") && items.len() == n => {
                V::Array(ty, keep.iter().map(|&i| items[i].clone()).collect())
            }
            V::Array(_, items)
                if k == "tokenizer.ggml.precompiled_charsmap" && items.len() > 4096 =>
            {
                continue;
            }
            _ if k == "tokenizer.chat_template" => continue,
            V::U32(id) if k.starts_with("tokenizer.ggml.") && k.ends_with("_id") => {
                match new_id.get(&(id as usize)) {
                    Some(&i) => V::U32(i),
                    None => continue,
                }
            }
            v => v,
        };
        w.add_metadata(&k, v).unwrap();
    }
    let bytes = w.to_bytes().unwrap();
    let choices: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
    harness::tokenize_input(&choices, TEXT.as_bytes(), &bytes)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = args
        .next()
        .expect("usage: make_tokenize_seeds LLAMA_MODELS_DIR [OUTPUT_DIR]");
    let out = args.next().unwrap_or_else(|| "fuzz/seeds/tokenize".into());
    std::fs::create_dir_all(&out).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ggml-vocab-") && n.ends_with(".gguf"))
        .collect();
    names.sort();
    for name in names {
        let file = std::fs::read(std::path::Path::new(&dir).join(&name)).unwrap();
        let seed = cut(&file);
        let stem = name
            .trim_start_matches("ggml-vocab-")
            .trim_end_matches(".gguf");
        std::fs::write(std::path::Path::new(&out).join(stem), &seed).unwrap();
        println!("{stem}: {} bytes", seed.len());
    }
}
