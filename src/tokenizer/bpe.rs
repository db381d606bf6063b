//! Byte-level BPE (`tokenizer.ggml.model` = `gpt2`, `gemma4`, `whitespace`, `hybriddna`), as
//! llama.cpp's `llm_tokenizer_bpe_session`: the pre-tokenizer's words (bytes mapped to GPT-2's
//! printable stand-ins, or raw UTF-8 for SentencePiece-style vocabularies), each split into
//! characters and merged by the lowest-ranked merge first (the leftmost among equal ranks); a
//! piece that is no token goes out as byte tokens. The `whitespace` and `hybriddna` sessions
//! cut the text first (at whitespace; around `<dna>` spans, which become 6-mer tokens).
//!
//! The model is loaded here too: the defaults each pre-tokenizer name sets, the merges (checked
//! against the vocabulary) and the pre-tokenizer's splitter.

use super::pretokenize::{PreType, Splitter};
use super::space::escape_whitespace;
use super::symbols::{order_from_cmp, symbols, Symbol, NONE};
use super::types::Flags;
use super::unicode;
use super::vocab::{self, bad, Vocab};
use crate::error::Result;
use crate::file::GgufFile;
use crate::text::quote;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// The suffix (U+E000) that keeps `hybriddna` k-mer tokens apart from equal BPE tokens; their
/// texts lose it once loaded.
const DNA_MARKER: &[u8] = "\u{E000}".as_bytes();

/// A byte-level BPE vocabulary's merges and pre-tokenizer.
pub(crate) struct Bpe {
    merges: Merges,
    splitter: Splitter,
    byte_encode: bool,
    gemma4: bool,
    /// The session llama.cpp runs for the model name.
    variant: Variant,
}

/// The BPE session a `tokenizer.ggml.model` name picks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Variant {
    /// `gpt2`, `gemma4`: the pre-tokenizer's words, merged.
    Plain,
    /// `whitespace`: the text cut at whitespace (which is dropped), each piece lower-cased
    /// where the normalizer says so, then tokenized as `Plain`.
    Whitespace,
    /// `hybriddna`: `<dna>`…`</dna>` spans become 6-mer tokens, the rest is `Plain`.
    HybridDna,
}

/// What a BPE pre-tokenizer name changes in the loader's defaults.
#[derive(Clone, Copy, Default)]
pub(crate) struct PreFlags {
    pub keep_clean_spaces: bool,
    pub ignore_merges: bool,
    pub add_bos: bool,
    pub add_sep: bool,
    pub escape_whitespaces: bool,
    pub no_bos: bool,
    pub no_lowercase: bool,
}

/// The error for a pre-tokenizer name llama.cpp's loader does not know.
fn unknown_pre(pre: &str) -> crate::error::Error {
    bad(format!(
        "unknown pre-tokenizer {} (tokenizer.ggml.pre)",
        quote(pre.as_bytes())
    ))
}

impl PreFlags {
    /// What pre-tokenizer `name` changes in the defaults, as llama.cpp's loader (an unknown name
    /// is an error).
    pub fn of(name: &str) -> Result<PreFlags> {
        pre_flags(name).ok_or_else(|| unknown_pre(name))
    }
}

/// The key of the merges.
const MERGES: &str = "tokenizer.ggml.merges";

/// The merges: (left token, right token) to (rank, merged token).
struct Merges {
    map: hashbrown::HashMap<u64, (u32, u32), foldhash::fast::FixedState>,
}

#[inline]
fn key(left: u32, right: u32) -> u64 {
    u64::from(left) << 32 | u64::from(right)
}

