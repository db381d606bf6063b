//! Which type each tensor gets, as llama.cpp's `llama_model_quantize` chooses it: the file
//! types (llama-quantize's presets, `Q4_K_M`, `IQ4_XS`, ...), which tensors are quantized at all
//! (1-D tensors, norms, position embeddings, expert gates ... keep their type), the per-tensor
//! mixtures of the presets (attention V, FFN down, output and token embeddings get more bits),
//! overrides by name pattern, and the fallback for rows that are not whole blocks.

use crate::error::{Error, ErrorCode, Result};
use crate::file::GgufFile;
use crate::regex::Pattern;
use crate::types::DataType;
use crate::value::Value;

/// A file type (llama.cpp's `llama_ftype`, the presets llama-quantize names): the default type
/// of quantized tensors and the mixture rules around it. Its id is written as
/// `general.file_type`.
#[allow(non_camel_case_types)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileType {
    /// Every tensor F32.
    F32,
    /// F16 (1-D tensors kept).
    F16,
    /// BF16.
    BF16,
    /// Q1_0.
    Q1_0,
    /// Q2_0.
    Q2_0,
    /// Q4_0 (output Q6_K).
    Q4_0,
    /// Q4_1.
    Q4_1,
    /// Q5_0.
    Q5_0,
    /// Q5_1.
    Q5_1,
    /// Q8_0.
    Q8_0,
    /// MXFP4 for expert tensors, Q8_0 for the others.
    MXFP4_MOE,
    /// Q2_K mixture.
    Q2_K,
    /// Q2_K, small mixture (needs an importance matrix).
    Q2_K_S,
    /// Q3_K, small.
    Q3_K_S,
    /// Q3_K, medium.
    Q3_K_M,
    /// Q3_K, large.
    Q3_K_L,
    /// Q4_K, small.
    Q4_K_S,
    /// Q4_K, medium.
    Q4_K_M,
    /// Q5_K, small.
    Q5_K_S,
    /// Q5_K, medium.
    Q5_K_M,
    /// Q6_K.
    Q6_K,
    /// TQ1_0.
    TQ1_0,
    /// TQ2_0.
    TQ2_0,
    /// IQ2_XXS.
    IQ2_XXS,
    /// IQ2_XS.
    IQ2_XS,
    /// IQ2_S.
    IQ2_S,
    /// IQ2_M.
    IQ2_M,
    /// IQ3_XXS.
    IQ3_XXS,
    /// IQ3_XS.
    IQ3_XS,
    /// IQ3_S.
    IQ3_S,
    /// IQ3_M.
    IQ3_M,
    /// IQ1_S.
    IQ1_S,
    /// IQ1_M.
    IQ1_M,
    /// IQ4_NL.
    IQ4_NL,
    /// IQ4_XS.
    IQ4_XS,
}

/// llama-quantize's preset names, each with its file type, in its order (aliases included).
const NAMES: [(&str, FileType); 38] = [
    ("Q1_0", FileType::Q1_0),
    ("Q2_0", FileType::Q2_0),
    ("Q4_0", FileType::Q4_0),
    ("Q4_1", FileType::Q4_1),
    ("MXFP4_MOE", FileType::MXFP4_MOE),
    ("Q5_0", FileType::Q5_0),
    ("Q5_1", FileType::Q5_1),
    ("IQ2_XXS", FileType::IQ2_XXS),
    ("IQ2_XS", FileType::IQ2_XS),
    ("IQ2_S", FileType::IQ2_S),
    ("IQ2_M", FileType::IQ2_M),
    ("IQ1_S", FileType::IQ1_S),
    ("IQ1_M", FileType::IQ1_M),
    ("TQ1_0", FileType::TQ1_0),
    ("TQ2_0", FileType::TQ2_0),
    ("Q2_K", FileType::Q2_K),
    ("Q2_K_S", FileType::Q2_K_S),
    ("IQ3_XXS", FileType::IQ3_XXS),
    ("IQ3_S", FileType::IQ3_S),
    ("IQ3_M", FileType::IQ3_M),
    ("Q3_K", FileType::Q3_K_M),
    ("IQ3_XS", FileType::IQ3_XS),
    ("Q3_K_S", FileType::Q3_K_S),
    ("Q3_K_M", FileType::Q3_K_M),
    ("Q3_K_L", FileType::Q3_K_L),
    ("IQ4_NL", FileType::IQ4_NL),
    ("IQ4_XS", FileType::IQ4_XS),
    ("Q4_K", FileType::Q4_K_M),
    ("Q4_K_S", FileType::Q4_K_S),
    ("Q4_K_M", FileType::Q4_K_M),
    ("Q5_K", FileType::Q5_K_M),
    ("Q5_K_S", FileType::Q5_K_S),
    ("Q5_K_M", FileType::Q5_K_M),
    ("Q6_K", FileType::Q6_K),
    ("Q8_0", FileType::Q8_0),
    ("F16", FileType::F16),
    ("BF16", FileType::BF16),
    ("F32", FileType::F32),
];

