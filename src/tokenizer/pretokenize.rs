//! Pre-tokenization: text split into words by the regular expressions llama.cpp names for each
//! pre-tokenizer, with exactly the words llama.cpp's `unicode_regex_split` gives.
//!
//! llama.cpp runs each expression of a pre-tokenizer in turn over the pieces the previous ones
//! left (each piece split into the matches and the text between them). It recognises a few
//! expressions by their text and runs hand-written splitters for them (GPT-2's, Llama 3's,
//! Qwen 2's, Qwen 3.5's, Kimi K2's, AFMoE's digit grouping, newline runs), whose results differ
//! from the expressions' in corner cases: [`Splitter`] recognises the same texts and runs ports of
//! those splitters. Every other expression goes through libstdc++'s `std::regex` (ECMAScript,
//! leftmost match, the first alternative that matches wins) over a stand-in of the text: when the
//! expression names a Unicode category (`\p{L}`...), each code point of 128 or more becomes one
//! byte for its category (0xD1 number, 0xD2 letter, 0xD3 punctuation, 0xD4 mark, 0xD5 symbol,
//! 0x0B whitespace, 0xD0 anything else) and the categories in the expression become classes of
//! those bytes and their ASCII members; otherwise the expression runs over the code points, with
//! non-ASCII whitespace replaced by 0x0B. `\s`, `\d`, `\w` and `\b` are ASCII-only, as in the C
//! locale. This module does the same transformation and runs the expression with its own
//! backtracking matcher, which gives `std::regex`'s match but remembers the (state, position)
//! pairs that failed, so no input makes it quadratic.

use super::unicode::{
    byte_to_utf8_bytes, cpt_to_utf8, cpts_from_utf8, flag_bits, is_han, to_lower, Flags,
};

/// A pre-tokenizer: one of llama.cpp's `LLAMA_VOCAB_PRE_TYPE_*` (same order, same numbers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum PreType {
    /// `LLAMA_VOCAB_PRE_TYPE_DEFAULT` (`default`).
    Default = 0,
    /// `LLAMA_VOCAB_PRE_TYPE_LLAMA3` (`falcon-h1`, `falcon3`, `jina-v5-nano`, `lfm2`, `llama-bpe`, `llama-v3`, `llama3`, `midm-2.0`, `pixtral`).
    Llama3 = 1,
    /// `LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_LLM` (`deepseek-llm`).
    DeepseekLlm = 2,
    /// `LLAMA_VOCAB_PRE_TYPE_DEEPSEEK_CODER` (`deepseek-coder`).
    DeepseekCoder = 3,
    /// `LLAMA_VOCAB_PRE_TYPE_FALCON` (`falcon`).
    Falcon = 4,
    /// `LLAMA_VOCAB_PRE_TYPE_MPT` (`mpt`).
    Mpt = 5,
    /// `LLAMA_VOCAB_PRE_TYPE_STARCODER` (`starcoder`).
    Starcoder = 6,
    /// `LLAMA_VOCAB_PRE_TYPE_GPT2` (`a.x-4.0`, `exaone4`, `gigachat`, `gpt-2`, `jina-de`, `jina-es`, `jina-v1-en`, `jina-v2-code`, `jina-v2-de`, `jina-v2-es`, `mellum`, `modern-bert`, `phi-2`, `roberta-bpe`).
    Gpt2 = 7,
    /// `LLAMA_VOCAB_PRE_TYPE_REFACT` (`refact`).
    Refact = 8,
    /// `LLAMA_VOCAB_PRE_TYPE_COMMAND_R` (`command-r`).
    CommandR = 9,
    /// `LLAMA_VOCAB_PRE_TYPE_STABLELM2` (`stablelm2`).
    Stablelm2 = 10,
    /// `LLAMA_VOCAB_PRE_TYPE_QWEN2` (`deepseek-r1-qwen`, `f2llmv2`, `kormo`, `megrez`, `qwen2`).
    Qwen2 = 11,
    /// `LLAMA_VOCAB_PRE_TYPE_OLMO` (`olmo`).
    Olmo = 12,
    /// `LLAMA_VOCAB_PRE_TYPE_DBRX` (`dbrx`).
    Dbrx = 13,
    /// `LLAMA_VOCAB_PRE_TYPE_SMAUG` (`smaug-bpe`).
    Smaug = 14,
    /// `LLAMA_VOCAB_PRE_TYPE_PORO` (`poro-chat`).
    Poro = 15,
    /// `LLAMA_VOCAB_PRE_TYPE_CHATGLM3` (no name of its own: llama.cpp never selects it by name).
    Chatglm3 = 16,
    /// `LLAMA_VOCAB_PRE_TYPE_CHATGLM4` (`chatglm-bpe`, `glm4`, `glm5`).
    Chatglm4 = 17,
    /// `LLAMA_VOCAB_PRE_TYPE_VIKING` (`viking`).
    Viking = 18,
    /// `LLAMA_VOCAB_PRE_TYPE_JAIS` (`jais`).
    Jais = 19,
    /// `LLAMA_VOCAB_PRE_TYPE_TEKKEN` (`tekken`).
    Tekken = 20,
    /// `LLAMA_VOCAB_PRE_TYPE_SMOLLM` (`smollm`).
    Smollm = 21,
    /// `LLAMA_VOCAB_PRE_TYPE_CODESHELL` (`codeshell`).
    Codeshell = 22,
    /// `LLAMA_VOCAB_PRE_TYPE_BLOOM` (`bloom`).
    Bloom = 23,
    /// `LLAMA_VOCAB_PRE_TYPE_GPT3_FINNISH` (`gpt3-finnish`).
    Gpt3Finnish = 24,
    /// `LLAMA_VOCAB_PRE_TYPE_EXAONE` (`exaone`).
    Exaone = 25,
    /// `LLAMA_VOCAB_PRE_TYPE_CHAMELEON` (`chameleon`).
    Chameleon = 26,
    /// `LLAMA_VOCAB_PRE_TYPE_MINERVA` (`minerva-7b`).
    Minerva = 27,
    /// `LLAMA_VOCAB_PRE_TYPE_DEEPSEEK3_LLM` (`deepseek-v3`).
    Deepseek3Llm = 28,
    /// `LLAMA_VOCAB_PRE_TYPE_GPT4O` (`gpt-4o`, `kanana2`, `llama4`, `talkie`).
    Gpt4o = 29,
    /// `LLAMA_VOCAB_PRE_TYPE_SUPERBPE` (`superbpe`).
    Superbpe = 30,
    /// `LLAMA_VOCAB_PRE_TYPE_TRILLION` (`trillion`).
    Trillion = 31,
    /// `LLAMA_VOCAB_PRE_TYPE_BAILINGMOE` (`bailingmoe`, `bailingmoe2`, `llada-moe`).
    Bailingmoe = 32,
    /// `LLAMA_VOCAB_PRE_TYPE_LLAMA4` (no name of its own: llama.cpp never selects it by name).
    Llama4 = 33,
    /// `LLAMA_VOCAB_PRE_TYPE_PIXTRAL` (no name of its own: llama.cpp never selects it by name).
    Pixtral = 34,
    /// `LLAMA_VOCAB_PRE_TYPE_SEED_CODER` (`seed-coder`).
    SeedCoder = 35,
    /// `LLAMA_VOCAB_PRE_TYPE_HUNYUAN` (`hunyuan`).
    Hunyuan = 36,
    /// `LLAMA_VOCAB_PRE_TYPE_KIMI_K2` (`kimi-k2`).
    KimiK2 = 37,
    /// `LLAMA_VOCAB_PRE_TYPE_HUNYUAN_DENSE` (`hunyuan-dense`).
    HunyuanDense = 38,
    /// `LLAMA_VOCAB_PRE_TYPE_GROK_2` (`grok-2`).
    Grok2 = 39,
    /// `LLAMA_VOCAB_PRE_TYPE_GRANITE_DOCLING` (`granite-docling`).
    GraniteDocling = 40,
    /// `LLAMA_VOCAB_PRE_TYPE_MINIMAX_M2` (`minimax-m2`).
    MinimaxM2 = 41,
    /// `LLAMA_VOCAB_PRE_TYPE_AFMOE` (`afmoe`).
    Afmoe = 42,
    /// `LLAMA_VOCAB_PRE_TYPE_SOLAR_OPEN` (`solar-open`).
    SolarOpen = 43,
    /// `LLAMA_VOCAB_PRE_TYPE_YOUTU` (`youtu`).
    Youtu = 44,
    /// `LLAMA_VOCAB_PRE_TYPE_EXAONE_MOE` (`exaone-moe`).
    ExaoneMoe = 45,
    /// `LLAMA_VOCAB_PRE_TYPE_QWEN35` (`qwen35`).
    Qwen35 = 46,
    /// `LLAMA_VOCAB_PRE_TYPE_TINY_AYA` (`cohere2moe`, `tiny_aya`).
    TinyAya = 47,
    /// `LLAMA_VOCAB_PRE_TYPE_JOYAI_LLM` (`joyai-llm`).
    JoyaiLlm = 48,
    /// `LLAMA_VOCAB_PRE_TYPE_JAIS2` (`jais-2`).
    Jais2 = 49,
    /// `LLAMA_VOCAB_PRE_TYPE_GEMMA4` (`gemma4`, `granite-embed-multi-311m`).
    Gemma4 = 50,
    /// `LLAMA_VOCAB_PRE_TYPE_SARVAM_MOE` (`sarvam-moe`).
    SarvamMoe = 51,
    /// `LLAMA_VOCAB_PRE_TYPE_MINICPM5` (`minicpm5`).
    Minicpm5 = 52,
    /// `LLAMA_VOCAB_PRE_TYPE_WHITESPACE` (`whitespace`).
    Whitespace = 53,
    /// `LLAMA_VOCAB_PRE_TYPE_GRANITE_EMB_MULTI` (`granite-embed-multi-97m`).
    GraniteEmbMulti = 54,
    /// `LLAMA_VOCAB_PRE_TYPE_MELLUM2` (`mellum2`).
    Mellum2 = 55,
    /// `LLAMA_VOCAB_PRE_TYPE_LAGUNA` (`laguna`).
    Laguna = 56,
    /// `LLAMA_VOCAB_PRE_TYPE_HY_V4` (`hy_v4`).
    HyV4 = 57,
    /// `LLAMA_VOCAB_PRE_TYPE_SPARK2_5` (`spark2_5`).
    Spark25 = 58,
    /// `LLAMA_VOCAB_PRE_TYPE_UFAKZEKA` (`ufakzeka`).
    Ufakzeka = 59,
}