impl Merges {
    /// Reads `tokenizer.ggml.merges` ("left right" each): every part and every result must be a
    /// token; the first of two equal merges counts, as in llama.cpp.
    fn load<S: AsRef<[u8]>>(file: &GgufFile<S>, vocab: &Vocab, optional: bool) -> Result<Merges> {
        let mut map =
            hashbrown::HashMap::with_hasher(foldhash::fast::FixedState::with_seed(0x5eed));
        let Some(a) = vocab::array(file, MERGES)? else {
            if optional {
                return Ok(Merges { map });
            }
            return Err(bad(
                "the BPE vocabulary has no merges (tokenizer.ggml.merges)",
            ));
        };
        let strings = a
            .strings()
            .ok_or_else(|| vocab::wrong_type("tokenizer.ggml.merges", "an array of strings"))?;
        map.reserve(usize::try_from(a.len()).unwrap_or(0));
        for (rank, m) in strings.enumerate() {
            let at = || vocab::element_offset(file, MERGES, rank as u64);
            let space = m
                .iter()
                .skip(1)
                .position(|&b| b == b' ')
                .map(|p| p + 1)
                .ok_or_else(|| {
                    bad(format!("merge {rank} ({}) has no space", quote(m))).with_offset(at())
                })?;
            let (l, r) = (&m[..space], &m[space + 1..]);
            let id = |part: &[u8]| {
                vocab.find(part).ok_or_else(|| {
                    bad(format!(
                        "merge {rank} ({}) names {}, which is no token",
                        quote(m),
                        quote(part)
                    ))
                    .with_offset(at())
                })
            };
            let (li, ri) = (id(l)?, id(r)?);
            let mut joined = Vec::with_capacity(l.len() + r.len());
            joined.extend_from_slice(l);
            joined.extend_from_slice(r);
            let result = id(&joined)?;
            let rank = u32::try_from(rank).map_err(|_| bad("too many merges"))?;
            map.entry(key(li, ri)).or_insert((rank, result));
        }
        Ok(Merges { map })
    }

    #[inline]
    fn get(&self, left: u32, right: u32) -> Option<(u32, u32)> {
        self.map.get(&key(left, right)).copied()
    }
}

struct Bigram {
    left: usize,
    right: usize,
    rank: u32,
    result: u32,
    size: usize,
}

order_from_cmp!(Bigram);
impl Ord for Bigram {
    /// The greatest is the lowest rank, then the leftmost.
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .rank
            .cmp(&self.rank)
            .then_with(|| other.left.cmp(&self.left))
    }
}

/// Reusable buffers for one call.
#[derive(Default)]
struct Session {
    syms: Vec<Symbol>,
    ids: Vec<u32>,
    queue: BinaryHeap<Bigram>,
}

/// What the BPE pass needs to know of the vocabulary.
struct Pass<'a> {
    vocab: &'a Vocab,
    merges: &'a Merges,
    ignore_merges: bool,
    gemma4: bool,
    byte_encode: bool,
}

impl Pass<'_> {
    /// Appends the tokens of one word to `out`.
    fn word(&self, s: &mut Session, word: &[u8], out: &mut Vec<i32>) {
        let whole = if self.ignore_merges || (self.gemma4 && word.iter().all(|&b| b == b'\n')) {
            self.vocab.find(word)
        } else {
            None
        };
        if let Some(id) = whole {
            out.push(id as i32);
            return;
        }
        symbols(word, &mut s.syms);
        s.ids.clear();
        s.ids.extend(s.syms.iter().map(|y| {
            self.vocab
                .find(&word[y.start..y.start + y.len])
                .unwrap_or(u32::MAX)
        }));
        s.queue.clear();
        for i in 1..s.syms.len() {
            self.add(s, i - 1, i);
        }
        while let Some(b) = s.queue.pop() {
            let (l, r) = (s.syms[b.left], s.syms[b.right]);
            if l.len == 0 || r.len == 0 || l.len + r.len != b.size {
                continue;
            }
            s.syms[b.left].len += r.len;
            s.syms[b.right].len = 0;
            s.ids[b.left] = b.result;
            s.syms[b.left].next = r.next;
            if r.next != NONE {
                s.syms[r.next].prev = b.left;
            }
            self.add(s, l.prev, b.left);
            self.add(s, b.left, r.next);
        }
        for (i, y) in s.syms.iter().enumerate() {
            if y.len == 0 {
                continue;
            }
            let id = s.ids[i];
            if id != u32::MAX {
                out.push(id as i32);
                continue;
            }
            for &b in &word[y.start..y.start + y.len] {
                let found = if self.byte_encode {
                    self.vocab.find(&[b])
                } else {
                    self.vocab.find_byte(b)
                };
                if let Some(t) = found {
                    out.push(t as i32);
                }
            }
        }
    }

    #[inline]
    fn add(&self, s: &mut Session, left: usize, right: usize) {
        if left == NONE || right == NONE {
            return;
        }
        let (li, ri) = (s.ids[left], s.ids[right]);
        if li == u32::MAX || ri == u32::MAX {
            return;
        }
        if let Some((rank, result)) = self.merges.get(li, ri) {
            s.queue.push(Bigram {
                left,
                right,
                rank,
                result,
                size: s.syms[left].len + s.syms[right].len,
            });
        }
    }
}