impl FileType {
    /// Every file type.
    pub const ALL: [FileType; 35] = [
        FileType::F32,
        FileType::F16,
        FileType::BF16,
        FileType::Q1_0,
        FileType::Q2_0,
        FileType::Q4_0,
        FileType::Q4_1,
        FileType::Q5_0,
        FileType::Q5_1,
        FileType::Q8_0,
        FileType::MXFP4_MOE,
        FileType::Q2_K,
        FileType::Q2_K_S,
        FileType::Q3_K_S,
        FileType::Q3_K_M,
        FileType::Q3_K_L,
        FileType::Q4_K_S,
        FileType::Q4_K_M,
        FileType::Q5_K_S,
        FileType::Q5_K_M,
        FileType::Q6_K,
        FileType::TQ1_0,
        FileType::TQ2_0,
        FileType::IQ2_XXS,
        FileType::IQ2_XS,
        FileType::IQ2_S,
        FileType::IQ2_M,
        FileType::IQ3_XXS,
        FileType::IQ3_XS,
        FileType::IQ3_S,
        FileType::IQ3_M,
        FileType::IQ1_S,
        FileType::IQ1_M,
        FileType::IQ4_NL,
        FileType::IQ4_XS,
    ];

    /// llama.cpp's id (`LLAMA_FTYPE_*`, written as `general.file_type`).
    pub fn id(self) -> u32 {
        use FileType as F;
        match self {
            F::F32 => 0,
            F::F16 => 1,
            F::Q4_0 => 2,
            F::Q4_1 => 3,
            F::Q8_0 => 7,
            F::Q5_0 => 8,
            F::Q5_1 => 9,
            F::Q2_K => 10,
            F::Q3_K_S => 11,
            F::Q3_K_M => 12,
            F::Q3_K_L => 13,
            F::Q4_K_S => 14,
            F::Q4_K_M => 15,
            F::Q5_K_S => 16,
            F::Q5_K_M => 17,
            F::Q6_K => 18,
            F::IQ2_XXS => 19,
            F::IQ2_XS => 20,
            F::Q2_K_S => 21,
            F::IQ3_XS => 22,
            F::IQ3_XXS => 23,
            F::IQ1_S => 24,
            F::IQ4_NL => 25,
            F::IQ3_S => 26,
            F::IQ3_M => 27,
            F::IQ2_S => 28,
            F::IQ2_M => 29,
            F::IQ4_XS => 30,
            F::IQ1_M => 31,
            F::BF16 => 32,
            F::TQ1_0 => 36,
            F::TQ2_0 => 37,
            F::MXFP4_MOE => 38,
            F::Q1_0 => 40,
            F::Q2_0 => 41,
        }
    }

    /// The file type with llama.cpp's id `id`.
    pub fn from_id(id: u32) -> Option<FileType> {
        FileType::ALL.into_iter().find(|f| f.id() == id)
    }

    /// The preset's name, as llama-quantize names it (`Q4_K_M`, `IQ4_XS`, `F16`, ...).
    pub fn name(self) -> &'static str {
        NAMES
            .iter()
            .rev()
            .find(|(_, f)| *f == self)
            .map_or("", |(name, _)| name)
    }

    /// The file type a preset name stands for, case-insensitively as llama-quantize reads it
    /// (the aliases `Q3_K`, `Q4_K` and `Q5_K` are the medium mixtures), or its id in decimal.
    pub fn from_name(name: &str) -> Option<FileType> {
        NAMES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, f)| *f)
            .or_else(|| FileType::from_id(name.parse().ok()?))
    }

    /// The type of a quantized tensor before the mixture's rules
    /// (`llama_ftype_get_default_type`).
    pub fn default_type(self) -> DataType {
        use DataType as T;
        use FileType as F;
        match self {
            F::F32 => T::F32,
            F::F16 => T::F16,
            F::BF16 => T::BF16,
            F::Q1_0 => T::Q1_0,
            F::Q2_0 => T::Q2_0,
            F::Q4_0 => T::Q4_0,
            F::Q4_1 => T::Q4_1,
            F::Q5_0 => T::Q5_0,
            F::Q5_1 => T::Q5_1,
            F::Q8_0 => T::Q8_0,
            F::MXFP4_MOE => T::MXFP4,
            F::Q2_K | F::Q2_K_S => T::Q2_K,
            F::IQ3_XS => T::IQ3_S,
            F::Q3_K_S | F::Q3_K_M | F::Q3_K_L => T::Q3_K,
            F::Q4_K_S | F::Q4_K_M => T::Q4_K,
            F::Q5_K_S | F::Q5_K_M => T::Q5_K,
            F::Q6_K => T::Q6_K,
            F::TQ1_0 => T::TQ1_0,
            F::TQ2_0 => T::TQ2_0,
            F::IQ2_XXS => T::IQ2_XXS,
            F::IQ2_XS | F::IQ2_S => T::IQ2_XS,
            F::IQ2_M => T::IQ2_S,
            F::IQ3_XXS => T::IQ3_XXS,
            F::IQ1_S => T::IQ1_S,
            F::IQ1_M => T::IQ1_M,
            F::IQ4_NL => T::IQ4_NL,
            F::IQ4_XS => T::IQ4_XS,
            F::IQ3_S | F::IQ3_M => T::IQ3_S,
        }
    }
}

