//! The memory estimate over hostile headers: random hyperparameters of every architecture the
//! estimate knows (zero, one, odd, huge and extreme values, per-layer arrays of any length,
//! sliding-window patterns of any shape) under random context parameters (extreme contexts,
//! batches, sequence counts and layer splits). Each case is an estimate or a refusal, never a
//! panic (an overflow included: the tests build with overflow checks), and an estimate's parts
//! add up to its total.

use gguf::memory::{estimate, FlashAttn, MemoryParams};
use gguf::writer::{MetadataValue as V, Writer};
use gguf::{DataType, GgufFile, Model, ValueType};
use std::panic::{catch_unwind, AssertUnwindSafe};

mod common;

use common::rng::Rng;

const ARCHES: &[&str] = &[
    "llama",
    "qwen3",
    "qwen3moe",
    "deepseek2",
    "gemma2",
    "gemma3",
    "gemma4",
    "gpt-oss",
    "llama4",
    "cohere2",
    "mamba",
    "mamba2",
    "rwkv7",
    "granitehybrid",
    "qwen3next",
    "nemotron_h",
    "jamba",
    "lfm2",
    "falcon-h1",
];

/// The scalar keys, under the architecture's prefix.
const SCALARS: &[&str] = &[
    "block_count",
    "embedding_length",
    "context_length",
    "vocab_size",
    "attention.key_length",
    "attention.value_length",
    "attention.key_length_mla",
    "attention.value_length_mla",
    "attention.key_length_swa",
    "attention.value_length_swa",
    "attention.sliding_window",
    "attention.shared_kv_layers",
    "expert_count",
    "full_attention_interval",
    "nextn_predict_layers",
    "rope.dimension_count",
    "rope.dimension_count_swa",
    "ssm.conv_kernel",
    "ssm.inner_size",
    "ssm.state_size",
    "ssm.time_step_rank",
    "ssm.group_count",
    "shortconv.l_cache",
    "wkv.head_size",
    "token_shift_count",
];

/// The keys that are a number or one per layer.
const PER_LAYER: &[&str] = &[
    "feed_forward_length",
    "attention.head_count",
    "attention.head_count_kv",
    "expert_used_count",
    "attention.recurrent_layers",
];

fn bools(xs: Vec<bool>) -> V {
    V::Array(ValueType::Bool, xs.into_iter().map(V::Bool).collect())
}

/// The generator's choices, over the tests' xorshift.
trait Choose {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T;
    /// A count: mostly small and plausible, sometimes extreme.
    fn count(&mut self) -> u32;
}

impl Choose for Rng {
    fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
    fn count(&mut self) -> u32 {
        match self.below(8) {
            0 => self.pick(&[0, 1, 2, 3, 7]),
            1 => self.pick(&[u32::MAX, u32::MAX - 1, 1 << 31, 1 << 24, 65535]),
            2 => self.below(1 << 20) as u32,
            _ => self.pick(&[4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096]),
        }
    }
}