/// The BPE pre-tokenizer names llama.cpp's loader accepts, and what each changes.
fn pre_flags(name: &str) -> Option<PreFlags> {
    let d = PreFlags::default();
    let noclean = PreFlags {
        keep_clean_spaces: false,
        ..d
    };
    // `keep_clean_spaces: false` is written out where llama.cpp sets clean_spaces = false.
    let c = |f: PreFlags| PreFlags {
        keep_clean_spaces: true,
        ..f
    };
    Some(match name {
        "" | "default" | "falcon" | "mpt" | "starcoder" | "gpt-2" | "phi-2" | "jina-es"
        | "jina-de" | "gigachat" | "jina-v2-es" | "jina-v2-de" | "a.x-4.0" | "mellum"
        | "modern-bert" | "jais-2" | "refact" | "stablelm2" | "olmo" | "dbrx" | "smaug-bpe"
        | "jais" | "codeshell" | "bloom" | "gpt3-finnish" | "exaone" | "exaone4" | "exaone-moe"
        | "minerva-7b" | "megrez" | "mellum2" => c(d),
        "minicpm5" => c(PreFlags {
            ignore_merges: true,
            ..d
        }),
        "llama3" | "llama-v3" | "llama-bpe" | "falcon3" | "falcon-h1" | "pixtral" | "midm-2.0"
        | "lfm2" | "jina-v5-nano" => c(PreFlags {
            ignore_merges: true,
            add_bos: true,
            ..d
        }),
        "deepseek-llm" | "deepseek-coder" | "deepseek-v3" | "spark2_5" | "command-r" | "qwen2"
        | "deepseek-r1-qwen" | "kormo" | "f2llmv2" | "qwen35" | "poro-chat" | "viking"
        | "smollm" | "gpt-4o" | "llama4" | "kanana2" | "talkie" | "tiny_aya" | "cohere2moe"
        | "superbpe" | "trillion" | "granite-docling" | "bailingmoe" | "bailingmoe2"
        | "llada-moe" | "seed-coder" | "hunyuan" | "hunyuan-dense" | "hy_v4" | "joyai-llm"
        | "kimi-k2" | "ufakzeka" | "grok-2" | "afmoe" | "laguna" | "minimax-m2" | "solar-open" => {
            noclean
        }
        "youtu" | "granite-embed-multi-97m" => PreFlags {
            ignore_merges: true,
            ..noclean
        },
        "gemma4" | "granite-embed-multi-311m" => c(PreFlags {
            escape_whitespaces: true,
            ..d
        }),
        "sarvam-moe" => PreFlags {
            escape_whitespaces: true,
            ..noclean
        },
        "jina-v1-en" | "jina-v2-code" | "roberta-bpe" => c(PreFlags { add_sep: true, ..d }),
        "whitespace" => c(PreFlags {
            no_lowercase: true,
            ..d
        }),
        "chatglm-bpe" => c(PreFlags { no_bos: true, ..d }),
        "glm4" | "glm5" => c(PreFlags {
            no_bos: true,
            ignore_merges: true,
            ..d
        }),
        "tekken" => PreFlags {
            ignore_merges: true,
            add_bos: true,
            ..noclean
        },
        "chameleon" => PreFlags {
            add_bos: true,
            ..noclean
        },
        _ => return None,
    })
}

impl Bpe {
    /// The model of `vocab` for model name `model` and pre-tokenizer `pre`: for `hybriddna`,
    /// the k-mer marker cut from the texts of the tokens after `<oov>` (as llama.cpp does), then
    /// the merges read and the pre-tokenizer's expressions compiled.
    pub fn load<S: AsRef<[u8]>>(
        file: &GgufFile<S>,
        vocab: &mut Vocab,
        model: &str,
        pre: &str,
    ) -> Result<Bpe> {
        if model == "hybriddna" {
            if let Some(oov) = vocab.find(b"<oov>") {
                vocab.cut_suffix_after(oov as usize, DNA_MARKER);
            }
        }
        let pre_type = PreType::from_name(pre).ok_or_else(|| unknown_pre(pre))?;
        let splitter = Splitter::new(pre_type.regexes()).map_err(bad)?;
        let merges = Merges::load(file, vocab, pre == "kimi-k2")?;
        Ok(Bpe {
            merges,
            splitter,
            byte_encode: pre_type.byte_encode(),
            gemma4: pre_type == PreType::Gemma4,
            variant: match model {
                "whitespace" => Variant::Whitespace,
                "hybriddna" => Variant::HybridDna,
                _ => Variant::Plain,
            },
        })
    }