/// What the rules need of the model's hyperparameters (from its metadata, as llama.cpp loads
/// them).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Hparams {
    /// `general.architecture`.
    pub arch: String,
    /// `{arch}.block_count`.
    pub n_layer: u32,
    /// `{arch}.attention.head_count` (the first layer's, when per layer).
    pub n_head: u32,
    /// `{arch}.attention.head_count_kv` (default: `n_head`).
    pub n_head_kv: u32,
    /// `{arch}.expert_count` (default 0).
    pub n_expert: u32,
}

/// A metadata integer (any integer type), or the first element of an integer array.
fn int_of(file: &GgufFile<impl AsRef<[u8]>>, key: &str) -> Option<u64> {
    let value = file.get(key)?;
    let first = |v: Value<'_>| -> Option<u64> {
        v.as_u64()
            .or_else(|| v.as_i64().and_then(|i| u64::try_from(i).ok()))
    };
    match value {
        Value::Array(a) => a.iter().next().and_then(first),
        v => first(v),
    }
}

impl Hparams {
    /// The hyperparameters in `file`'s metadata (missing ones are 0).
    pub fn from_file(file: &GgufFile<impl AsRef<[u8]>>) -> Hparams {
        let arch = file
            .get("general.architecture")
            .and_then(|v| v.as_bytes())
            .map(|b| String::from_utf8_lossy(b).into_owned())
            .unwrap_or_default();
        let u32_of = |key: String| int_of(file, &key).map(|v| u32::try_from(v).unwrap_or(u32::MAX));
        let n_head = u32_of(format!("{arch}.attention.head_count")).unwrap_or(0);
        Hparams {
            n_layer: u32_of(format!("{arch}.block_count")).unwrap_or(0),
            n_head,
            n_head_kv: u32_of(format!("{arch}.attention.head_count_kv")).unwrap_or(n_head),
            n_expert: u32_of(format!("{arch}.expert_count")).unwrap_or(0),
            arch,
        }
    }

    fn n_gqa(&self) -> u32 {
        self.n_head.checked_div(self.n_head_kv).unwrap_or(0)
    }

    /// llama.cpp's 70B model type, the one that changes a rule: a llama with 80 layers and
    /// grouped-query attention.
    fn is_70b(&self) -> bool {
        self.arch == "llama" && self.n_layer == 80 && self.n_head != self.n_head_kv
    }
}

/// How the types are chosen: the file type and the options that change its rules.
#[derive(Clone, Debug)]
pub struct TypeRules {
    /// The preset.
    pub file_type: FileType,
    /// Every quantized tensor gets the default type (`--pure`).
    pub pure: bool,
    /// Leave `output.weight` as it is (`--leave-output-tensor`).
    pub leave_output_tensor: bool,
    /// Copy every tensor as it is (`COPY`).
    pub only_copy: bool,
    /// The type of `output.weight` (`--output-tensor-type`).
    pub output_tensor_type: Option<DataType>,
    /// The type of the token embeddings (`--token-embedding-type`).
    pub token_embedding_type: Option<DataType>,
    /// Types by name pattern (`--tensor-type PATTERN=TYPE`), the first that matches wins.
    pub tensor_types: Vec<(Pattern, DataType)>,
    /// Whether an importance matrix is given (a few rules depend on it).
    pub has_importance: bool,
}

/// A tensor as the rules see it.
#[derive(Clone, Copy, Debug)]
pub struct TensorShape<'a> {
    /// Its name.
    pub name: &'a [u8],
    /// Its dimensions (the first is the row length).
    pub dims: &'a [u64],
    /// Its type in the source.
    pub data_type: DataType,
}

