//! The loader: llama.cpp's `llama_vocab::impl::load` (defaults per model and pre-tokenizer,
//! special tokens by key and by text, end-of-generation tokens, attributes), with each of its
//! silent fallbacks for a damaged vocabulary made an error.

use super::bpe::{Bpe, PreFlags};
use super::detokenize::pieces;
use super::model::{Model, Tokenizer};
use super::plamo2::Plamo2;
use super::rwkv::Rwkv;
use super::special::SpecialIndex;
use super::spm::Spm;
use super::types::{Flags, SpecialTokens, VocabType};
use super::ugm::{CharsMap, Ugm};
use super::vocab::{self, attr, bad, Vocab};
use super::wpm::Wpm;
use crate::error::Result;
use crate::file::GgufFile;
use crate::text::quote;

/// An algorithm's model while the loader runs: those that need the final attributes or the
/// unknown token wait for them.
enum Pending {
    Spm,
    Ugm(Option<CharsMap>),
    Rwkv(Rwkv),
    Plamo2,
    Bpe(Box<Bpe>),
    Wpm(Box<Wpm>),
}

/// Special-token ids while loading: `-1` is none, as in llama.cpp.
#[derive(Clone, Copy)]
struct Ids {
    bos: i64,
    eos: i64,
    eot: i64,
    eom: i64,
    unk: i64,
    sep: i64,
    pad: i64,
    mask: i64,
    fim_pre: i64,
    fim_suf: i64,
    fim_mid: i64,
    fim_pad: i64,
    fim_rep: i64,
    fim_sep: i64,
}

/// A loading id as a token id: `-1` (none) and ids past `i32` are `None`.
fn to_id(v: i64) -> Option<i32> {
    i32::try_from(v).ok().filter(|&v| v >= 0)
}

/// One of [`Ids`]' fields.
type Field = fn(&mut Ids) -> &mut i64;

/// The newline token, as llama.cpp finds it (before any special token is known).
pub(super) enum Newline {
    /// Found by text (SentencePiece's `<0x0A>` or `\n` token) or the default padding token
    /// (WordPiece, or SentencePiece without either token).
    Known(Option<i32>),
    /// The first token the tokenizer makes of `\n`, else `fallback` (the default padding
    /// token).
    FirstTokenOfNewline { fallback: Option<i32> },
}