    /// Appends the tokens of one text fragment (no special tokens in it) to `out`: its spaces
    /// escaped where the flags say so, then the model name's session.
    pub fn tokenize(&self, vocab: &Vocab, flags: &Flags, text: &[u8], out: &mut Vec<i32>) {
        let escaped;
        let text = if flags.escape_whitespaces {
            let mut buf = Vec::with_capacity(text.len() + 16);
            escape_whitespace(text, &mut buf);
            escaped = buf;
            &escaped[..]
        } else {
            text
        };
        let pass = Pass {
            vocab,
            merges: &self.merges,
            ignore_merges: flags.ignore_merges,
            gemma4: self.gemma4,
            byte_encode: self.byte_encode,
        };
        let mut session = Session::default();
        match self.variant {
            Variant::Plain => self.plain(&pass, &mut session, text, out),
            Variant::Whitespace => self.whitespace(&pass, &mut session, flags, text, out),
            Variant::HybridDna => self.hybriddna(&pass, &mut session, text, out),
        }
    }

    /// llama.cpp's plain BPE session over one piece of (escaped) text.
    fn plain(&self, pass: &Pass, session: &mut Session, text: &[u8], out: &mut Vec<i32>) {
        self.splitter
            .for_each_word(text, self.byte_encode, |word| pass.word(session, word, out));
    }

    /// llama.cpp's `whitespace` session: the code points between whitespace (lower-cased where
    /// the normalizer lower-cases), each run tokenized alone.
    fn whitespace(
        &self,
        pass: &Pass,
        session: &mut Session,
        flags: &Flags,
        text: &[u8],
        out: &mut Vec<i32>,
    ) {
        let mut segment = Vec::new();
        for cp in unicode::cpts_iter(text) {
            if unicode::flags(cp).is_whitespace {
                if !segment.is_empty() {
                    self.plain(pass, session, &segment, out);
                    segment.clear();
                }
            } else {
                let cp = if flags.lowercase {
                    unicode::to_lower(cp)
                } else {
                    cp
                };
                unicode::cpt_to_utf8(cp, &mut segment);
            }
        }
        if !segment.is_empty() {
            self.plain(pass, session, &segment, out);
        }
    }

    /// llama.cpp's `hybriddna` session (plain BPE where the vocabulary lacks `<dna>`,
    /// `</dna>` or `<oov>`).
    fn hybriddna(&self, pass: &Pass, session: &mut Session, text: &[u8], out: &mut Vec<i32>) {
        const OPEN: &[u8] = b"<dna>";
        const CLOSE: &[u8] = b"</dna>";
        let vocab = pass.vocab;
        let (Some(begin), Some(end), Some(oov)) =
            (vocab.find(OPEN), vocab.find(CLOSE), vocab.find(b"<oov>"))
        else {
            self.plain(pass, session, text, out);
            return;
        };
        let mut pos = 0;
        while pos < text.len() {
            let Some(start) = find_bytes(&text[pos..], OPEN).map(|i| i + pos) else {
                self.plain(pass, session, &text[pos..], out);
                break;
            };
            if start > pos {
                self.plain(pass, session, &text[pos..start], out);
            }
            out.push(begin as i32);
            let content = start + OPEN.len();
            let close = find_bytes(&text[content..], CLOSE).map(|i| i + content);
            dna_kmers(vocab, &text[content..close.unwrap_or(text.len())], oov, out);
            let Some(close) = close else { break };
            out.push(end as i32);
            pos = close + CLOSE.len();
        }
    }
}

/// The 6-mer tokens of a DNA span: ASCII upper-cased, the last k-mer padded with `A`, each
/// looked up with the marker suffix, `oov` where the vocabulary lacks it.
fn dna_kmers(vocab: &Vocab, raw: &[u8], oov: u32, out: &mut Vec<i32>) {
    const K: usize = 6;
    let seq = raw.to_ascii_uppercase();
    let mut key = Vec::with_capacity(K + DNA_MARKER.len());
    for chunk in seq.chunks(K) {
        key.clear();
        key.extend_from_slice(chunk);
        key.resize(K, b'A');
        key.extend_from_slice(DNA_MARKER);
        out.push(vocab.find(&key).unwrap_or(oov) as i32);
    }
}

/// Where `needle` first occurs in `hay`.
fn find_bytes(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}