impl PreType {
    /// Every pre-tokenizer, in llama.cpp's order.
    pub const ALL: [PreType; 60] = [
        PreType::Default,
        PreType::Llama3,
        PreType::DeepseekLlm,
        PreType::DeepseekCoder,
        PreType::Falcon,
        PreType::Mpt,
        PreType::Starcoder,
        PreType::Gpt2,
        PreType::Refact,
        PreType::CommandR,
        PreType::Stablelm2,
        PreType::Qwen2,
        PreType::Olmo,
        PreType::Dbrx,
        PreType::Smaug,
        PreType::Poro,
        PreType::Chatglm3,
        PreType::Chatglm4,
        PreType::Viking,
        PreType::Jais,
        PreType::Tekken,
        PreType::Smollm,
        PreType::Codeshell,
        PreType::Bloom,
        PreType::Gpt3Finnish,
        PreType::Exaone,
        PreType::Chameleon,
        PreType::Minerva,
        PreType::Deepseek3Llm,
        PreType::Gpt4o,
        PreType::Superbpe,
        PreType::Trillion,
        PreType::Bailingmoe,
        PreType::Llama4,
        PreType::Pixtral,
        PreType::SeedCoder,
        PreType::Hunyuan,
        PreType::KimiK2,
        PreType::HunyuanDense,
        PreType::Grok2,
        PreType::GraniteDocling,
        PreType::MinimaxM2,
        PreType::Afmoe,
        PreType::SolarOpen,
        PreType::Youtu,
        PreType::ExaoneMoe,
        PreType::Qwen35,
        PreType::TinyAya,
        PreType::JoyaiLlm,
        PreType::Jais2,
        PreType::Gemma4,
        PreType::SarvamMoe,
        PreType::Minicpm5,
        PreType::Whitespace,
        PreType::GraniteEmbMulti,
        PreType::Mellum2,
        PreType::Laguna,
        PreType::HyV4,
        PreType::Spark25,
        PreType::Ufakzeka,
    ];

    /// The pre-tokenizer llama.cpp's vocabulary loader selects for `tokenizer.ggml.pre` = `name`
    /// (for a BPE vocabulary), aliases included; the empty name is the default (llama.cpp warns).
    /// `None` for a name llama.cpp rejects.
    pub fn from_name(name: &str) -> Option<PreType> {
        Some(match name {
            "" => PreType::Default,
            "default" => PreType::Default,
            "falcon-h1" | "falcon3" | "jina-v5-nano" | "lfm2" | "llama-bpe" | "llama-v3"
            | "llama3" | "midm-2.0" | "pixtral" => PreType::Llama3,
            "deepseek-llm" => PreType::DeepseekLlm,
            "deepseek-coder" => PreType::DeepseekCoder,
            "falcon" => PreType::Falcon,
            "mpt" => PreType::Mpt,
            "starcoder" => PreType::Starcoder,
            "a.x-4.0" | "exaone4" | "gigachat" | "gpt-2" | "jina-de" | "jina-es" | "jina-v1-en"
            | "jina-v2-code" | "jina-v2-de" | "jina-v2-es" | "mellum" | "modern-bert" | "phi-2"
            | "roberta-bpe" => PreType::Gpt2,
            "refact" => PreType::Refact,
            "command-r" => PreType::CommandR,
            "stablelm2" => PreType::Stablelm2,
            "deepseek-r1-qwen" | "f2llmv2" | "kormo" | "megrez" | "qwen2" => PreType::Qwen2,
            "olmo" => PreType::Olmo,
            "dbrx" => PreType::Dbrx,
            "smaug-bpe" => PreType::Smaug,
            "poro-chat" => PreType::Poro,
            "chatglm-bpe" | "glm4" | "glm5" => PreType::Chatglm4,
            "viking" => PreType::Viking,
            "jais" => PreType::Jais,
            "tekken" => PreType::Tekken,
            "smollm" => PreType::Smollm,
            "codeshell" => PreType::Codeshell,
            "bloom" => PreType::Bloom,
            "gpt3-finnish" => PreType::Gpt3Finnish,
            "exaone" => PreType::Exaone,
            "chameleon" => PreType::Chameleon,
            "minerva-7b" => PreType::Minerva,
            "deepseek-v3" => PreType::Deepseek3Llm,
            "gpt-4o" | "kanana2" | "llama4" | "talkie" => PreType::Gpt4o,
            "superbpe" => PreType::Superbpe,
            "trillion" => PreType::Trillion,
            "bailingmoe" | "bailingmoe2" | "llada-moe" => PreType::Bailingmoe,
            "seed-coder" => PreType::SeedCoder,
            "hunyuan" => PreType::Hunyuan,
            "kimi-k2" => PreType::KimiK2,
            "hunyuan-dense" => PreType::HunyuanDense,
            "grok-2" => PreType::Grok2,
            "granite-docling" => PreType::GraniteDocling,
            "minimax-m2" => PreType::MinimaxM2,
            "afmoe" => PreType::Afmoe,
            "solar-open" => PreType::SolarOpen,
            "youtu" => PreType::Youtu,
            "exaone-moe" => PreType::ExaoneMoe,
            "qwen35" => PreType::Qwen35,
            "cohere2moe" | "tiny_aya" => PreType::TinyAya,
            "joyai-llm" => PreType::JoyaiLlm,
            "jais-2" => PreType::Jais2,
            "gemma4" | "granite-embed-multi-311m" => PreType::Gemma4,
            "sarvam-moe" => PreType::SarvamMoe,
            "minicpm5" => PreType::Minicpm5,
            "whitespace" => PreType::Whitespace,
            "granite-embed-multi-97m" => PreType::GraniteEmbMulti,
            "mellum2" => PreType::Mellum2,
            "laguna" => PreType::Laguna,
            "hy_v4" => PreType::HyV4,
            "spark2_5" => PreType::Spark25,
            "ufakzeka" => PreType::Ufakzeka,
            _ => return None,
        })
    }

    /// The regular expressions llama.cpp's `llm_tokenizer_bpe` splits text with for this
    /// pre-tokenizer (its `regex_exprs`, verbatim), applied in order by [`split`].
    pub fn regexes(self) -> &'static [&'static str] {
        match self {
            PreType::Default | PreType::Chatglm3 | PreType::Llama4 | PreType::Pixtral => RE_DEFAULT,
            PreType::Llama3 | PreType::Dbrx | PreType::Smaug | PreType::Chatglm4 => RE_LLAMA3,
            PreType::DeepseekLlm => RE_DEEPSEEK_LLM,
            PreType::DeepseekCoder => RE_DEEPSEEK_CODER,
            PreType::Falcon => RE_FALCON,
            PreType::Mpt
            | PreType::Gpt2
            | PreType::Olmo
            | PreType::Jais
            | PreType::Trillion
            | PreType::GraniteDocling => RE_GPT2,
            PreType::Starcoder
            | PreType::Refact
            | PreType::CommandR
            | PreType::Smollm
            | PreType::Codeshell
            | PreType::Exaone
            | PreType::Minerva
            | PreType::Mellum2 => RE_STARCODER,
            PreType::Stablelm2
            | PreType::Qwen2
            | PreType::Hunyuan
            | PreType::Grok2
            | PreType::SolarOpen => RE_STABLELM2,
            PreType::Poro | PreType::Bloom | PreType::Gpt3Finnish => RE_PORO,
            PreType::Viking => RE_VIKING,
            PreType::Tekken => RE_TEKKEN,
            PreType::Chameleon => RE_CHAMELEON,
            PreType::Deepseek3Llm | PreType::HunyuanDense | PreType::JoyaiLlm | PreType::HyV4 => {
                RE_DEEPSEEK3_LLM
            }
            PreType::Gpt4o | PreType::MinimaxM2 => RE_GPT4O,
            PreType::Superbpe => RE_SUPERBPE,
            PreType::Bailingmoe => RE_BAILINGMOE,
            PreType::SeedCoder => RE_SEED_CODER,
            PreType::KimiK2 => RE_KIMI_K2,
            PreType::Afmoe => RE_AFMOE,
            PreType::Youtu => RE_YOUTU,
            PreType::ExaoneMoe => RE_EXAONE_MOE,
            PreType::Qwen35 => RE_QWEN35,
            PreType::TinyAya => RE_TINY_AYA,
            PreType::Jais2 => RE_JAIS2,
            PreType::Gemma4 | PreType::SarvamMoe => RE_GEMMA4,
            PreType::Minicpm5 => RE_MINICPM5,
            PreType::Whitespace => RE_WHITESPACE,
            PreType::GraniteEmbMulti => RE_GRANITE_EMB_MULTI,
            PreType::Laguna => RE_LAGUNA,
            PreType::Spark25 => RE_SPARK2_5,
            PreType::Ufakzeka => RE_UFAKZEKA,
        }
    }

    /// Whether llama.cpp byte-encodes the words (GPT-2's byte-level mapping, `byte_encode`):
    /// false for the pre-tokenizers of SentencePiece-style BPE vocabularies and `whitespace`.
    pub fn byte_encode(self) -> bool {
        !matches!(
            self,
            PreType::Gemma4 | PreType::SarvamMoe | PreType::Whitespace
        )
    }
}

const RE_DEFAULT: &[&str] = &[
    "[\\p{P}\\$\\+<=>\\^~\\|]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "\\p{N}+",
    "[0-9][0-9][0-9]",
];
const RE_LLAMA3: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_DEEPSEEK_LLM: &[&str] = &[
    "[\r\n]",
    "\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
    "\\s?[!-/:-~！-／：-～‘-‟　-。]+",
    "\\s+$",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}+",
];
const RE_DEEPSEEK_CODER: &[&str] = &[
    "[\r\n]",
    "\\s?\\p{L}+",
    "\\s?\\p{P}+",
    "[一-龥ࠀ-一가-퟿]+",
    "\\p{N}",
];
const RE_FALCON: &[&str] = &[
    "[\\p{P}\\$\\+<=>\\^~\\|`]+",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
    "[0-9][0-9][0-9]",
];
const RE_GPT2: &[&str] =
    &["'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"];