/// Reads `file`'s vocabulary: the tokenizer (its newline token not yet found), and how to find
/// its newline token.
pub(super) fn load<S: AsRef<[u8]>>(file: &GgufFile<S>) -> Result<(Tokenizer, Newline)> {
    let model_bytes = vocab::string(file, "tokenizer.ggml.model")?
        .ok_or_else(|| bad("the file has no tokenizer (key tokenizer.ggml.model)"))?;
    let model = String::from_utf8_lossy(model_bytes).into_owned();
    let pre_key = vocab::string(file, "tokenizer.ggml.pre")?;
    let mut pre = pre_key.map_or_else(String::new, |p| String::from_utf8_lossy(p).into_owned());

    let (kind, mut ids) = model_defaults(model_bytes, &mut pre)?;
    // llama.cpp finds the newline token before it reads the keys: its fallback is the model
    // type's default padding token.
    let default_pad = to_id(ids.pad);
    let mut flags = default_flags(file, kind, &pre, &mut ids)?;

    let mut vocab = Vocab::load(file)?;
    let n = vocab.len();

    // llama.cpp builds the algorithm's tables here, from the attributes the token types give,
    // before any special token changes them.
    let mut pending = match kind {
        // The unknown token is known only later: the model waits for it.
        VocabType::Ugm => Pending::Ugm(CharsMap::load(file)?),
        VocabType::Rwkv => Pending::Rwkv(Rwkv::load(&vocab)?),
        // The byte tokens are known from the attributes, set below.
        VocabType::Plamo2 => Pending::Plamo2,
        VocabType::Wpm => Pending::Wpm(Box::new(Wpm::load(&vocab)?)),
        VocabType::Bpe => Pending::Bpe(Box::new(Bpe::load(file, &mut vocab, &model, &pre)?)),
        VocabType::Spm => Pending::Spm,
    };

    ids_by_key(file, &mut ids, n)?;
    flags_by_key(file, &mut flags, kind, &pre)?;

    let original_attrs = vocab.attrs.clone();
    detect_by_text(&mut vocab, &mut ids);
    let eog = end_of_generation(&mut vocab, &ids);

    // Special tokens for the partition, longest first (ties by id).
    let mut special_cache: Vec<u32> = (0..n)
        .filter(|&i| vocab.attrs[i] & (attr::CONTROL | attr::USER_DEFINED | attr::UNKNOWN) != 0)
        .filter_map(|i| u32::try_from(i).ok())
        .collect();
    special_cache.sort_by_key(|&i| std::cmp::Reverse(vocab.text(i as usize).len()));

    let (pieces_buf, piece_ends) = pieces(&vocab, kind, flags.escape_whitespaces, &|id| {
        vocab::element_offset(file, vocab::TOKENS, id as u64)
    })?;

    per_token_attributes(file, &mut vocab, &special_cache, pre_key)?;
    let special_index = SpecialIndex::new(&vocab, &special_cache);

    let special = ids.special();
    let algorithm = match std::mem::replace(&mut pending, Pending::Spm) {
        Pending::Spm => Model::Spm(Spm::load(&vocab)),
        Pending::Rwkv(r) => Model::Rwkv(r),
        Pending::Plamo2 => Model::Plamo2(Box::new(Plamo2::new(&vocab, &original_attrs)?)),
        Pending::Wpm(m) => Model::Wpm(m),
        Pending::Bpe(b) => Model::Bpe(b),
        Pending::Ugm(charsmap) => {
            Model::Ugm(Ugm::new(&vocab, &original_attrs, charsmap, special.unk)?)
        }
    };
    // What add_special adds: SentencePiece, BPE and UGM follow add_bos/add_eos; WordPiece
    // always adds CLS (the BOS id) and SEP; RWKV and PLaMo 2 add nothing.
    let added = match kind {
        VocabType::Wpm => (special.bos, special.sep),
        VocabType::Spm | VocabType::Bpe | VocabType::Ugm => (
            special.bos.filter(|_| flags.add_bos),
            special.eos.filter(|_| flags.add_eos),
        ),
        VocabType::Rwkv | VocabType::Plamo2 => (None, None),
    };
    let newline = match kind {
        VocabType::Spm => Newline::Known(
            vocab
                .find(b"<0x0A>")
                .or_else(|| vocab.find(b"\n"))
                .map(|i| i as i32)
                .or(default_pad),
        ),
        VocabType::Wpm => Newline::Known(default_pad),
        VocabType::Bpe | VocabType::Ugm | VocabType::Rwkv | VocabType::Plamo2 => {
            Newline::FirstTokenOfNewline {
                fallback: default_pad,
            }
        }
    };
    let tok = Tokenizer {
        vocab,
        kind,
        model,
        pre,
        flags,
        special,
        added,
        eog,
        special_index,
        pieces: pieces_buf,
        piece_ends,
        algorithm,
    };
    Ok((tok, newline))
}

/// The algorithm `tokenizer.ggml.model` names, and its default special tokens (`gemma4` also
/// sets the pre-tokenizer).
fn model_defaults(model_bytes: &[u8], pre: &mut String) -> Result<(VocabType, Ids)> {
    let model = String::from_utf8_lossy(model_bytes);
    let model: &str = &model;
    let none = -1;
    let mut ids = Ids {
        bos: 1,
        eos: 2,
        eot: none,
        eom: none,
        unk: 0,
        sep: none,
        pad: none,
        mask: none,
        fim_pre: none,
        fim_suf: none,
        fim_mid: none,
        fim_pad: none,
        fim_rep: none,
        fim_sep: none,
    };
    let kind = match model {
        "llama" => VocabType::Spm,
        "bert" => {
            (ids.bos, ids.eos, ids.unk, ids.sep, ids.pad, ids.mask) = (101, none, 100, 102, 0, 103);
            VocabType::Wpm
        }
        "gpt2" | "hybriddna" | "whitespace" => {
            (ids.bos, ids.eos, ids.unk) = (11, 11, none);
            VocabType::Bpe
        }
        "gemma4" => {
            (ids.bos, ids.eos, ids.unk) = (none, none, none);
            *pre = "gemma4".into();
            VocabType::Bpe
        }
        "t5" => {
            (ids.bos, ids.eos, ids.unk, ids.pad) = (none, 1, 2, 0);
            VocabType::Ugm
        }
        "rwkv" => {
            (ids.bos, ids.eos, ids.unk) = (none, none, none);
            VocabType::Rwkv
        }
        "plamo2" => {
            (ids.bos, ids.eos, ids.unk, ids.pad) = (1, 2, 0, 3);
            VocabType::Plamo2
        }
        "no_vocab" | "none" => {
            return Err(bad(format!(
                "the file has no vocabulary (tokenizer.ggml.model is {})",
                quote(model_bytes)
            )))
        }
        _ => {
            return Err(bad(format!(
                "unknown tokenizer model {} (tokenizer.ggml.model)",
                quote(model_bytes)
            )))
        }
    };
    Ok((kind, ids))
}