/// The rules' choice for one tensor.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Choice {
    /// The type it is written as.
    pub data_type: DataType,
    /// Whether the tensor may be quantized at all (a 2-D or 3-D weight that is no norm, ...).
    pub quantizable: bool,
    /// Whether its type needs an importance matrix (llama.cpp refuses it without one).
    pub requires_importance: bool,
    /// Whether the chosen type did not fit the row length and a fallback was taken.
    pub fell_back: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Category {
    TokenEmbd,
    AttnQ,
    AttnV,
    AttnK,
    AttnQkv,
    AttnKvB,
    AttnOutput,
    FfnUp,
    FfnGate,
    FfnDown,
    Output,
    Other,
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

pub(crate) fn is_token_embd(name: &[u8]) -> bool {
    name == b"token_embd.weight" || name == b"per_layer_token_embd.weight"
}

fn category(name: &[u8]) -> Category {
    use Category as C;
    if name == b"output.weight" {
        return C::Output;
    }
    if is_token_embd(name) {
        return C::TokenEmbd;
    }
    let table = [
        ("attn_qkv.weight", C::AttnQkv),
        ("attn_kv_b.weight", C::AttnKvB),
        ("attn_v.weight", C::AttnV),
        ("attn_k.weight", C::AttnK),
        ("attn_q.weight", C::AttnQ),
        ("attn_output.weight", C::AttnOutput),
        ("ffn_up", C::FfnUp),
        ("ffn_gate", C::FfnGate),
        ("ffn_down", C::FfnDown),
    ];
    table
        .into_iter()
        .find(|(s, _)| contains(name, s))
        .map_or(C::Other, |(_, c)| c)
}

fn is_attn_v(c: Category) -> bool {
    matches!(c, Category::AttnV | Category::AttnQkv | Category::AttnKvB)
}

/// Whether llama.cpp quantizes a tensor at all (`tensor_allows_quantization`).
pub fn allows_quantization(rules: &TypeRules, arch: &str, t: &TensorShape<'_>) -> bool {
    if rules.only_copy {
        return false;
    }
    // ggml_n_dims: the dimensions up to the last that is not 1 (at least 1).
    let n_dims = t.dims.iter().rposition(|&d| d != 1).map_or(1, |i| i + 1);
    if n_dims < 2 {
        return false;
    }
    let name = t.name;
    if !name.ends_with(b"weight") {
        return false;
    }
    if rules.leave_output_tensor && name == b"output.weight" {
        return false;
    }
    if name == b"position_embd.weight" || name == b"token_types.weight" {
        return false;
    }
    const KEPT: &[&str] = &[
        "_norm.weight",
        "ffn_gate_inp.weight",
        "ffn_gate_tid2eid.weight",
        "altup",
        "laurel",
        "per_layer_model_proj",
        "ssm_conv1d",
        "shortconv.conv.weight",
        "indexer.k_proj.weight",
        "indexer.q_proj.weight",
        "time_mix_first.weight",
        "time_mix_w0.weight",
        "time_mix_w1.weight",
        "time_mix_w2.weight",
        "time_mix_v0.weight",
        "time_mix_v1.weight",
        "time_mix_v2.weight",
        "time_mix_a0.weight",
        "time_mix_a1.weight",
        "time_mix_a2.weight",
        "time_mix_g1.weight",
        "time_mix_g2.weight",
        "time_mix_decay_w1.weight",
        "time_mix_decay_w2.weight",
        "time_mix_lerp_fused.weight",
        "attn_rel_b.weight",
        ".position_embd",
        "sam.pos_embd",
        "sam.neck.",
        "sam.net_",
        ".rel_pos",
        ".patch_embd",
        ".patch_merger",
        "a.rvq.codebook",
        "mm.a.code_embd",
    ];
    if KEPT.iter().any(|s| contains(name, s)) {
        return false;
    }
    if arch == "glm5-next" {
        const GLM5_NEXT: [&str; 14] = [
            "hc_",
            "indexer.attn_q_b",
            "indexer.attn_k",
            "indexer.proj",
            "indexer_compressor_gate",
            "indexer_compressor_ape",
            "ssm_f_a.weight",
            "ssm_f_b.weight",
            "ssm_g_a.weight",
            "ssm_g_b.weight",
            "ssm_beta.weight",
            "attn_kv_a_mqa.weight",
            "attn_k_b.weight",
            "attn_v_b.weight",
        ];
        if GLM5_NEXT.iter().any(|s| contains(name, s)) {
            return false;
        }
    }
    true
}

/// The layer a tensor's name gives (`blk.N.`, as `sscanf("blk.%d.")` reads it), or -1.
pub fn layer_of(name: &[u8]) -> i64 {
    parse_layer(name).unwrap_or(-1)
}

fn parse_layer(name: &[u8]) -> Option<i64> {
    let rest = name.strip_prefix(b"blk.")?;
    let rest = {
        let skip = rest
            .iter()
            .take_while(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c))
            .count();
        &rest[skip..]
    };
    let (negative, digits) = match rest.first() {
        Some(b'-') => (true, &rest[1..]),
        Some(b'+') => (false, &rest[1..]),
        _ => (false, rest),
    };
    let n = digits.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    let value = digits[..n].iter().fold(0i64, |v, &c| {
        v.saturating_mul(10).saturating_add(i64::from(c - b'0'))
    });
    // sscanf stores an int: keep the value in its range.
    let value = value.min(i64::from(i32::MAX));
    Some(if negative { -value } else { value })
}