const RE_STARCODER: &[&str] = &[
    "\\p{N}",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
];
const RE_STABLELM2: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_PORO: &[&str] = &[" ?[^(\\s|.,!?…。，、।۔،)]+"];
const RE_VIKING: &[&str] = &[" ?[^(\\s|.,!?…。，、।۔،)]+", "\\p{N}"];
const RE_TEKKEN: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_CHAMELEON: &[&str] = &[
    "<sentinel:[0-9]+>",
    "(IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z",
    "([\\t\\n]|    |  )",
    "\\p{N}",
    "[\\p{P}!-/:-@\\[-`{-~]",
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)",
];
const RE_DEEPSEEK3_LLM: &[&str] = &[
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
];
const RE_GPT4O: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))*((?=[\\p{L}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}])([^a-z]))+((?=[\\p{L}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_SUPERBPE: &[&str] = &["\\p{N}+", "(?=(\\d{3})+(?!\\d))"];
const RE_BAILINGMOE: &[&str] = &[
    "'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
];
const RE_SEED_CODER: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1}| ?[^\\s\\p{L}\\p{N}\\r\\n]+|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_KIMI_K2: &[&str] = &["\\p{Han}+"];
const RE_AFMOE: &[&str] = &[
    "\\p{AFMoE_digits}",
    "[一-鿿㐀-䶿豈-﫿぀-ゟ゠-ヿ･-ﾟ⼀-⿟เ-๿຀-໿ក-៿က-႟ꩠ-ꩿꧠ-꧿가-힯ᄀ-ᇿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\\r\\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_YOUTU: &[&str] = &[
    "[가-힣ㄱ-ㆎ]+|[！…“”‘’—：；，、-〿︰-﹏]+|[ㄅ-ㄯ]+|[一-龥぀-ゟ゠-ヿ]+",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_EXAONE_MOE: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?(?:\\p{L}\\p{M}*(?: \\p{L}\\p{M}*)*)+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]?|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
];
const RE_QWEN35: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_TINY_AYA: &[&str] = &[
    "\\d{1,3}(?=(?:\\d{3})*\\b)",
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_JAIS2: &[&str] = &[
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s{512}(?!\\S)|\\s{256}(?!\\S)|\\s{128}(?!\\S)|\\s{64}(?!\\S)|\\s{32}(?!\\S)|\\s{16}(?!\\S)|\\s{8}(?!\\S)|\\s{4}(?!\\S)|\\s{1,2}(?!\\S)|\\s{1}",
];
const RE_GEMMA4: &[&str] = &["[^\\n]+|[\\n]+"];
const RE_MINICPM5: &[&str] = &[
    "\\p{N}{1,3}",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}+| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_WHITESPACE: &[&str] = &["\\S+"];
const RE_GRANITE_EMB_MULTI: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))*((?=[\\p{L}\\p{M}])([^A-Z]))+(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|[^\\r\\n\\p{L}\\p{N}]?((?=[\\p{L}\\p{M}])([^a-z]))+((?=[\\p{L}\\p{M}])([^A-Z]))*(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_LAGUNA: &[&str] = &[
    "[^\\n]+|[\\n]+",
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];
const RE_SPARK2_5: &[&str] = &[
    "\\p{N}{1,3}",
    "[一-龥぀-ゟ゠-ヿ]+",
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+|[\r\n]|\\s+(?!\\S)|\\s+",
    "\\p{N}",
];
const RE_UFAKZEKA: &[&str] = &[
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
];

/// The expression texts llama.cpp replaces by its hand-written splitters.
const CUSTOM_GPT2: &str = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)";
const CUSTOM_LLAMA3: [&str; 2] = [
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
];
const CUSTOM_QWEN2: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const CUSTOM_QWEN35: &str = r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+";
const CUSTOM_KIMI_K2: &str = r"\p{Han}+";
const CUSTOM_AFMOE: [&str; 2] = [r"\p{AFMoE_digits}", r"\d{1,3}(?=(?:\d{3})*\b)"];
const CUSTOM_NEWLINES: &str = r"[^\n]+|[\n]+";

/// One step of a [`Splitter`]: a hand-written splitter or a compiled expression.
#[derive(Debug)]
enum Step {
    Gpt2,
    Llama3,
    Qwen2,
    Qwen35,
    KimiK2,
    Afmoe,
    Newlines,
    Regex(Box<regex::Program>),
}

/// The pre-tokenizer expressions of [`split`], compiled once: build one per vocabulary and split
/// any number of texts with it (it is immutable, so threads may share it).
#[derive(Debug)]
pub struct Splitter {
    steps: Vec<Step>,
}

impl Splitter {
    /// Compiles `regexes` (applied in order, as llama.cpp's `unicode_regex_split` applies its
    /// `regex_exprs`). An error names an expression this matcher does not support (every
    /// expression of every [`PreType`] is supported) and says why.
    pub fn new(regexes: &[&str]) -> Result<Splitter, String> {
        let mut steps = Vec::with_capacity(regexes.len());
        for &re in regexes {
            let step = if re == CUSTOM_GPT2 {
                Step::Gpt2
            } else if CUSTOM_LLAMA3.contains(&re) {
                Step::Llama3
            } else if re == CUSTOM_QWEN2 {
                Step::Qwen2
            } else if re == CUSTOM_QWEN35 {
                Step::Qwen35
            } else if re == CUSTOM_KIMI_K2 {
                Step::KimiK2
            } else if CUSTOM_AFMOE.contains(&re) {
                Step::Afmoe
            } else if re == CUSTOM_NEWLINES {
                Step::Newlines
            } else {
                let program = regex::Program::new(re)
                    .map_err(|e| format!("pre-tokenizer expression {re:?}: {e}"))?;
                Step::Regex(Box::new(program))
            };
            steps.push(step);
        }
        Ok(Splitter { steps })
    }

    /// The words of the code points `cpts`, as lengths in code points (in order, summing to
    /// `cpts.len()`; a length may be 0 where llama.cpp yields an empty word, which happens only
    /// for expressions that can match nothing, such as `superbpe`'s lookahead).
    pub fn split_cpts(&self, cpts: &[u32]) -> Vec<usize> {
        self.split_counting(cpts).0
    }

    /// The number of steps the expression matcher takes to split `cpts` (instructions run and
    /// backtracking frames popped; the hand-written splitters take none): instrumentation, for
    /// tests that the matcher runs in linear time.
    pub fn matcher_steps(&self, cpts: &[u32]) -> u64 {
        self.split_counting(cpts).1
    }

    fn split_counting(&self, cpts: &[u32]) -> (Vec<usize>, u64) {
        let mut matcher_steps = 0;
        let flags: Vec<u16> = cpts.iter().map(|&cp| flag_bits(cp)).collect();
        let mut offsets = vec![cpts.len()];
        let mut collapsed: Option<Vec<u32>> = None;
        let mut wide: Option<Vec<u32>> = None;
        for step in &self.steps {
            let text = Text {
                cpts,
                flags: &flags,
            };
            let next = match step {
                Step::Gpt2 => each_piece(&offsets, |a, b, out| gpt2(&text, a, b, out)),
                Step::Llama3 => each_piece(&offsets, |a, b, out| llama3(&text, a, b, out, 3)),
                Step::Qwen2 => each_piece(&offsets, |a, b, out| llama3(&text, a, b, out, 1)),
                Step::Qwen35 => each_piece(&offsets, |a, b, out| qwen35(&text, a, b, out)),
                Step::KimiK2 => each_piece(&offsets, |a, b, out| kimi_k2(&text, a, b, out)),
                Step::Afmoe => each_piece(&offsets, |a, b, out| afmoe(&text, a, b, out)),
                Step::Newlines => each_piece(&offsets, |a, b, out| newlines(&text, a, b, out)),
                Step::Regex(program) => {
                    let units = if program.collapsed {
                        collapsed.get_or_insert_with(|| collapse(cpts, &flags))
                    } else {
                        wide.get_or_insert_with(|| widen(cpts, &flags))
                    };
                    let mut out = Vec::with_capacity(offsets.len());
                    let mut start = 0;
                    let mut scratch = regex::Scratch::default();
                    for &len in &offsets {
                        program.split_piece(&units[start..start + len], &mut out, &mut scratch);
                        start += len;
                    }
                    matcher_steps += scratch.steps;
                    out
                }
            };
            // When a hand-written splitter yields nothing (every piece empty), llama.cpp runs
            // the expression through `std::regex` instead, which yields nothing either.
            offsets = next;
        }
        (offsets, matcher_steps)
    }

    /// The words of `text` (UTF-8, decoded as llama.cpp decodes it: each invalid byte becomes
    /// U+FFFD), each re-encoded as UTF-8 and, when `byte_encode`, mapped byte by byte to GPT-2's
    /// byte-level characters ([`super::unicode::byte_to_utf8`]), as llama.cpp's
    /// `unicode_regex_split(text, regex_exprs, byte_encode)`.
    ///
    /// llama.cpp throws instead when `text` decodes to a code point above 0x10FFFF (lead bytes
    /// 0xF4 to 0xF7 followed by continuation bytes: it cannot re-encode the word); here such a
    /// code point is re-encoded from its bits, giving back the four bytes it came from. For the
    /// Kimi K2 and AFMoE expressions llama.cpp also throws on empty text; here there are no words.
    pub fn split(&self, text: &[u8], byte_encode: bool) -> Vec<Vec<u8>> {
        let mut words = Vec::new();
        self.for_each_word(text, byte_encode, |w| words.push(w.to_vec()));
        words
    }

    /// The words [`split`](Self::split) gives, each handed to `word` in turn from one buffer
    /// reused between them (no vector of words).
    pub fn for_each_word(&self, text: &[u8], byte_encode: bool, mut word: impl FnMut(&[u8])) {
        let cpts = cpts_from_utf8(text);
        let offsets = self.split_cpts(&cpts);
        let mut start = 0;
        let mut utf8 = Vec::with_capacity(4);
        let mut buf = Vec::new();
        for len in offsets {
            let cps = &cpts[start..start + len];
            start += len;
            buf.clear();
            for &cp in cps {
                if byte_encode {
                    utf8.clear();
                    cpt_to_utf8(cp, &mut utf8);
                    for &b in &utf8 {
                        buf.extend_from_slice(byte_to_utf8_bytes(b));
                    }
                } else {
                    cpt_to_utf8(cp, &mut buf);
                }
            }
            word(&buf);
        }
    }
}

/// The words llama.cpp's `unicode_regex_split(text, regexes, byte_encode)` gives (see
/// [`Splitter::split`]; build a [`Splitter`] once to split many texts).
///
/// # Panics
///
/// When [`Splitter::new`] rejects `regexes` (never for the expressions of a [`PreType`]).
pub fn split(text: &[u8], regexes: &[&str], byte_encode: bool) -> Vec<Vec<u8>> {
    match Splitter::new(regexes) {
        Ok(splitter) => splitter.split(text, byte_encode),
        Err(e) => panic!("{e}"),
    }
}

/// Applies `f(start, end, out)` to each piece `start..end` of the code points, in order.
fn each_piece(offsets: &[usize], mut f: impl FnMut(usize, usize, &mut Vec<usize>)) -> Vec<usize> {
    let mut out = Vec::with_capacity(offsets.len());
    let mut start = 0;
    for &len in offsets {
        f(start, start + len, &mut out);
        start += len;
    }
    out
}

/// The stand-in llama.cpp's `std::regex` path reads when an expression names a category: one
/// byte per code point.
fn collapse(cpts: &[u32], flags: &[u16]) -> Vec<u32> {
    cpts.iter()
        .zip(flags)
        .map(|(&cp, &f)| {
            if cp < 128 {
                cp
            } else if f & Flags::WHITESPACE != 0 {
                0x0B
            } else {
                match f & Flags::MASK_CATEGORIES {
                    Flags::NUMBER => 0xD1,
                    Flags::LETTER => 0xD2,
                    Flags::PUNCTUATION => 0xD3,
                    Flags::ACCENT_MARK => 0xD4,
                    Flags::SYMBOL => 0xD5,
                    _ => 0xD0,
                }
            }
        })
        .collect()
}

/// The code points llama.cpp's `std::wregex` path reads: non-ASCII whitespace becomes 0x0B.
fn widen(cpts: &[u32], flags: &[u16]) -> Vec<u32> {
    cpts.iter()
        .zip(flags)
        .map(|(&cp, &f)| {
            if cp > 0x7F && f & Flags::WHITESPACE != 0 {
                0x0B
            } else {
                cp
            }
        })
        .collect()
}

/// The code points and their flag bits, as the hand-written splitters read them: outside the
/// piece `ini..end` a code point reads as `OUT_OF_RANGE` and its flags as 0.
struct Text<'a> {
    cpts: &'a [u32],
    flags: &'a [u16],
}