/// The flags' defaults for the algorithm (and, for BPE, the pre-tokenizer, which may also drop
/// the BOS token), then the two keys llama.cpp reads before the tokens.
fn default_flags<S: AsRef<[u8]>>(
    file: &GgufFile<S>,
    kind: VocabType,
    pre: &str,
    ids: &mut Ids,
) -> Result<Flags> {
    let none = -1;
    let mut flags = Flags {
        escape_whitespaces: true,
        lowercase: true,
        ..Flags::default()
    };
    match kind {
        VocabType::Bpe => {
            let p = PreFlags::of(pre)?;
            flags.escape_whitespaces = p.escape_whitespaces;
            flags.clean_spaces = p.keep_clean_spaces;
            flags.ignore_merges = p.ignore_merges;
            flags.add_bos = p.add_bos;
            flags.add_sep = p.add_sep;
            if p.no_bos {
                ids.bos = none;
            }
            if p.no_lowercase {
                flags.lowercase = false;
            }
        }
        VocabType::Spm => {
            flags.add_space_prefix = true;
            flags.add_bos = true;
        }
        VocabType::Wpm => {
            flags.clean_spaces = true;
            flags.add_bos = true;
            flags.add_sep = true;
        }
        VocabType::Ugm => flags.add_eos = true,
        VocabType::Rwkv | VocabType::Plamo2 => {}
    }
    if let Some(v) = vocab::boolean(file, "tokenizer.ggml.add_space_prefix")? {
        flags.add_space_prefix = v;
    }
    if let Some(v) = vocab::boolean(file, "tokenizer.ggml.remove_extra_whitespaces")? {
        flags.remove_extra_whitespaces = v;
    }

    Ok(flags)
}

/// Special tokens by key; an id past the vocabulary's `n` tokens is an error (llama.cpp falls
/// back to the default with a warning).
fn ids_by_key<S: AsRef<[u8]>>(file: &GgufFile<S>, ids: &mut Ids, n: usize) -> Result<()> {
    let none = -1;
    let n_i64 = i64::try_from(n).unwrap_or(i64::MAX);
    let keys: [(&str, Field); 17] = [
        ("tokenizer.ggml.bos_token_id", |i| &mut i.bos),
        ("tokenizer.ggml.eos_token_id", |i| &mut i.eos),
        ("tokenizer.ggml.eot_token_id", |i| &mut i.eot),
        ("tokenizer.ggml.eom_token_id", |i| &mut i.eom),
        ("tokenizer.ggml.unknown_token_id", |i| &mut i.unk),
        ("tokenizer.ggml.seperator_token_id", |i| &mut i.sep),
        ("tokenizer.ggml.padding_token_id", |i| &mut i.pad),
        ("tokenizer.ggml.mask_token_id", |i| &mut i.mask),
        ("tokenizer.ggml.fim_pre_token_id", |i| &mut i.fim_pre),
        ("tokenizer.ggml.fim_suf_token_id", |i| &mut i.fim_suf),
        ("tokenizer.ggml.fim_mid_token_id", |i| &mut i.fim_mid),
        ("tokenizer.ggml.fim_pad_token_id", |i| &mut i.fim_pad),
        ("tokenizer.ggml.fim_rep_token_id", |i| &mut i.fim_rep),
        ("tokenizer.ggml.fim_sep_token_id", |i| &mut i.fim_sep),
        ("tokenizer.ggml.prefix_token_id", |i| &mut i.fim_pre),
        ("tokenizer.ggml.suffix_token_id", |i| &mut i.fim_suf),
        ("tokenizer.ggml.middle_token_id", |i| &mut i.fim_mid),
    ];
    for (key, field) in keys {
        let id = field(ids);
        if *id >= n_i64 {
            // A default past a small vocabulary is dropped, as llama.cpp does.
            *id = none;
        }
        if let Some(v) = vocab::unsigned(file, key)? {
            if v >= n as u64 {
                return Err(
                    bad(format!("{key} is {v}, past the vocabulary's {n} tokens"))
                        .with_offset(vocab::value_offset(file, key)),
                );
            }
            *id = i64::try_from(v).unwrap_or(none);
        }
    }
    Ok(())
}