/// The order llama.cpp walks (and writes) a model's tensors in: by layer (`blk.N.`; tensors of
/// no layer first), then by name. Returns positions in `names`.
pub fn llama_order(names: &[&[u8]]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..names.len()).collect();
    order.sort_by(|&a, &b| (layer_of(names[a]), names[a]).cmp(&(layer_of(names[b]), names[b])));
    order
}

/// The counters llama.cpp keeps while it walks the tensors.
struct State<'r> {
    rules: &'r TypeRules,
    hp: &'r Hparams,
    n_attention_wv: i64,
    n_layer: i64,
    i_attention_wv: i64,
    i_ffn_down: i64,
    i_ffn_gate: i64,
    i_ffn_up: i64,
    tied_embeddings: bool,
}

fn use_more_bits(i_layer: i64, n_layers: i64) -> bool {
    i_layer < n_layers / 8 || i_layer >= 7 * n_layers / 8 || (i_layer - n_layers / 8) % 3 == 2
}

impl State<'_> {
    /// The layer for the layer-dependent rules: the counter, or for expert models the layer
    /// the name gives.
    fn layer_info(&self, counter: i64, name: &[u8]) -> Result<(i64, i64)> {
        if self.hp.n_expert.max(1) > 1 {
            let text = String::from_utf8_lossy(name);
            let layer = parse_layer(name).ok_or_else(|| {
                Error::msg(
                    ErrorCode::InvalidArgument,
                    format!("cannot determine the layer of tensor '{text}'"),
                )
            })?;
            if layer < 0 || layer >= self.n_layer {
                return Err(Error::msg(
                    ErrorCode::InvalidArgument,
                    format!(
                        "tensor '{text}' is in layer {layer}, not one of the model's {} layers",
                        self.n_layer
                    ),
                ));
            }
            return Ok((layer, self.n_layer));
        }
        Ok((counter, self.n_layer))
    }

    /// `llama_tensor_get_type_impl`: the mixture's choice for a tensor whose default is
    /// `new_type`.
    fn mixture(
        &mut self,
        mut new_type: DataType,
        t: &TensorShape<'_>,
        cat: Category,
    ) -> Result<DataType> {
        use DataType as T;
        use FileType as F;
        let ftype = self.rules.file_type;
        let arch = self.hp.arch.as_str();
        let name = t.name;
        let n_gqa = self.hp.n_gqa();
        let n_expert = self.hp.n_expert;
        let falcon = arch == "falcon";

        if arch == "glm5-next"
            && (contains(name, "attn_q_a")
                || contains(name, "attn_q_b")
                || contains(name, "nextn.eh_proj"))
            && !matches!(new_type, T::F32 | T::BF16 | T::F16)
        {
            return Ok(T::Q8_0);
        }

        let very_low = [
            F::IQ2_XXS,
            F::IQ2_XS,
            F::IQ1_S,
            F::IQ2_S,
            F::IQ2_M,
            F::IQ1_M,
        ];
        if cat == Category::Output || (self.tied_embeddings && cat == Category::TokenEmbd) {
            if let Some(ty) = self.rules.output_tensor_type {
                new_type = ty;
            } else {
                let nx = t.dims.first().copied().unwrap_or(1);
                if ftype == F::MXFP4_MOE || falcon || nx % new_type.block_elems() != 0 {
                    new_type = T::Q8_0;
                } else if matches!(
                    ftype,
                    F::IQ2_XXS | F::IQ2_XS | F::IQ3_XXS | F::IQ1_S | F::IQ2_S | F::IQ2_M | F::IQ1_M
                ) {
                    new_type = T::Q5_K;
                } else if new_type != T::Q8_0 {
                    new_type = T::Q6_K;
                }
            }
        } else if ftype == F::MXFP4_MOE {
            let bailing_expert = arch == "bailingmoe3"
                && matches!(cat, Category::FfnUp | Category::FfnGate | Category::FfnDown);
            let ne2 = t.dims.get(2).copied().unwrap_or(1);
            new_type = if ne2 > 1 && (arch != "bailingmoe3" || bailing_expert) {
                T::MXFP4
            } else {
                T::Q8_0
            };
        } else if cat == Category::TokenEmbd {
            if let Some(ty) = self.rules.token_embedding_type {
                new_type = ty;
            } else if matches!(ftype, F::IQ2_XXS | F::IQ2_XS | F::IQ1_S | F::IQ1_M) {
                new_type = T::Q2_K;
            } else if matches!(ftype, F::IQ2_S | F::IQ2_M | F::IQ3_XXS) {
                new_type = T::IQ3_S;
            } else if matches!(ftype, F::TQ1_0 | F::TQ2_0 | F::Q2_0) {
                new_type = T::Q4_K;
            }
        } else if very_low.contains(&ftype) {
            let s_or_m = matches!(ftype, F::IQ2_S | F::IQ2_M);
            if is_attn_v(cat) {
                new_type = if n_gqa >= 4 || n_expert >= 4 {
                    T::Q4_K
                } else if s_or_m {
                    T::IQ3_S
                } else {
                    T::Q2_K
                };
                self.i_attention_wv += 1;
            } else if n_expert == 8 && cat == Category::AttnK {
                new_type = T::Q4_K;
            } else if cat == Category::FfnDown {
                if self.i_ffn_down < self.n_layer / 8 {
                    new_type = if s_or_m { T::IQ3_S } else { T::Q2_K };
                }
                self.i_ffn_down += 1;
            } else if cat == Category::AttnOutput {
                if n_expert == 8 {
                    new_type = T::Q5_K;
                } else if matches!(ftype, F::IQ1_S | F::IQ1_M) {
                    new_type = T::IQ2_XXS;
                } else if s_or_m {
                    new_type = T::IQ3_S;
                }
            }
        } else if is_attn_v(cat) {
            let (i, n) = (self.i_attention_wv, self.n_attention_wv);
            if ftype == F::Q2_K {
                new_type = if n_gqa >= 4 { T::Q4_K } else { T::Q3_K };
            } else if ftype == F::Q2_K_S && n_gqa >= 4 {
                new_type = T::Q4_K;
            } else if ftype == F::IQ3_XXS {
                new_type = if n_gqa >= 4 {
                    T::Q4_K
                } else if !self.rules.has_importance {
                    T::IQ3_S
                } else {
                    T::IQ3_XXS
                };
            } else if (matches!(ftype, F::IQ3_XS | F::IQ3_S) && n_gqa >= 4) || ftype == F::IQ3_M {
                new_type = T::Q4_K;
            } else if ftype == F::Q3_K_M {
                new_type = if i < 2 { T::Q5_K } else { T::Q4_K };
            } else if ftype == F::Q3_K_L || (matches!(ftype, F::IQ4_NL | F::IQ4_XS) && n_gqa >= 4) {
                new_type = T::Q5_K;
            } else if matches!(ftype, F::Q4_K_M | F::Q5_K_M) && use_more_bits(i, n) {
                new_type = T::Q6_K;
            } else if ftype == F::Q4_K_S && i < 4 {
                new_type = T::Q5_K;
            }
            if self.hp.is_70b() && matches!(new_type, T::Q3_K | T::Q4_K) {
                new_type = T::Q5_K;
            }
            if n_expert == 8 {
                new_type = T::Q8_0;
            }
            self.i_attention_wv += 1;
        } else if cat == Category::AttnK {
            if n_expert == 8 {
                new_type = T::Q8_0;
            } else if ftype == F::IQ3_XS {
                new_type = T::IQ3_XXS;
            } else if ftype == F::IQ3_XXS {
                new_type = T::IQ2_S;
            }
        } else if cat == Category::AttnQ {
            if ftype == F::IQ3_XS {
                new_type = T::IQ3_XXS;
            } else if ftype == F::IQ3_XXS {
                new_type = T::IQ2_S;
            }
        } else if cat == Category::FfnDown {
            let (i_layer, n_layer) = self.layer_info(self.i_ffn_down, name)?;
            let imatrix = self.rules.has_importance;
            if ftype == F::Q2_K {
                new_type = T::Q3_K;
            } else if ftype == F::Q2_K_S {
                if i_layer < n_layer / 8 {
                    new_type = T::Q4_K;
                }
            } else if ftype == F::IQ3_XXS && !imatrix {
                new_type = if i_layer < n_layer / 8 {
                    T::Q4_K
                } else {
                    T::Q3_K
                };
            } else if ftype == F::Q3_K_M {
                new_type = if i_layer < n_layer / 16 {
                    T::Q5_K
                } else if !falcon || use_more_bits(i_layer, n_layer) {
                    T::Q4_K
                } else {
                    T::Q3_K
                };
            } else if ftype == F::IQ3_M
                && (i_layer < n_layer / 8 || (n_expert == 8 && use_more_bits(i_layer, n_layer)))
            {
                new_type = T::Q4_K;
            } else if ftype == F::Q3_K_L {
                new_type = if falcon { T::Q4_K } else { T::Q5_K };
            } else if ftype == F::Q4_K_M {
                if falcon {
                    new_type = if i_layer < n_layer / 16 {
                        T::Q6_K
                    } else if use_more_bits(i_layer, n_layer) {
                        T::Q5_K
                    } else {
                        T::Q4_K
                    };
                } else if use_more_bits(i_layer, n_layer) {
                    new_type = T::Q6_K;
                }
            } else if i_layer < n_layer / 8 && matches!(ftype, F::IQ4_NL | F::IQ4_XS) && !imatrix {
                new_type = T::Q5_K;
            } else if ftype == F::Q5_K_M && use_more_bits(i_layer, n_layer) {
                new_type = T::Q6_K;
            } else if ftype == F::Q4_K_S && !falcon && i_layer < n_layer / 8 {
                new_type = T::Q5_K;
            } else if matches!(ftype, F::Q4_0 | F::Q5_0) && imatrix && i_layer < n_layer / 8 {
                new_type = if ftype == F::Q4_0 { T::Q4_1 } else { T::Q5_1 };
            }
            self.i_ffn_down += 1;
        } else if cat == Category::AttnOutput {
            if !falcon {
                if n_expert == 8 {
                    if matches!(
                        ftype,
                        F::Q2_K
                            | F::IQ3_XS
                            | F::IQ3_XXS
                            | F::Q3_K_S
                            | F::Q3_K_M
                            | F::IQ4_NL
                            | F::Q4_K_S
                            | F::Q4_K_M
                            | F::IQ3_S
                            | F::IQ3_M
                            | F::IQ4_XS
                    ) {
                        new_type = T::Q5_K;
                    }
                } else {
                    match ftype {
                        F::Q2_K => new_type = T::Q3_K,
                        F::IQ3_XXS => new_type = T::IQ3_S,
                        F::Q3_K_M | F::IQ3_M => new_type = T::Q4_K,
                        F::Q3_K_L => new_type = T::Q5_K,
                        _ => {}
                    }
                }
            } else if ftype == F::Q3_K_L {
                new_type = T::Q4_K;
            }
        } else if cat == Category::AttnQkv {
            match ftype {
                F::Q3_K_M | F::Q3_K_L | F::IQ3_M => new_type = T::Q4_K,
                F::Q4_K_M => new_type = T::Q5_K,
                F::Q5_K_M => new_type = T::Q6_K,
                _ => {}
            }
        } else if cat == Category::FfnGate || cat == Category::FfnUp {
            let counter = if cat == Category::FfnGate {
                self.i_ffn_gate
            } else {
                self.i_ffn_up
            };
            let (i_layer, n_layer) = self.layer_info(counter, name)?;
            if ftype == F::IQ3_XS && i_layer >= n_layer / 8 && i_layer < 7 * n_layer / 8 {
                new_type = T::IQ3_XXS;
            }
            if cat == Category::FfnGate {
                self.i_ffn_gate += 1;
            } else {
                self.i_ffn_up += 1;
            }
        }
        Ok(new_type)
    }
}