const OUT_OF_RANGE: u32 = 0xFFFF_FFFF;
const WS: u16 = Flags::WHITESPACE;
const LETTER: u16 = Flags::LETTER;
const NUMBER: u16 = Flags::NUMBER;
const MARK: u16 = Flags::ACCENT_MARK;

/// Positions within one piece, with llama.cpp's accessors and its `_add_token`.
struct Piece<'a, 'b> {
    text: &'a Text<'a>,
    ini: usize,
    end: usize,
    prev_end: usize,
    out: &'b mut Vec<usize>,
}

impl<'a, 'b> Piece<'a, 'b> {
    /// The piece `ini..end` of `text`, its words' lengths going to `out`.
    #[inline(always)]
    fn new(text: &'a Text<'a>, ini: usize, end: usize, out: &'b mut Vec<usize>) -> Self {
        Piece {
            text,
            ini,
            end,
            prev_end: ini,
            out,
        }
    }

    #[inline]
    fn cpt(&self, pos: usize) -> u32 {
        if self.ini <= pos && pos < self.end {
            self.text.cpts[pos]
        } else {
            OUT_OF_RANGE
        }
    }

    #[inline]
    fn flags(&self, pos: usize) -> u16 {
        if self.ini <= pos && pos < self.end {
            self.text.flags[pos]
        } else {
            0
        }
    }

    /// Ends a word at `end` (none when empty); returns its length.
    #[inline]
    fn add(&mut self, end: usize) -> usize {
        let len = end - self.prev_end;
        if len > 0 {
            self.out.push(len);
        }
        self.prev_end = end;
        len
    }

    /// `'s|'t|'re|'ve|'m|'ll|'d` at `pos` (lowercasing the letters when `fold`): the length.
    #[inline]
    fn contraction(&self, pos: usize, fold: bool) -> usize {
        let low = |cp: u32| if fold { to_lower(cp) } else { cp };
        if self.cpt(pos) != u32::from(b'\'') || pos + 1 >= self.end {
            return 0;
        }
        let next = low(self.cpt(pos + 1));
        if [b's', b't', b'm', b'd']
            .iter()
            .any(|&c| next == u32::from(c))
        {
            return 2;
        }
        if pos + 2 < self.end {
            let next2 = low(self.cpt(pos + 2));
            let pair = |a: u8, b: u8| next == u32::from(a) && next2 == u32::from(b);
            if pair(b'r', b'e') || pair(b'v', b'e') || pair(b'l', b'l') {
                return 3;
            }
        }
        0
    }

    /// The whitespace run at `pos`: its length and the end of its last `\r` or `\n` (0: none).
    #[inline]
    fn whitespace_run(&self, pos: usize) -> (usize, usize) {
        let mut n = 0;
        let mut last_rn = 0;
        while self.flags(pos + n) & WS != 0 {
            let cp = self.cpt(pos + n);
            if cp == u32::from(b'\r') || cp == u32::from(b'\n') {
                last_rn = pos + n + 1;
            }
            n += 1;
        }
        (n, last_rn)
    }

    /// The end of the run of code points from `pos` whose flags have a bit of `mask`.
    #[inline(always)]
    fn run(&self, mut pos: usize, mask: u16) -> usize {
        while self.flags(pos) & mask != 0 {
            pos += 1;
        }
        pos
    }

    /// `\p{N}{1,max}` at `pos`, as often as it matches: each word of up to `max` digits ended;
    /// returns the end of the digits.
    #[inline(always)]
    fn digits(&mut self, mut pos: usize, max: usize) -> usize {
        let mut first = pos;
        while self.flags(pos) & NUMBER != 0 {
            pos += 1;
            if pos - first >= max {
                self.add(pos);
                first = pos;
            }
        }
        self.add(pos);
        pos
    }

    /// The end of the last branches of llama.cpp's splitters at `pos`, where a whitespace run of
    /// `nws` code points starts: `\s+(?!\S)`, `\s+`, else one code point.
    #[inline(always)]
    fn space_end(&self, pos: usize, nws: usize) -> usize {
        if nws > 1 && self.cpt(pos + nws) != OUT_OF_RANGE {
            pos + nws - 1
        } else if nws > 0 {
            pos + nws
        } else {
            pos + 1
        }
    }
}

fn is_rn(cp: u32) -> bool {
    cp == u32::from(b'\r') || cp == u32::from(b'\n')
}

const SPACE: u32 = b' ' as u32;

/// llama.cpp's `unicode_regex_split_custom_gpt2` on the piece `ini..end`.
fn gpt2(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        // 's|'t|'re|'ve|'m|'ll|'d
        let n = p.contraction(pos, false);
        if n > 0 {
            pos += p.add(pos + n);
            continue;
        }
        let space = usize::from(cpt == SPACE);
        let mut f2 = if cpt == SPACE {
            p.flags(pos + 1)
        } else {
            flags
        };
        // <space>?\p{L}+, <space>?\p{N}+
        if let Some(class) = [LETTER, NUMBER].into_iter().find(|&c| f2 & c != 0) {
            pos = p.run(pos + space, class);
            p.add(pos);
            continue;
        }
        // <space>?[^\s\p{L}\p{N}]+
        if f2 & (WS | LETTER | NUMBER) == 0 && f2 != 0 {
            pos += space;
            while f2 & (WS | LETTER | NUMBER) == 0 && f2 != 0 {
                pos += 1;
                f2 = p.flags(pos);
            }
            p.add(pos);
            continue;
        }
        let (nws, _) = p.whitespace_run(pos);
        pos = p.space_end(pos, nws);
        p.add(pos);
    }
}

/// The end of the common tail of llama.cpp's Llama 3 family splitters at `pos` (after the
/// letter and number branches): ` ?[^\s\p{L}\p{N}]+[\r\n]*` (with `\p{M}` also excluded when
/// `marks`), `\s*[\r\n]+`, `\s+(?!\S)`, `\s+`, else one code point.
#[inline]
fn llama3_tail(p: &Piece, pos: usize, cpt: u32, flags: u16, marks: bool, kimi: bool) -> usize {
    let word = if marks {
        LETTER | NUMBER | MARK
    } else {
        LETTER | NUMBER
    };
    let mut pos = pos;
    let mut f2 = if cpt == SPACE {
        p.flags(pos + 1)
    } else {
        flags
    };
    // llama.cpp's Llama 3, Qwen 2 and Qwen 3.5 splitters test the first code point's own flags
    // for being nonzero here; its Kimi K2 splitter tests f2.
    if f2 & (WS | word) == 0 && (if kimi { f2 } else { flags }) != 0 {
        pos += usize::from(cpt == SPACE);
        while f2 & (WS | word) == 0 && f2 != 0 {
            pos += 1;
            f2 = p.flags(pos);
        }
        while is_rn(p.cpt(pos)) {
            pos += 1;
        }
        return pos;
    }
    let (nws, last_rn) = p.whitespace_run(pos);
    if last_rn > 0 {
        return last_rn;
    }
    p.space_end(pos, nws)
}

/// llama.cpp's `unicode_regex_split_custom_llama3` (`max_digits` 3) and
/// `unicode_regex_split_custom_qwen2` (`max_digits` 1) on the piece `ini..end`.
fn llama3(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>, max_digits: usize) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        // (?i:'s|'t|'re|'ve|'m|'ll|'d)
        let n = p.contraction(pos, true);
        if n > 0 {
            pos += p.add(pos + n);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?\p{L}+
        if !(is_rn(cpt) || flags & NUMBER != 0)
            && (flags & LETTER != 0 || p.flags(pos + 1) & LETTER != 0)
        {
            pos = p.run(pos + 1, LETTER);
            p.add(pos);
            continue;
        }
        // \p{N}{1,3} or \p{N}
        if flags & NUMBER != 0 {
            pos = p.digits(pos, max_digits);
            continue;
        }
        pos = llama3_tail(&p, pos, cpt, flags, false, false);
        p.add(pos);
    }
}

/// llama.cpp's `unicode_regex_split_custom_qwen35` on the piece `ini..end`.
fn qwen35(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        let n = p.contraction(pos, true);
        if n > 0 {
            pos += p.add(pos + n);
            continue;
        }
        // [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+
        if !(is_rn(cpt) || flags & NUMBER != 0)
            && (flags & (LETTER | MARK) != 0 || p.flags(pos + 1) & (LETTER | MARK) != 0)
        {
            pos = p.run(pos + 1, LETTER | MARK);
            p.add(pos);
            continue;
        }
        // \p{N}
        if flags & NUMBER != 0 {
            pos += 1;
            p.add(pos);
            continue;
        }
        pos = llama3_tail(&p, pos, cpt, flags, true, false);
        p.add(pos);
    }
}

/// llama.cpp's `unicode_regex_split_custom_kimi_k2` on the piece `ini..end`.
fn kimi_k2(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    let letter = |p: &Piece, pos: usize| p.flags(pos) & LETTER != 0 && !is_han(p.cpt(pos));
    while pos < end {
        let cpt = p.cpt(pos);
        let flags = p.flags(pos);
        // [\p{Han}]+
        if is_han(cpt) {
            while is_han(p.cpt(pos)) {
                pos += 1;
            }
            p.add(pos);
            continue;
        }
        // Letter words without Han, with an optional leading code point and contraction.
        let leading = !(is_rn(cpt) || flags & (LETTER | NUMBER) != 0);
        if (flags & LETTER != 0 && !is_han(cpt)) || (leading && letter(&p, pos + 1)) {
            if leading {
                pos += 1;
            }
            let mut has_letters = false;
            while letter(&p, pos) {
                has_letters = true;
                pos += 1;
            }
            if has_letters || (!leading && letter(&p, pos)) {
                if !has_letters {
                    pos += 1;
                }
                while letter(&p, pos) {
                    pos += 1;
                }
                pos += p.contraction(pos, true);
                p.add(pos);
                continue;
            } else if leading {
                pos -= 1;
            }
        }
        // \p{N}{1,3}
        if flags & NUMBER != 0 {
            pos = p.digits(pos, 3);
            continue;
        }
        pos = llama3_tail(&p, pos, cpt, flags, false, true);
        p.add(pos);
    }
}

