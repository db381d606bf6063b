//! The pre-tokenizers llama.cpp knows, by name and number, and the regular expressions each
//! splits with.

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