/// `tensor_type_fallback`: a type whose blocks fit the row length `ncols`.
fn fallback(target: DataType, ncols: u64) -> Result<(DataType, bool)> {
    use DataType as T;
    let block = target.block_elems();
    if ncols % block == 0 {
        return Ok((target, false));
    }
    let mut ty = match target {
        T::IQ1_S
        | T::IQ1_M
        | T::IQ2_XXS
        | T::IQ2_XS
        | T::IQ2_S
        | T::IQ3_XXS
        | T::IQ3_S
        | T::IQ4_XS => T::IQ4_NL,
        T::Q2_0 | T::Q2_K | T::Q3_K | T::TQ1_0 | T::TQ2_0 => T::Q4_0,
        T::Q4_K => T::Q5_0,
        T::Q5_K => T::Q5_1,
        T::Q6_K => T::Q8_0,
        t if block <= 32 => t,
        t => {
            return Err(Error::msg(
                ErrorCode::Unsupported,
                format!(
                    "rows of {ncols} values are not whole {} blocks, and no type is defined to \
                     fall back to",
                    t.name()
                ),
            ))
        }
    };
    if ncols % ty.block_elems() != 0 {
        ty = T::F16;
    }
    Ok((ty, true))
}

/// Whether llama.cpp refuses to quantize a tensor to `ty` without an importance matrix
/// (`tensor_requires_imatrix`).
fn requires_importance(name: &[u8], ty: DataType, file_type: FileType) -> bool {
    use DataType as T;
    if is_token_embd(name) || name == b"output.weight" {
        return false;
    }
    match ty {
        T::IQ3_XXS | T::IQ2_XXS | T::IQ2_XS | T::IQ2_S | T::IQ1_M | T::IQ1_S => true,
        T::Q2_K => file_type == FileType::Q2_K_S,
        _ => false,
    }
}