/// llama.cpp's `unicode_regex_split_custom_afmoe` on the piece `ini..end`: each digit run
/// split into groups of three from its end (the first group of 1 or 2), everything else
/// kept together between them.
fn afmoe(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut p = Piece::new(text, ini, end, out);
    let mut pos = ini;
    while pos < end {
        if p.flags(pos) & NUMBER != 0 {
            let first = pos;
            while pos < end && p.flags(pos) & NUMBER != 0 {
                pos += 1;
            }
            let count = pos - first;
            let mut current = first;
            if count % 3 > 0 {
                current += count % 3;
                p.add(current);
            }
            while current < first + count {
                current += 3;
                p.add(current);
            }
            continue;
        }
        pos += 1;
    }
    if p.prev_end < end {
        p.add(end);
    }
}

/// llama.cpp's `unicode_regex_split_custom_newlines` on the piece `ini..end`: runs of `\n` and
/// runs of anything else.
fn newlines(text: &Text, ini: usize, end: usize, out: &mut Vec<usize>) {
    let mut pos = ini;
    while pos < end {
        let nl = text.cpts[pos] == u32::from(b'\n');
        let first = pos;
        while pos < end && (text.cpts[pos] == u32::from(b'\n')) == nl {
            pos += 1;
        }
        out.push(pos - first);
    }
}

/// The `std::regex` path of llama.cpp's splitter: the expression transformed as llama.cpp
/// transforms it, parsed as libstdc++ parses ECMAScript, and matched with its semantics.
mod regex {
    use super::cpts_from_utf8;

    /// llama.cpp's category names and the stand-in byte each becomes, with its ASCII members
    /// (`k_ucat_enum`, `k_ucat_cpt`, `k_ucat_map`).
    const CATEGORIES: [(&str, u8, &str); 10] = [
        (r"\p{N}", 0xD1, "0-9"),
        (r"\p{L}", 0xD2, "A-Za-z"),
        (r"\p{P}", 0xD3, r"!-#%-*,-/:-;?-@\[-\]_\{\}"),
        (r"\p{M}", 0xD4, ""),
        (r"\p{S}", 0xD5, r"\$\+<->^`\|\~"),
        (r"\p{Lu}", 0xD2, "A-Za-z"),
        (r"\p{Ll}", 0xD2, "A-Za-z"),
        (r"\p{Lt}", 0xD2, "A-Za-z"),
        (r"\p{Lm}", 0xD2, "A-Za-z"),
        (r"\p{Lo}", 0xD2, "A-Za-z"),
    ];

    /// llama.cpp's rewriting of an expression that names categories into one over the
    /// stand-in bytes (the loop in `unicode_regex_split`, with its way of tracking brackets).
    fn collapse_regex(re: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(re.len() * 2);
        let mut inside = false;
        let mut i = 0;
        while i < re.len() {
            if re[i] == b'[' && (i == 0 || re[i - 1] != b'\\') {
                out.push(b'[');
                inside = true;
                i += 1;
                continue;
            }
            if inside && re[i] == b']' && re[i - 1] != b'\\' {
                out.push(b']');
                inside = false;
                i += 1;
                continue;
            }
            if re[i] == b'\\' && i + 3 < re.len() && re[i + 1] == b'p' && re[i + 2] == b'{' {
                if let Some(close) = re[i + 3..]
                    .iter()
                    .position(|&b| b == b'}')
                    .map(|c| c + i + 3)
                {
                    if close <= i + 10 {
                        let name = &re[i..=close];
                        if let Some(&(_, byte, members)) =
                            CATEGORIES.iter().find(|(n, _, _)| n.as_bytes() == name)
                        {
                            if !inside {
                                out.push(b'[');
                            }
                            out.push(byte);
                            out.extend_from_slice(members.as_bytes());
                            if !inside {
                                out.push(b']');
                            }
                            i = close + 1;
                            continue;
                        }
                    }
                }
            }
            out.push(re[i]);
            i += 1;
        }
        out
    }

    /// A set of units: a bitmap below 256, ranges above, maybe negated.
    #[derive(Debug, Clone, Default)]
    struct Class {
        low: [u64; 4],
        high: Vec<(u32, u32)>,
        negated: bool,
        /// A class a unit must also be in (`(?=[a])[b]` becomes `b` and `a`).
        and: Option<Box<Class>>,
    }

    impl Class {
        fn add_range(&mut self, lo: u32, hi: u32) {
            for u in lo..=hi.min(255) {
                self.low[(u >> 6) as usize] |= 1 << (u & 63);
            }
            if hi >= 256 {
                self.high.push((lo.max(256), hi));
            }
        }

        fn add_escape(&mut self, kind: u8) {
            // The C locale's classes: ASCII only.
            let set = |u: u32| match kind.to_ascii_lowercase() {
                b'd' => (0x30..=0x39).contains(&u),
                b's' => (0x09..=0x0D).contains(&u) || u == 0x20,
                _ => is_word(u),
            };
            let negated = kind.is_ascii_uppercase();
            for u in 0..256u32 {
                if set(u) != negated {
                    self.low[(u >> 6) as usize] |= 1 << (u & 63);
                }
            }
            if negated {
                self.high.push((256, u32::MAX));
            }
        }

        fn single(u: u32) -> Class {
            let mut c = Class::default();
            c.add_range(u, u);
            c
        }

        #[inline]
        fn matches(&self, u: u32) -> bool {
            let inside = if u < 256 {
                self.low[(u >> 6) as usize] >> (u & 63) & 1 != 0
            } else {
                self.high.iter().any(|&(a, b)| a <= u && u <= b)
            };
            inside != self.negated && self.and.as_ref().is_none_or(|a| a.matches(u))
        }
    }

    #[derive(Debug, Clone)]
    enum Node {
        Unit(u32),
        Class(Class),
        Any,
        Bol,
        Eol,
        WordBoundary(bool),
        Look(bool, Box<Node>),
        Concat(Vec<Node>),
        Alt(Vec<Node>),
        Repeat {
            node: Box<Node>,
            min: u32,
            max: Option<u32>,
            greedy: bool,
        },
    }

    impl Node {
        fn can_be_empty(&self) -> bool {
            match self {
                Node::Unit(_) | Node::Class(_) | Node::Any => false,
                Node::Bol | Node::Eol | Node::WordBoundary(_) | Node::Look(..) => true,
                Node::Concat(v) => v.iter().all(Node::can_be_empty),
                Node::Alt(v) => v.iter().any(Node::can_be_empty),
                Node::Repeat { node, min, .. } => *min == 0 || node.can_be_empty(),
            }
        }

        /// The class of a node that matches exactly one unit, `(?=[a])[b]` included.
        fn one_class(&self) -> Option<Class> {
            if let Node::Concat(items) = self {
                if let [Node::Look(false, look), next] = &items[..] {
                    let (a, mut b) = (look.as_class()?, next.as_class()?);
                    b.and = Some(Box::new(a));
                    return Some(b);
                }
            }
            self.as_class()
        }

        /// The class of a node that matches exactly one unit.
        fn as_class(&self) -> Option<Class> {
            match self {
                Node::Unit(u) => Some(Class::single(*u)),
                Node::Class(c) => Some(c.clone()),
                Node::Any => {
                    let mut c = Class::single(u32::from(b'\n'));
                    c.add_range(u32::from(b'\r'), u32::from(b'\r'));
                    c.negated = true;
                    Some(c)
                }
                _ => None,
            }
        }
    }