fn header(r: &mut Rng) -> Option<(Vec<u8>, u32)> {
    let arch = r.pick(ARCHES);
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string(arch))
        .ok()?;
    w.add_metadata("tokenizer.ggml.model", V::string("none"))
        .ok()?;
    let n_layer = match r.below(4) {
        0 => r.count(),
        _ => r.pick(&[1, 2, 4, 6, 8]),
    };
    w.add_metadata(format!("{arch}.block_count"), V::U32(n_layer))
        .ok()?;
    for key in SCALARS.iter().skip(1) {
        // The keys every architecture needs are there but in one case of sixteen; the layers
        // taken by next-token prediction are rare (most counts exceed the layers); the rest
        // are there one time in two.
        let present = match *key {
            "embedding_length" | "context_length" => r.below(16) != 0,
            "nextn_predict_layers" => r.below(8) == 0,
            _ => r.below(2) == 0,
        };
        if present {
            let x = match *key {
                "nextn_predict_layers" => r.below(3) as u32,
                _ => r.count(),
            };
            w.add_metadata(format!("{arch}.{key}"), V::U32(x)).ok()?;
        }
    }
    for key in PER_LAYER {
        match r.below(4) {
            0 => {}
            1 => {
                let len = match r.below(3) {
                    0 => r.below(12) as u32,
                    _ => n_layer.min(64),
                };
                let xs: Vec<u32> = (0..len).map(|_| r.count()).collect();
                let v = if *key == "attention.recurrent_layers" {
                    bools(xs.iter().map(|&x| x % 2 == 0).collect())
                } else {
                    V::Array(ValueType::Uint32, xs.into_iter().map(V::U32).collect())
                };
                w.add_metadata(format!("{arch}.{key}"), v).ok()?;
            }
            _ => {
                let x = r.count();
                w.add_metadata(format!("{arch}.{key}"), V::U32(x)).ok()?;
            }
        }
    }
    match r.below(3) {
        0 => {}
        1 => {
            let x = r.count();
            w.add_metadata(
                format!("{arch}.attention.sliding_window_pattern"),
                V::U32(x),
            )
            .ok()?;
        }
        _ => {
            let len = r.below(10) as usize;
            let xs: Vec<bool> = (0..len).map(|_| r.below(2) == 0).collect();
            w.add_metadata(
                format!("{arch}.attention.sliding_window_pattern"),
                bools(xs),
            )
            .ok()?;
        }
    }
    if r.below(2) == 0 {
        let f = r.pick(&[0.0f32, -1.0, 1e-30, 1e30, f32::INFINITY, f32::NAN, 10000.0]);
        w.add_metadata(format!("{arch}.rope.freq_base"), V::F32(f))
            .ok()?;
        w.add_metadata(format!("{arch}.rope.scaling.factor"), V::F32(f))
            .ok()?;
    }
    w.add_tensor("token_embd.weight", &[4, 8], DataType::F32, vec![0; 128])
        .ok()?;
    w.add_tensor("blk.0.attn_norm.weight", &[4], DataType::F32, vec![0; 16])
        .ok()?;
    w.add_tensor("output.weight", &[4, 8], DataType::F16, vec![0; 64])
        .ok()?;
    Some((w.to_bytes().ok()?, n_layer))
}

fn params(r: &mut Rng) -> MemoryParams {
    let d = MemoryParams::default();
    let types = [
        DataType::F16,
        DataType::F32,
        DataType::BF16,
        DataType::Q8_0,
        DataType::Q4_0,
        DataType::Q5_1,
        DataType::IQ4_NL,
    ];
    MemoryParams {
        n_ctx: if r.below(3) == 0 { 0 } else { r.count() },
        n_batch: if r.below(3) == 0 {
            d.n_batch
        } else {
            r.count()
        },
        n_ubatch: if r.below(3) == 0 {
            d.n_ubatch
        } else {
            r.count()
        },
        n_seq_max: if r.below(2) == 0 { 1 } else { r.count() },
        type_k: r.pick(&types),
        type_v: r.pick(&types),
        flash_attn: r.pick(&[FlashAttn::Auto, FlashAttn::On, FlashAttn::Off]),
        swa_full: r.below(2) == 0,
        kv_unified: r.below(2) == 0,
        n_gpu_layers: r.pick(&[0, -1, 1, 2, 3, i32::MAX, i32::MIN, 1000]),
        offload_kqv: r.below(2) == 0,
    }
}

#[test]
fn hostile_headers_and_parameters_are_estimated_or_refused_never_a_panic() {
    let cases = common::rounds(40_000);
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut ok, mut refused) = (0, 0);
    for case in 0..cases {
        let Some((bytes, n_layer)) = header(&mut r) else {
            continue;
        };
        let file = GgufFile::from_bytes(bytes).expect("the writer's own file opens");
        let model = Model::single(file, "m.gguf".into()).expect("one file is a model");
        let p = params(&mut r);
        let result = catch_unwind(AssertUnwindSafe(|| estimate(&model, &p)));
        match result {
            Err(_) => panic!("case {case} panicked: params {p:?}"),
            Ok(Err(_)) => refused += 1,
            Ok(Ok(e)) => {
                ok += 1;
                assert_eq!(
                    e.total,
                    e.weights + e.k + e.v + e.recurrent + e.output + e.compute,
                    "case {case}"
                );
                // The devices' buffers hold each K, V and state tensor padded to 32 bytes: two
                // tensors a layer for the caches, two for the states.
                assert!(e.cpu + e.gpu >= e.total, "case {case}: {e:?}");
                let padding = e.cpu + e.gpu - e.total;
                assert!(padding < 4 * 32 * u64::from(n_layer), "case {case}: {e:?}");
            }
        }
    }
    // Both outcomes are reached: the generator makes estimable headers as well as hostile ones.
    assert!(ok > cases / 50, "{ok} estimates, {refused} refusals");
    assert!(refused > cases / 50, "{ok} estimates, {refused} refusals");
}