/// The flags' keys read after the special tokens.
fn flags_by_key<S: AsRef<[u8]>>(
    file: &GgufFile<S>,
    flags: &mut Flags,
    kind: VocabType,
    pre: &str,
) -> Result<()> {
    if let Some(v) = vocab::boolean(file, "tokenizer.ggml.add_bos_token")? {
        flags.add_bos = v;
    }
    if let Some(v) = vocab::boolean(file, "tokenizer.ggml.add_eos_token")? {
        flags.add_eos = v;
    }
    if let Some(v) = vocab::boolean(file, "tokenizer.ggml.add_sep_token")? {
        flags.add_sep = v;
    }
    let gemma4 = matches!(pre, "gemma4" | "granite-embed-multi-311m");
    if kind == VocabType::Bpe && gemma4 {
        flags.add_bos = true;
    }
    if let Some(v) = vocab::boolean(file, "tokenizer.ggml.normalizer.lowercase")? {
        flags.lowercase = v;
    }
    flags.strip_accents =
        vocab::boolean(file, "tokenizer.ggml.normalizer.strip_accents")?.unwrap_or(flags.lowercase);

    Ok(())
}

impl Ids {
    /// The special tokens (`-1` and ids past `i32` are none).
    fn special(&self) -> SpecialTokens {
        SpecialTokens {
            bos: to_id(self.bos),
            eos: to_id(self.eos),
            eot: to_id(self.eot),
            eom: to_id(self.eom),
            unk: to_id(self.unk),
            sep: to_id(self.sep),
            pad: to_id(self.pad),
            mask: to_id(self.mask),
            nl: None,
            fim_pre: to_id(self.fim_pre),
            fim_suf: to_id(self.fim_suf),
            fim_mid: to_id(self.fim_mid),
            fim_pad: to_id(self.fim_pad),
            fim_rep: to_id(self.fim_rep),
            fim_sep: to_id(self.fim_sep),
        }
    }
}