    /// A parser of libstdc++'s ECMAScript grammar (the part llama.cpp's expressions use:
    /// alternation, groups, lookaheads, classes, escapes, greedy and lazy quantifiers).
    struct Parser<'a> {
        re: &'a [u32],
        at: usize,
    }

    const MAX_REPEAT: u32 = 1000;

    impl Parser<'_> {
        fn peek(&self) -> Option<u32> {
            self.re.get(self.at).copied()
        }

        fn peek_is(&self, c: u8) -> bool {
            self.peek() == Some(u32::from(c))
        }

        fn next(&mut self) -> Result<u32, String> {
            let c = self.peek().ok_or("unexpected end")?;
            self.at += 1;
            Ok(c)
        }

        fn eat(&mut self, c: u8) -> bool {
            if self.peek_is(c) {
                self.at += 1;
                true
            } else {
                false
            }
        }

        fn alternation(&mut self) -> Result<Node, String> {
            let mut alts = vec![self.concat()?];
            while self.eat(b'|') {
                alts.push(self.concat()?);
            }
            Ok(if alts.len() == 1 {
                alts.pop().unwrap_or(Node::Concat(Vec::new()))
            } else {
                Node::Alt(alts)
            })
        }

        fn concat(&mut self) -> Result<Node, String> {
            let mut items = Vec::new();
            while let Some(c) = self.peek() {
                if c == u32::from(b'|') || c == u32::from(b')') {
                    break;
                }
                items.push(self.term()?);
            }
            Ok(if items.len() == 1 {
                items.pop().unwrap_or(Node::Concat(Vec::new()))
            } else {
                Node::Concat(items)
            })
        }

        fn number(&mut self) -> Option<u32> {
            let start = self.at;
            let mut n: u32 = 0;
            while let Some(d) = self.peek().filter(|c| (0x30..=0x39).contains(c)) {
                n = n.saturating_mul(10).saturating_add(d - 0x30);
                self.at += 1;
            }
            (self.at > start).then_some(n)
        }

        fn term(&mut self) -> Result<Node, String> {
            let c = self.next()?;
            let atom = match u8::try_from(c).unwrap_or(0) {
                b'^' => return Ok(Node::Bol),
                b'$' => return Ok(Node::Eol),
                b'(' => {
                    let look = if self.eat(b'?') {
                        match self.next()? {
                            0x3A => None,
                            0x3D => Some(false),
                            0x21 => Some(true),
                            other => {
                                return Err(format!(
                                    "unsupported group (?{}",
                                    char::from_u32(other).unwrap_or('?')
                                ))
                            }
                        }
                    } else {
                        None
                    };
                    let inner = self.alternation()?;
                    if !self.eat(b')') {
                        return Err("missing )".into());
                    }
                    if let Some(neg) = look {
                        return Ok(Node::Look(neg, Box::new(inner)));
                    }
                    inner
                }
                b'[' => Node::Class(self.bracket()?),
                b'.' => Node::Any,
                b'\\' => match self.escape(false)? {
                    Atom::Unit(u) => Node::Unit(u),
                    Atom::Class(c) => Node::Class(c),
                    Atom::WordBoundary(b) => return Ok(Node::WordBoundary(b)),
                },
                b'*' | b'+' | b'?' | b'{' => return Err("nothing to repeat".into()),
                _ => Node::Unit(c),
            };
            self.quantified(atom)
        }

        fn quantified(&mut self, mut atom: Node) -> Result<Node, String> {
            loop {
                let (min, max) = if self.eat(b'*') {
                    (0, None)
                } else if self.eat(b'+') {
                    (1, None)
                } else if self.eat(b'?') {
                    (0, Some(1))
                } else if self.eat(b'{') {
                    let min = self.number().ok_or("bad {")?;
                    let max = if self.eat(b',') {
                        self.number()
                    } else {
                        Some(min)
                    };
                    if !self.eat(b'}')
                        || max.is_some_and(|m| m < min)
                        || min > MAX_REPEAT
                        || max.is_some_and(|m| m > MAX_REPEAT)
                    {
                        return Err("bad {n,m}".into());
                    }
                    (min, max)
                } else {
                    return Ok(atom);
                };
                let greedy = !self.eat(b'?');
                if max.is_none() && atom.can_be_empty() {
                    return Err("unbounded repetition of what can match nothing".into());
                }
                atom = Node::Repeat {
                    node: Box::new(atom),
                    min,
                    max,
                    greedy,
                };
            }
        }

        fn hex(&mut self, digits: usize) -> Result<u32, String> {
            let mut v = 0;
            for _ in 0..digits {
                let d = char::from_u32(self.next()?)
                    .and_then(|c| c.to_digit(16))
                    .ok_or("bad hex escape")?;
                v = v * 16 + d;
            }
            Ok(v)
        }

        /// An escape (after the backslash), outside or inside brackets.
        fn escape(&mut self, in_bracket: bool) -> Result<Atom, String> {
            let c = self.next()?;
            let Ok(b) = u8::try_from(c) else {
                return Ok(Atom::Unit(c));
            };
            Ok(match b {
                b'b' if !in_bracket => Atom::WordBoundary(true),
                b'B' if !in_bracket => Atom::WordBoundary(false),
                b'b' => Atom::Unit(8),
                b'd' | b'D' | b's' | b'S' | b'w' | b'W' => {
                    let mut class = Class::default();
                    class.add_escape(b);
                    Atom::Class(class)
                }
                b'0' => Atom::Unit(0),
                b'f' => Atom::Unit(0x0C),
                b'n' => Atom::Unit(0x0A),
                b'r' => Atom::Unit(0x0D),
                b't' => Atom::Unit(0x09),
                b'v' => Atom::Unit(0x0B),
                b'x' => Atom::Unit(self.hex(2)?),
                b'u' => Atom::Unit(self.hex(4)?),
                b'c' => Atom::Unit(self.next()? % 32),
                b'1'..=b'9' => return Err("back-references are not supported".into()),
                _ => Atom::Unit(c),
            })
        }

        fn bracket(&mut self) -> Result<Class, String> {
            let mut class = Class {
                negated: self.eat(b'^'),
                ..Class::default()
            };
            loop {
                let c = self.next().map_err(|_| "missing ]")?;
                if c == u32::from(b']') {
                    return Ok(class);
                }
                let lo = if c == u32::from(b'\\') {
                    match self.escape(true)? {
                        Atom::Unit(u) => u,
                        Atom::Class(k) => {
                            for i in 0..4 {
                                class.low[i] |= k.low[i];
                            }
                            class.high.extend(k.high);
                            continue;
                        }
                        Atom::WordBoundary(_) => return Err("\\b in brackets".into()),
                    }
                } else {
                    c
                };
                if self.peek_is(b'-')
                    && self
                        .re
                        .get(self.at + 1)
                        .is_some_and(|&n| n != u32::from(b']'))
                {
                    self.at += 1;
                    let c2 = self.next()?;
                    let hi = if c2 == u32::from(b'\\') {
                        match self.escape(true)? {
                            Atom::Unit(u) => u,
                            _ => return Err("class in a range".into()),
                        }
                    } else {
                        c2
                    };
                    if hi < lo {
                        return Err("range out of order".into());
                    }
                    class.add_range(lo, hi);
                } else {
                    class.add_range(lo, lo);
                }
            }
        }
    }

    enum Atom {
        Unit(u32),
        Class(Class),
        WordBoundary(bool),
    }

    #[derive(Debug, Clone, Copy)]
    enum Inst {
        Unit(u32),
        Class(u32),
        /// Try `first`, then `second`; `memo` numbers the (state, position) failure bit.
        Split {
            first: u32,
            second: u32,
            memo: u32,
        },
        Jmp(u32),
        Bol,
        Eol,
        WordBoundary(bool),
        /// `(?=c)` / `(?!c)` for a one-unit class.
        LookClass {
            negated: bool,
            class: u32,
        },
        /// A lookahead whose sub-program starts at `start`, ends with `LookEnd`.
        Look {
            negated: bool,
            start: u32,
            id: u32,
        },
        /// Greedy `class*`: a loop whose every iteration has its own failure bit, as a
        /// `Split` loop, but one frame for all its iterations.
        Star {
            class: u32,
            memo: u32,
        },
        /// Greedy `class{min,max}`.
        Run {
            class: u32,
            min: u32,
            max: u32,
            memo: u32,
        },
        Match,
        LookEnd,
    }

    /// A compiled expression.
    #[derive(Debug)]
    pub(in super::super) struct Program {
        /// Whether it reads the category stand-in of the text (else the code points).
        pub(in super::super) collapsed: bool,
        insts: Vec<Inst>,
        classes: Vec<Class>,
        n_memo: usize,
        /// The number of lookaheads with sub-programs.
        n_looks: usize,
        /// The failure bits numbered from here on belong to lookahead bodies.
        look_memo: u32,
        /// Whether it has `^` or `\b` / `\B`.
        anchors: bool,
    }

    struct Compiler {
        insts: Vec<Inst>,
        classes: Vec<Class>,
        n_memo: u32,
        looks: Vec<(usize, Node)>,
    }

    impl Compiler {
        fn here(&self) -> u32 {
            // Programs are far smaller than 4G instructions (repeats are capped).
            u32::try_from(self.insts.len()).unwrap_or(u32::MAX)
        }

        fn class(&mut self, c: Class) -> u32 {
            self.classes.push(c);
            u32::try_from(self.classes.len() - 1).unwrap_or(u32::MAX)
        }

        fn memo(&mut self) -> u32 {
            self.n_memo += 1;
            self.n_memo - 1
        }

        fn emit(&mut self, node: &Node) {
            match node {
                Node::Unit(u) => self.insts.push(Inst::Unit(*u)),
                Node::Class(_) | Node::Any => {
                    let c = node.as_class().unwrap_or_default();
                    let id = self.class(c);
                    self.insts.push(Inst::Class(id));
                }
                Node::Bol => self.insts.push(Inst::Bol),
                Node::Eol => self.insts.push(Inst::Eol),
                Node::WordBoundary(b) => self.insts.push(Inst::WordBoundary(*b)),
                Node::Look(negated, inner) => {
                    if let Some(c) = inner.as_class() {
                        let class = self.class(c);
                        self.insts.push(Inst::LookClass {
                            negated: *negated,
                            class,
                        });
                    } else {
                        let id = u32::try_from(self.looks.len()).unwrap_or(u32::MAX);
                        self.looks.push((self.insts.len(), (**inner).clone()));
                        self.insts.push(Inst::Look {
                            negated: *negated,
                            start: 0,
                            id,
                        });
                    }
                }
                Node::Concat(items) => {
                    let mut i = 0;
                    while i < items.len() {
                        // `(?=[a])[b]`: one class, `b` and `a`.
                        if let (Node::Look(false, look), Some(next)) = (&items[i], items.get(i + 1))
                        {
                            if let (Some(a), Some(mut b)) = (look.as_class(), next.as_class()) {
                                b.and = Some(Box::new(a));
                                let id = self.class(b);
                                self.insts.push(Inst::Class(id));
                                i += 2;
                                continue;
                            }
                        }
                        self.emit(&items[i]);
                        i += 1;
                    }
                }
                Node::Alt(alts) => {
                    let mut jumps = Vec::new();
                    for (i, alt) in alts.iter().enumerate() {
                        if i + 1 < alts.len() {
                            let split = self.insts.len();
                            let memo = self.memo();
                            self.insts.push(Inst::Split {
                                first: self.here() + 1,
                                second: 0,
                                memo,
                            });
                            self.emit(alt);
                            jumps.push(self.insts.len());
                            self.insts.push(Inst::Jmp(0));
                            let here = self.here();
                            if let Inst::Split { second, .. } = &mut self.insts[split] {
                                *second = here;
                            }
                        } else {
                            self.emit(alt);
                        }
                    }
                    let end = self.here();
                    for j in jumps {
                        self.insts[j] = Inst::Jmp(end);
                    }
                }
                Node::Repeat {
                    node,
                    min,
                    max,
                    greedy,
                } => {
                    if let (Some(class), Some(max), true) = (node.as_class(), max, greedy) {
                        if *max > 4 {
                            let class = self.class(class);
                            let memo = self.memo();
                            self.insts.push(Inst::Run {
                                class,
                                min: *min,
                                max: *max,
                                memo,
                            });
                            return;
                        }
                    }
                    for _ in 0..*min {
                        self.emit(node);
                    }
                    if let (Some(class), None, true) = (node.one_class(), max, greedy) {
                        let class = self.class(class);
                        let memo = self.memo();
                        self.insts.push(Inst::Star { class, memo });
                        return;
                    }
                    let split = |c: &mut Compiler, body: u32, exit: u32| {
                        let memo = c.memo();
                        let (first, second) = if *greedy { (body, exit) } else { (exit, body) };
                        Inst::Split {
                            first,
                            second,
                            memo,
                        }
                    };
                    match max {
                        None => {
                            let head = self.insts.len();
                            self.insts.push(Inst::Jmp(0));
                            self.emit(node);
                            self.insts.push(Inst::Jmp(u32::try_from(head).unwrap_or(0)));
                            let (body, exit) = (u32::try_from(head + 1).unwrap_or(0), self.here());
                            self.insts[head] = split(self, body, exit);
                        }
                        Some(max) => {
                            let mut heads = Vec::new();
                            for _ in *min..*max {
                                heads.push(self.insts.len());
                                self.insts.push(Inst::Jmp(0));
                                self.emit(node);
                            }
                            let exit = self.here();
                            for head in heads {
                                let body = u32::try_from(head + 1).unwrap_or(0);
                                self.insts[head] = split(self, body, exit);
                            }
                        }
                    }
                }
            }
        }
    }

    impl Program {
        /// Compiles `re` as llama.cpp runs it: over the category stand-in when it names a
        /// category (then it must be ASCII, as llama.cpp demands), else over code points.
        pub(in super::super) fn new(re: &str) -> Result<Program, String> {
            let collapsed = CATEGORIES.iter().any(|(name, _, _)| re.contains(name));
            let units: Vec<u32> = if collapsed {
                if !re.is_ascii() {
                    return Err(
                        "names a category and has non-ASCII characters (llama.cpp rejects it)"
                            .into(),
                    );
                }
                collapse_regex(re.as_bytes())
                    .into_iter()
                    .map(u32::from)
                    .collect()
            } else {
                cpts_from_utf8(re.as_bytes())
            };
            let mut parser = Parser { re: &units, at: 0 };
            let node = parser.alternation()?;
            if parser.at != units.len() {
                return Err("unbalanced )".into());
            }
            let mut c = Compiler {
                insts: Vec::new(),
                classes: Vec::new(),
                n_memo: 0,
                looks: Vec::new(),
            };
            c.emit(&node);
            c.insts.push(Inst::Match);
            let look_memo = c.n_memo;
            let mut i = 0;
            while i < c.looks.len() {
                let (at, inner) = c.looks[i].clone();
                let start = c.here();
                c.emit(&inner);
                c.insts.push(Inst::LookEnd);
                if let Inst::Look { start: s, .. } = &mut c.insts[at] {
                    *s = start;
                }
                i += 1;
            }
            let anchors = c
                .insts
                .iter()
                .any(|i| matches!(i, Inst::Bol | Inst::WordBoundary(_)));
            Ok(Program {
                collapsed,
                insts: c.insts,
                classes: c.classes,
                n_memo: c.n_memo as usize,
                n_looks: c.looks.len(),
                look_memo,
                anchors,
            })
        }

        /// Splits one piece (its units) as llama.cpp's `unicode_regex_split_stl`: the text
        /// before each match, each match (empty ones too), the text after the last; as lengths.
        pub(in super::super) fn split_piece(
            &self,
            units: &[u32],
            out: &mut Vec<usize>,
            scratch: &mut Scratch,
        ) {
            let mut exec = Exec::new(self, units, scratch);
            let mut last = 0;
            let mut emit = |s: usize, e: usize, out: &mut Vec<usize>| {
                if s > last {
                    out.push(s - last);
                }
                out.push(e - s);
                last = e;
            };
            // libstdc++'s regex_iterator: after an empty match, an anchored non-empty match at
            // the same place, else a search from the next unit; `match_prev_avail` from the
            // second search on.
            let mut prev_avail = false;
            let mut found = exec.search(0, false);
            while let Some((s, e)) = found {
                emit(s, e, out);
                let mut start = e;
                if s == e {
                    if start == units.len() {
                        break;
                    }
                    if let Some(e2) = exec.retry(start, prev_avail) {
                        found = Some((start, e2));
                        continue;
                    }
                    start += 1;
                }
                prev_avail = true;
                found = exec.search(start, true);
            }
            if last < units.len() {
                out.push(units.len() - last);
            }
            exec.give_back(scratch);
        }
    }

    /// Buffers a [`Program`] reuses from piece to piece.
    #[derive(Default)]
    pub(in super::super) struct Scratch {
        failed: Vec<u64>,
        found: Vec<u64>,
        looks: Vec<u8>,
        stack: Vec<Frame>,
        /// The steps taken so far (see `Splitter::matcher_steps`).
        pub(in super::super) steps: u64,
        /// Remember nothing, as where the bits would not fit (for tests).
        forget: bool,
    }

    enum Frame {
        Try {
            pc: u32,
            pos: usize,
        },
        Fail {
            memo: u32,
            pos: usize,
        },
        /// The exits of a `Star` at `lo..=hi` still to try after the one at `hi` (being tried).
        Star {
            exit: u32,
            memo: u32,
            lo: usize,
            hi: usize,
        },
        Run {
            pc: u32,
            pos: usize,
            k: usize,
            min: usize,
        },
    }

    /// Matching state for one piece: the failed (state, position) bits and the lookahead
    /// results, valid across the searches of the piece (no captures, and assertions that look
    /// behind the search start are decided the same way whenever a position is revisited).
    struct Exec<'a> {
        prog: &'a Program,
        units: &'a [u32],
        failed: Vec<u64>,
        /// For the states of lookahead bodies, which only ask whether a match exists: the
        /// (state, position) pairs from which one was found.
        found: Vec<u64>,
        /// Per lookahead and position: 0 not known yet, 1 no match, 2 a match.
        looks: Vec<u8>,
        stack: Vec<Frame>,
        /// Whether `failed` and `found` have their bits (see `Exec::new`).
        remember: bool,
        /// Whether `looks` has its bytes.
        remember_looks: bool,
        steps: u64,
        retrying: bool,
        begin: usize,
        prev_avail: bool,
        not_null: bool,
    }

    fn is_word(u: u32) -> bool {
        matches!(u, 0x30..=0x39 | 0x41..=0x5A | 0x61..=0x7A | 0x5F)
    }

    impl<'a> Exec<'a> {
        fn new(prog: &'a Program, units: &'a [u32], scratch: &mut Scratch) -> Exec<'a> {
            // One bit per (state, position) and one byte per (lookahead, position). Where a
            // count does not fit in usize (a piece of hundreds of millions of code points on a
            // 32-bit target), nothing is remembered: the same words, without the linear bound.
            let cells = |per: usize| units.len().checked_add(1).and_then(|n| n.checked_mul(per));
            let memo_cells = cells(prog.n_memo);
            let look_cells = cells(prog.n_looks);
            let words = memo_cells.map_or(1, |c| c.div_ceil(64).max(1));
            let reset = |v: &mut Vec<u64>, len: usize| {
                let mut v = std::mem::take(v);
                v.clear();
                v.resize(len, 0);
                v
            };
            let has_looks = (prog.look_memo as usize) < prog.n_memo;
            let mut looks = std::mem::take(&mut scratch.looks);
            looks.clear();
            looks.resize(look_cells.unwrap_or(0), 0);
            Exec {
                prog,
                units,
                failed: reset(&mut scratch.failed, words),
                found: reset(&mut scratch.found, if has_looks { words } else { 0 }),
                looks,
                stack: std::mem::take(&mut scratch.stack),
                remember: memo_cells.is_some() && !scratch.forget,
                remember_looks: look_cells.is_some() && !scratch.forget,
                steps: 0,
                retrying: false,
                begin: 0,
                prev_avail: false,
                not_null: false,
            }
        }

        /// Returns the buffers for the next piece.
        fn give_back(self, scratch: &mut Scratch) {
            scratch.failed = self.failed;
            scratch.found = self.found;
            scratch.looks = self.looks;
            scratch.stack = self.stack;
            scratch.steps += self.steps;
        }

        #[inline]
        fn bit(&self, memo: u32, pos: usize) -> (usize, u64) {
            // Position-major: the bits a position's states use lie together.
            if !self.remember {
                return (0, 0);
            }
            let i = pos * self.prog.n_memo + memo as usize;
            (i >> 6, 1 << (i & 63))
        }

        /// regex_search from `begin`: the first position with a match, and its end.
        fn search(&mut self, begin: usize, prev_avail: bool) -> Option<(usize, usize)> {
            self.begin = begin;
            self.prev_avail = prev_avail;
            self.not_null = false;
            for start in begin..=self.units.len() {
                // libstdc++ tries each later start with `match_prev_avail` set.
                self.begin = start;
                self.prev_avail = prev_avail || start > begin;
                if let Some(end) = self.run(0, start) {
                    return Some((start, end));
                }
            }
            None
        }

        /// regex_search at `start` alone, for a non-empty match (`match_not_null |
        /// match_continuous`). Its failures are not recorded (an empty match at `start` fails
        /// here alone), and it trusts the recorded ones unless the expression has `^` or `\b`
        /// (which may decide differently at `start` without `match_prev_avail`).
        fn retry(&mut self, start: usize, prev_avail: bool) -> Option<usize> {
            self.begin = start;
            self.prev_avail = prev_avail;
            self.not_null = true;
            self.retrying = true;
            let found = self.run(0, start);
            self.not_null = false;
            self.retrying = false;
            found
        }

        fn look(&mut self, id: u32, start: u32, pos: usize) -> bool {
            if !self.remember_looks {
                return self.run(start, pos).is_some();
            }
            let slot = id as usize * (self.units.len() + 1) + pos;
            match self.looks[slot] {
                1 => return false,
                2 => return true,
                _ => {}
            }
            // The body runs on the same stack, above the frames of the outer match.
            let r = self.run(start, pos).is_some();
            self.looks[slot] = 1 + u8::from(r);
            r
        }

        #[inline]
        fn trust_failures(&self) -> bool {
            !(self.retrying && self.prog.anchors)
        }

        /// A lookahead body matched: every state on the way there (the failure frames still on
        /// the stack) leads to a match.
        fn found_at(&mut self, base: usize, pos: usize) -> usize {
            let n_memo = self.prog.n_memo;
            if !self.remember {
                self.stack.truncate(base);
                return pos;
            }
            for frame in self.stack.drain(base..) {
                let (memo, positions) = match frame {
                    Frame::Fail { memo, pos: q } => (memo, q..=q),
                    Frame::Star { memo, lo, hi, .. } => (memo, lo..=hi),
                    _ => continue,
                };
                for q in positions {
                    let i = q * n_memo + memo as usize;
                    self.found[i >> 6] |= 1 << (i & 63);
                }
            }
            pos
        }

        /// Backtracking from instruction `pc` at `pos`: the end of the first match in
        /// ECMAScript's order.
        fn run(&mut self, pc: u32, pos: usize) -> Option<usize> {
            let base = self.stack.len();
            let (mut pc, mut pos) = (pc, pos);
            let n = self.units.len();
            loop {
                self.steps += 1;
                let ok = match self.prog.insts[pc as usize] {
                    Inst::Unit(u) => {
                        let ok = pos < n && self.units[pos] == u;
                        pos += 1;
                        pc += 1;
                        ok
                    }
                    Inst::Class(c) => {
                        let ok = pos < n && self.prog.classes[c as usize].matches(self.units[pos]);
                        pos += 1;
                        pc += 1;
                        ok
                    }
                    Inst::Split {
                        first,
                        second,
                        memo,
                    } => {
                        let (w, b) = self.bit(memo, pos);
                        if memo >= self.prog.look_memo && self.found[w] & b != 0 {
                            return Some(self.found_at(base, pos));
                        }
                        if self.failed[w] & b != 0 && self.trust_failures() {
                            false
                        } else {
                            self.stack.push(Frame::Fail { memo, pos });
                            self.stack.push(Frame::Try { pc: second, pos });
                            pc = first;
                            true
                        }
                    }
                    Inst::Jmp(t) => {
                        pc = t;
                        true
                    }
                    Inst::Bol => {
                        pc += 1;
                        pos == self.begin && !self.prev_avail
                    }
                    Inst::Eol => {
                        pc += 1;
                        pos == n
                    }
                    Inst::WordBoundary(want) => {
                        let left = (pos != self.begin || self.prev_avail)
                            && pos > 0
                            && is_word(self.units[pos - 1]);
                        let right = pos < n && is_word(self.units[pos]);
                        pc += 1;
                        (left != right) == want
                    }
                    Inst::LookClass { negated, class } => {
                        let hit =
                            pos < n && self.prog.classes[class as usize].matches(self.units[pos]);
                        pc += 1;
                        hit != negated
                    }
                    Inst::Look { negated, start, id } => {
                        let hit = self.look(id, start, pos);
                        pc += 1;
                        hit != negated
                    }
                    Inst::Run {
                        class,
                        min,
                        max,
                        memo,
                    } => {
                        let (w, b) = self.bit(memo, pos);
                        if memo >= self.prog.look_memo && self.found[w] & b != 0 {
                            return Some(self.found_at(base, pos));
                        }
                        let class = &self.prog.classes[class as usize];
                        let mut k = 0;
                        while k < max as usize && pos + k < n && class.matches(self.units[pos + k])
                        {
                            k += 1;
                        }
                        if self.failed[w] & b != 0 && self.trust_failures() || k < min as usize {
                            false
                        } else {
                            self.stack.push(Frame::Fail { memo, pos });
                            self.stack.push(Frame::Run {
                                pc: pc + 1,
                                pos,
                                k,
                                min: min as usize,
                            });
                            pc += 1;
                            pos += k;
                            true
                        }
                    }
                    Inst::Star { class, memo } => {
                        let look = memo >= self.prog.look_memo;
                        let class = &self.prog.classes[class as usize];
                        let mut p = pos;
                        let mut found = false;
                        let hi = loop {
                            let (w, b) = self.bit(memo, p);
                            if look && self.found[w] & b != 0 {
                                found = true;
                                break p.checked_sub(1);
                            }
                            if self.failed[w] & b != 0 && self.trust_failures() {
                                break p.checked_sub(1);
                            }
                            if p < n && class.matches(self.units[p]) {
                                p += 1;
                            } else {
                                break Some(p);
                            }
                        }
                        .filter(|&hi| hi >= pos);
                        if let Some(hi) = hi {
                            self.stack.push(Frame::Star {
                                exit: pc + 1,
                                memo,
                                lo: pos,
                                hi,
                            });
                        }
                        if found {
                            return Some(self.found_at(base, p));
                        }
                        match hi {
                            Some(hi) => {
                                pc += 1;
                                pos = hi;
                                true
                            }
                            None => false,
                        }
                    }
                    Inst::Match => {
                        if self.not_null && pos == self.begin {
                            false
                        } else {
                            self.stack.truncate(base);
                            return Some(pos);
                        }
                    }
                    Inst::LookEnd => return Some(self.found_at(base, pos)),
                };
                if ok {
                    continue;
                }
                // Backtrack.
                loop {
                    self.steps += 1;
                    if self.stack.len() == base {
                        return None;
                    }
                    match self.stack.pop() {
                        Some(Frame::Try { pc: p, pos: q }) => {
                            pc = p;
                            pos = q;
                            break;
                        }
                        Some(Frame::Fail { memo, pos: q }) => {
                            if !self.retrying {
                                let (w, b) = self.bit(memo, q);
                                self.failed[w] |= b;
                            }
                        }
                        Some(Frame::Star { exit, memo, lo, hi }) => {
                            if !self.retrying {
                                let (w, b) = self.bit(memo, hi);
                                self.failed[w] |= b;
                            }
                            if hi > lo {
                                self.stack.push(Frame::Star {
                                    exit,
                                    memo,
                                    lo,
                                    hi: hi - 1,
                                });
                                pc = exit;
                                pos = hi - 1;
                                break;
                            }
                        }
                        Some(Frame::Run {
                            pc: p,
                            pos: q,
                            k,
                            min,
                        }) => {
                            if k > min {
                                self.stack.push(Frame::Run {
                                    pc: p,
                                    pos: q,
                                    k: k - 1,
                                    min,
                                });
                                pc = p;
                                pos = q + k - 1;
                                break;
                            }
                        }
                        None => return None,
                    }
                }
            }
        }
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        /// Without the failure bits and lookahead table (where they would not fit), the words
        /// are the same.
        #[test]
        fn forgetting_gives_the_same_words() {
            let texts = [
                "a 1234567 89 'S  x\r\n\n  Ünï 中文 !!",
                "   \t x",
                "",
                "1234",
            ];
            for regexes in super::super::PreType::ALL.map(super::super::PreType::regexes) {
                for re in regexes {
                    let Ok(program) = Program::new(re) else {
                        continue;
                    };
                    for text in texts {
                        let units: Vec<u32> = text.chars().map(u32::from).collect();
                        let mut both = [Vec::new(), Vec::new()];
                        for (forget, out) in [false, true].into_iter().zip(&mut both) {
                            let mut scratch = Scratch {
                                forget,
                                ..Scratch::default()
                            };
                            program.split_piece(&units, out, &mut scratch);
                        }
                        assert_eq!(both[0], both[1], "{re:?} on {text:?}");
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str =
        "Hello world's  I'M 12345 \u{4e2d}\u{6587}!!\r\n\n  x\u{e9}\u{301} \u{1F600}";

    fn words(pre: PreType, text: &str, byte_encode: bool) -> Vec<String> {
        split(text.as_bytes(), pre.regexes(), byte_encode)
            .into_iter()
            .map(|w| String::from_utf8(w).unwrap())
            .collect()
    }

    /// Splits recorded from llama.cpp's `unicode_regex_split` (the host test compares every
    /// pre-tokenizer with it; these run on every target).
    #[test]
    fn splits_recorded_from_llama_cpp() {
        let cases: &[(PreType, &[&str])] = &[
            (
                PreType::Gpt2,
                &[
                    "Hello", " world", "'s", " ", " I", "'", "M", " 12345", " 中文", "!!",
                    "\r\n\n ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Llama3,
                &[
                    "Hello", " world", "'s", " ", " I", "'M", " ", "123", "45", " 中文",
                    "!!\r\n\n", " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Qwen2,
                &[
                    "Hello", " world", "'s", " ", " I", "'M", " ", "1", "2", "3", "4", "5",
                    " 中文", "!!\r\n\n", " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Deepseek3Llm,
                &[
                    "Hello",
                    " world",
                    "'s",
                    " ",
                    " I",
                    "'M",
                    " ",
                    "123",
                    "45",
                    " ",
                    "中文",
                    "!!\r\n\n",
                    " ",
                    " xé\u{301}",
                    " 😀",
                ],
            ),
            (
                PreType::Gpt4o,
                &[
                    "Hello", " world's", " ", " I'M", " ", "123", "45", " 中文", "!!\r\n\n", " ",
                    " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::DeepseekLlm,
                &[
                    "Hello",
                    " world",
                    "'",
                    "s",
                    " ",
                    " I",
                    "'",
                    "M",
                    " ",
                    "12345",
                    " ",
                    "中文",
                    "!!",
                    "\r",
                    "\n",
                    "\n",
                    " ",
                    " x",
                    "é",
                    "\u{301} 😀",
                ],
            ),
            (
                PreType::Poro,
                &[
                    "Hello",
                    " world's",
                    " ",
                    " I'M",
                    " 12345",
                    " 中文",
                    "!!\r\n\n ",
                    " xé\u{301}",
                    " 😀",
                ],
            ),
            (
                PreType::KimiK2,
                &[
                    "Hello", " world's", " ", " I'M", " ", "123", "45", " ", "中文", "!!\r\n\n",
                    " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Tekken,
                &[
                    "Hello", " world", "'s", " ", " I", "'M", " ", "1", "2", "3", "4", "5",
                    " 中文", "!!\r\n\n", " ", " xé", "\u{301}", " 😀",
                ],
            ),
            (
                PreType::Default,
                &[
                    "Hello", " world", "'", "s", " ", " I", "'", "M", " ", "123", "45", " 中文",
                    "!!", "\r\n\n ", " xé", "\u{301}", " 😀",
                ],
            ),
        ];
        for (pre, expected) in cases {
            assert_eq!(words(*pre, TEXT, false), *expected, "{pre:?}");
        }
        // Byte-level: GPT-2's characters for each byte.
        assert_eq!(
            words(PreType::Gpt2, TEXT, true),
            [
                "Hello",
                "Ġworld",
                "'s",
                "Ġ",
                "ĠI",
                "'",
                "M",
                "Ġ12345",
                "Ġä¸Ńæĸĩ",
                "!!",
                "čĊĊĠ",
                "ĠxÃ©",
                "Ìģ",
                "ĠðŁĺĢ"
            ]
        );
        // `superbpe`'s lookahead matches nothing, and llama.cpp keeps the empty words.
        assert_eq!(
            words(PreType::Superbpe, "a 1234567 89", false),
            ["a ", "1", "", "234", "", "567", " ", "89"]
        );
    }

    #[test]
    fn every_pre_tokenizer_compiles_and_covers_its_text() {
        let text = "Hello 'World' 123\t\r\n \u{a0}中文 \u{301}\u{ff}\0".as_bytes();
        for pre in PreType::ALL {
            let splitter = Splitter::new(pre.regexes()).unwrap();
            let cpts = cpts_from_utf8(text);
            assert_eq!(
                splitter.split_cpts(&cpts).iter().sum::<usize>(),
                cpts.len(),
                "{pre:?}"
            );
            assert_eq!(splitter.split(text, false).concat(), text, "{pre:?}");
        }
        assert_eq!(PreType::from_name("llama-bpe"), Some(PreType::Llama3));
        assert_eq!(PreType::from_name("qwen2"), Some(PreType::Qwen2));
        assert_eq!(PreType::from_name("gpt-4o"), Some(PreType::Gpt4o));
        assert_eq!(PreType::from_name("nonsense"), None);
        assert!(!PreType::Gemma4.byte_encode() && PreType::Gpt2.byte_encode());
    }

    #[test]
    fn invalid_utf8_becomes_replacement_characters() {
        let words = split(b"ab\xFFcd", PreType::Gpt2.regexes(), false);
        assert_eq!(
            words,
            [
                b"ab".to_vec(),
                "\u{FFFD}".as_bytes().to_vec(),
                b"cd".to_vec()
            ]
        );
        assert!(split(b"", PreType::Llama3.regexes(), true).is_empty());
    }

    #[test]
    fn a_splitter_is_shared_between_threads() {
        fn shared<T: Send + Sync>() {}
        shared::<Splitter>();
        shared::<PreType>();
    }

    #[test]
    fn unsupported_expressions_are_errors() {
        assert!(Splitter::new(&["(a"]).is_err());
        assert!(Splitter::new(&[r"(a)\1"]).is_err());
        assert!(Splitter::new(&[r"\p{L}é"]).is_err());
        assert!(Splitter::new(&["(a*)*"]).is_err());
    }
}