/// Whether ggml counts `ty` as quantized (`ggml_is_quantized`: not F32, F16, BF16 or the
/// integer and F64 types).
pub fn is_quantized(ty: DataType) -> bool {
    use DataType as T;
    !matches!(
        ty,
        T::F32 | T::F16 | T::BF16 | T::I8 | T::I16 | T::I32 | T::I64 | T::F64
    )
}

/// The type of each of `tensors`, given in the order llama.cpp walks them ([`llama_order`]):
/// `llama_tensor_get_type` for each, its counters carried from one tensor to the next.
pub fn choose_types(
    rules: &TypeRules,
    hp: &Hparams,
    tensors: &[TensorShape<'_>],
) -> Result<Vec<Choice>> {
    let mut state = State {
        rules,
        hp,
        n_attention_wv: tensors
            .iter()
            .filter(|t| is_attn_v(category(t.name)))
            .count() as i64,
        n_layer: i64::from(hp.n_layer),
        i_attention_wv: 0,
        i_ffn_down: 0,
        i_ffn_gate: 0,
        i_ffn_up: 0,
        tied_embeddings: !tensors.iter().any(|t| category(t.name) == Category::Output),
    };
    let default_type = rules.file_type.default_type();
    tensors
        .iter()
        .map(|t| {
            let quantizable = allows_quantization(rules, &hp.arch, t);
            let mut choice = Choice {
                data_type: t.data_type,
                quantizable,
                requires_importance: false,
                fell_back: false,
            };
            if quantizable {
                choice.data_type = state.get_type(t, default_type, &mut choice.fell_back)?;
            }
            choice.requires_importance =
                requires_importance(t.name, choice.data_type, rules.file_type);
            Ok(choice)
        })
        .collect()
}

impl State<'_> {
    /// `llama_tensor_get_type` for a tensor that may be quantized.
    fn get_type(
        &mut self,
        t: &TensorShape<'_>,
        default_type: DataType,
        fell_back: &mut bool,
    ) -> Result<DataType> {
        let cat = category(t.name);
        if let (Some(ty), Category::TokenEmbd) = (self.rules.token_embedding_type, cat) {
            // per_layer_token_embd follows the token-embedding type unless a pattern names it.
            let mut named = false;
            if t.name == b"per_layer_token_embd.weight" {
                for (p, _) in &self.rules.tensor_types {
                    if p.search(t.name)? {
                        named = true;
                        break;
                    }
                }
            }
            if !named {
                return Ok(ty);
            }
        }
        if let (Some(ty), Category::Output) = (self.rules.output_tensor_type, cat) {
            return Ok(ty);
        }
        let mut new_type = default_type;
        if is_quantized(default_type) {
            let mut manual = None;
            for (p, ty) in &self.rules.tensor_types {
                if p.search(t.name)? {
                    manual = Some(*ty);
                    break;
                }
            }
            match manual {
                Some(ty) => new_type = ty,
                None if !self.rules.pure => new_type = self.mixture(new_type, t, cat)?,
                None => {}
            }
            let ncols = t.dims.first().copied().unwrap_or(1);
            let (ty, fb) = fallback(new_type, ncols)?;
            new_type = ty;
            *fell_back = fb;
        }
        Ok(new_type)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_ids() {
        for f in FileType::ALL {
            assert_eq!(FileType::from_id(f.id()), Some(f));
            assert_eq!(FileType::from_name(f.name()), Some(f), "{f:?}");
        }
        assert_eq!(FileType::from_name("q4_k"), Some(FileType::Q4_K_M));
        assert_eq!(FileType::from_name("15"), Some(FileType::Q4_K_M));
        assert_eq!(FileType::from_name("Q4_K_X"), None);
        assert_eq!(FileType::Q4_K_M.name(), "Q4_K_M");
    }

    #[test]
    fn order_is_by_layer_then_name() {
        let names: [&[u8]; 6] = [
            b"blk.10.attn_q.weight",
            b"token_embd.weight",
            b"blk.2.ffn_up.weight",
            b"blk.2.attn_k.weight",
            b"output.weight",
            b"blk.-x",
        ];
        let order = llama_order(&names);
        let sorted: Vec<&[u8]> = order.iter().map(|&i| names[i]).collect();
        assert_eq!(
            sorted,
            [
                &b"blk.-x"[..],
                b"output.weight",
                b"token_embd.weight",
                b"blk.2.attn_k.weight",
                b"blk.2.ffn_up.weight",
                b"blk.10.attn_q.weight"
            ]
        );
    }

    #[test]
    fn fallbacks() {
        use DataType::*;
        for (ty, ncols, want) in [
            (Q4_K, 4096, (Q4_K, false)),
            (Q4_K, 96, (Q5_0, true)),
            (Q6_K, 96, (Q8_0, true)),
            (IQ4_XS, 96, (IQ4_NL, true)),
            (Q4_K, 100, (F16, true)),
            (Q8_0, 100, (F16, true)),
        ] {
            assert_eq!(
                fallback(ty, ncols).unwrap(),
                want,
                "{ty:?} with {ncols} columns"
            );
        }
    }
}