/// llama.cpp's search for EOT, EOM and FIM tokens by their text, where no key names them; a
/// token found so becomes a control token. Among several candidates, the highest id wins:
/// llama.cpp takes the first its hash map yields, which is mostly the last inserted.
fn detect_by_text(vocab: &mut Vocab, ids: &mut Ids) {
    let lists: [(&[&str], Field); 8] = [
        (
            &[
                "<|eot_id|>",
                "<|im_end|>",
                "<|end|>",
                "<end_of_turn>",
                "<|endoftext|>",
                "<|end_of_text|>",
                "<EOT>",
                "_<EOT>",
                "[EOT]",
                "<｜end▁of▁sentence｜>",
                "<end_of_utterance>",
            ],
            |i| &mut i.eot,
        ),
        (&["<|eom_id|>"], |i| &mut i.eom),
        (
            &[
                "<|fim_prefix|>",
                "<fim-prefix>",
                "<fim_prefix>",
                "<｜fim▁begin｜>",
                "<PRE>",
                "▁<PRE>",
                "<|code_prefix|>",
                "<|prefix|>",
            ],
            |i| &mut i.fim_pre,
        ),
        (
            &[
                "<|fim_suffix|>",
                "<fim-suffix>",
                "<fim_suffix>",
                "<｜fim▁hole｜>",
                "<SUF>",
                "▁<SUF>",
                "<|code_suffix|>",
                "<|suffix|>",
            ],
            |i| &mut i.fim_suf,
        ),
        (
            &[
                "<|fim_middle|>",
                "<fim-middle>",
                "<fim_middle>",
                "<｜fim▁end｜>",
                "<MID>",
                "▁<MID>",
                "<|code_middle|>",
                "<|middle|>",
            ],
            |i| &mut i.fim_mid,
        ),
        (
            &["<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"],
            |i| &mut i.fim_pad,
        ),
        (
            &[
                "<|fim_repo|>",
                "<|repo_name|>",
                "<fim-repo>",
                "<REPO>",
                "<reponame>",
            ],
            |i| &mut i.fim_rep,
        ),
        (&["<|file_sep|>"], |i| &mut i.fim_sep),
    ];
    for (names, field) in lists {
        let id = field(ids);
        if *id != -1 {
            continue;
        }
        if let Some(found) = names.iter().filter_map(|s| vocab.find(s.as_bytes())).max() {
            *id = i64::from(found);
            vocab.attrs[found as usize] |= attr::CONTROL;
        }
    }
    // Control tokens named "unused" are unused.
    for i in 0..vocab.len() {
        if vocab.attrs[i] & attr::CONTROL != 0 && contains(vocab.text(i), b"unused") {
            vocab.attrs[i] |= attr::UNUSED;
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The end-of-generation tokens, and the attribute changes llama.cpp makes with them.
fn end_of_generation(vocab: &mut Vocab, ids: &Ids) -> Vec<i32> {
    let mut eog: Vec<i64> = Vec::new();
    for id in [ids.fim_pad, ids.fim_rep, ids.fim_sep] {
        if id != -1 {
            eog.push(id);
        }
    }
    const NAMES: [&str; 22] = [
        "<|eot_id|>",
        "<|im_end|>",
        "<|end|>",
        "<|return|>",
        "<|call|>",
        "<|flush|>",
        "<|calls|>",
        "<end_of_turn>",
        "<|endoftext|>",
        "</s>",
        "<|eom_id|>",
        "<EOT>",
        "_<EOT>",
        "[EOT]",
        "[EOS]",
        "<|end_of_text|>",
        "<end_of_utterance>",
        "<eos>",
        "<turn|>",
        "<|tool_response>",
        "<｜end▁of▁sentence｜>",
        "[e~[",
    ];
    for name in NAMES {
        if let Some(id) = vocab.find(name.as_bytes()) {
            eog.push(i64::from(id));
            vocab.attrs[id as usize] |= attr::CONTROL;
        }
    }
    for name in ["<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"] {
        if let Some(id) = vocab.find(name.as_bytes()) {
            vocab.attrs[id as usize] = attr::USER_DEFINED;
        }
    }
    for id in [ids.eos, ids.eot, ids.eom] {
        if id != -1 {
            eog.push(id);
        }
    }
    eog.sort_unstable();
    eog.dedup();
    let text_of = |vocab: &Vocab, id: i64| {
        usize::try_from(id)
            .ok()
            .filter(|&i| i < vocab.len())
            .map(|i| vocab.text(i).to_vec())
            .unwrap_or_default()
    };
    let has = |vocab: &Vocab, eog: &[i64], names: &[&str]| {
        eog.iter()
            .find(|&&id| names.iter().any(|n| text_of(vocab, id) == n.as_bytes()))
            .copied()
    };
    let end = has(vocab, &eog, &["<|end|>"]);
    let ret = has(vocab, &eog, &["<|return|>"]).is_some();
    let call = has(vocab, &eog, &["<|call|>", "<|calls|>"]).is_some();
    let flush = has(vocab, &eog, &["<|flush|>"]).is_some();
    if let Some(end) = end {
        if call && (ret || flush) {
            eog.retain(|&i| i != end);
            if let Some(a) = usize::try_from(end)
                .ok()
                .and_then(|i| vocab.attrs.get_mut(i))
            {
                *a = attr::USER_DEFINED;
            }
        }
    }
    let normal_s = has(vocab, &eog, &["<|tool_response>", "<|plamo:eos|>"]).is_some();
    if let Some(s) = has(vocab, &eog, &["</s>"]) {
        if normal_s {
            eog.retain(|&i| i != s);
            if let Some(a) = usize::try_from(s).ok().and_then(|i| vocab.attrs.get_mut(i)) {
                *a = attr::NORMAL;
            }
        }
    }
    eog.into_iter()
        .filter_map(|i| i32::try_from(i).ok())
        .collect()
}

/// lstrip/rstrip attributes llama.cpp sets by model, pre-tokenizer or architecture name.
fn per_token_attributes<S: AsRef<[u8]>>(
    file: &GgufFile<S>,
    vocab: &mut Vocab,
    special_cache: &[u32],
    pre_key: Option<&[u8]>,
) -> Result<()> {
    let name = vocab::string(file, "general.name")?
        .unwrap_or_default()
        .to_ascii_lowercase();
    let arch = vocab::string(file, "general.architecture")?.unwrap_or_default();
    let pre = pre_key.unwrap_or_default();
    let any = |s: &[u8], subs: &[&str]| subs.iter().any(|x| contains(s, x.as_bytes()));
    let set = |vocab: &mut Vocab, text: &str, bit: u32, on: bool| {
        if let Some(id) = vocab.find(text.as_bytes()) {
            let a = &mut vocab.attrs[id as usize];
            *a = if on { *a | bit } else { *a & !bit };
        }
    };
    if any(pre, &["jina-v2-de", "jina-v2-es", "jina-v2-code"])
        || any(arch, &["nomic-bert-moe", "jina-bert-v3"])
    {
        set(vocab, "<mask>", attr::LSTRIP, true);
    } else if any(&name, &["phi-3", "phi3"]) {
        for &id in special_cache {
            vocab.attrs[id as usize] |= attr::RSTRIP;
        }
        set(vocab, "</s>", attr::RSTRIP, true);
        for t in ["<unk>", "<s>", "<|endoftext|>"] {
            set(vocab, t, attr::RSTRIP, false);
        }
    } else if any(&name, &["modern-bert"]) {
        set(vocab, "[MASK]", attr::LSTRIP, true);
    }
    Ok(())
}
