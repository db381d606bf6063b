//! Requantizing a model, on every platform: a llama-like model written with the writer
//! (`tests/requantize/model.rs`) turned into a uniform type and into presets, each tensor's
//! type as llama.cpp's rules choose it (tables derived from `llama-quant.cpp`), the values close
//! to the source, 1-D tensors kept, overrides by pattern, importance matrices read from files in
//! llama.cpp's format, split outputs, and no output file after a failure.

#[path = "requantize/model.rs"]
mod model;

use gguf::requantize::rules::{choose_types, Hparams, TensorShape, TypeRules};
use gguf::requantize::{
    output_paths, plan, requantize, requantize_file, type_rules, FileType, Importance, Options,
    Pattern, Progress,
};
use gguf::{DataType, ErrorCode, MetadataValue, Model, OpenOptions, Value, Writer};
use model::{Spec, SPEC};

/// The test model with 32 rows per weight (the real row lengths, fewer rows): what is written
/// and quantized here, quickly.
const SMALL: Spec = Spec {
    rows: Some(32),
    ..SPEC
};
use std::path::{Path, PathBuf};

use DataType as T;

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gguf-requantize-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn source(dir: &Path, spec: &Spec) -> PathBuf {
    let path = dir.join("source.gguf");
    model::write(&path, spec);
    path
}

fn open(path: &Path) -> Model<gguf::source::Source> {
    Model::open(path, OpenOptions::default()).unwrap()
}

fn keep_going(_: &Progress<'_>) -> bool {
    true
}

fn run(src: &Path, dst: &Path, options: &Options) -> gguf::requantize::Summary {
    let mut o = options.clone();
    o.sync = false;
    requantize_file(src, dst, &o, &mut keep_going).unwrap()
}

/// The type of every tensor of the file at `path`, by name.
fn types_of(path: &Path) -> Vec<(String, DataType)> {
    let m = open(path);
    (0..m.tensor_count())
        .map(|i| {
            let t = m.tensor_at(i).unwrap().info;
            (String::from_utf8_lossy(t.name).into_owned(), t.dtype)
        })
        .collect()
}

/// The Q4_K_M types of the test model's tensors (8 layers, grouped-query attention 4:1, FFN
/// rows of 288): attention V and FFN down get Q6_K in the layers `use_more_bits` picks (0, 3, 6
/// and 7 of 8), FFN down falls back from Q6_K to Q8_0 and from Q4_K to Q5_0, the output is
/// Q6_K, norms stay F32.
fn q4_k_m(name: &str) -> DataType {
    let layer = name
        .strip_prefix("blk.")
        .and_then(|r| r.split('.').next())
        .and_then(|n| n.parse::<u32>().ok());
    let more = |i: u32| !(1..7).contains(&i) || (i as i64 - 1) % 3 == 2;
    match (name, layer) {
        ("output.weight", _) => T::Q6_K,
        ("token_embd.weight", _) => T::Q4_K,
        (n, _) if n.ends_with("norm.weight") => T::F32,
        (n, Some(i)) if n.ends_with("attn_v.weight") => {
            if more(i) {
                T::Q6_K
            } else {
                T::Q4_K
            }
        }
        (n, Some(i)) if n.ends_with("ffn_down.weight") => {
            if more(i) {
                T::Q8_0
            } else {
                T::Q5_0
            }
        }
        _ => T::Q4_K,
    }
}

fn shapes(spec: &Spec) -> (Vec<(String, Vec<u64>)>, Vec<usize>) {
    let tensors = model::tensors(spec);
    let names: Vec<&[u8]> = tensors.iter().map(|(n, _)| n.as_bytes()).collect();
    let order = gguf::requantize::rules::llama_order(&names);
    (tensors, order)
}

fn hparams(spec: &Spec, n_expert: u32) -> Hparams {
    Hparams {
        arch: "llama".into(),
        n_layer: spec.n_layer,
        n_head: spec.n_head,
        n_head_kv: spec.n_head_kv,
        n_expert,
    }
}

fn rules(file_type: FileType) -> TypeRules {
    type_rules(&Options::new(file_type)).expect("the default options' rules")
}

/// The types the rules choose for the test model's tensors, by name.
fn chosen(spec: &Spec, rules: &TypeRules, n_expert: u32) -> Vec<(String, DataType)> {
    let (tensors, order) = shapes(spec);
    let list: Vec<TensorShape<'_>> = order
        .iter()
        .map(|&i| TensorShape {
            name: tensors[i].0.as_bytes(),
            dims: &tensors[i].1,
            data_type: T::F32,
        })
        .collect();
    let choices = choose_types(rules, &hparams(spec, n_expert), &list).unwrap();
    order
        .iter()
        .zip(choices)
        .map(|(&i, c)| (tensors[i].0.clone(), c.data_type))
        .collect()
}

fn expect(got: &[(String, DataType)], want: impl Fn(&str) -> DataType, what: &str) {
    for (name, ty) in got {
        assert_eq!(*ty, want(name), "{what}: {name}");
    }
}

fn layer(name: &str) -> Option<u32> {
    name.strip_prefix("blk.")?.split('.').next()?.parse().ok()
}

#[test]
fn rules_of_the_presets() {
    let s = &SPEC;
    expect(&chosen(s, &rules(FileType::Q4_K_M), 0), q4_k_m, "Q4_K_M");
    // Q2_K: attention V Q4_K (grouped-query 4:1), attention output Q3_K, FFN down Q3_K falling
    // back to Q4_0.
    expect(
        &chosen(s, &rules(FileType::Q2_K), 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            n if n.ends_with("attn_v.weight") => T::Q4_K,
            n if n.ends_with("attn_output.weight") => T::Q3_K,
            n if n.ends_with("ffn_down.weight") => T::Q4_0,
            _ => T::Q2_K,
        },
        "Q2_K",
    );
    // Without grouped-query attention, attention V is Q3_K.
    let mha = Spec {
        n_head_kv: 4,
        ..SPEC
    };
    expect(
        &chosen(&mha, &rules(FileType::Q2_K), 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            n if n.ends_with("attn_v.weight") || n.ends_with("attn_output.weight") => T::Q3_K,
            n if n.ends_with("ffn_down.weight") => T::Q4_0,
            _ => T::Q2_K,
        },
        "Q2_K, one KV head per head",
    );
    // Q3_K_M: attention V Q5_K in the first two layers, then Q4_K.
    expect(
        &chosen(s, &rules(FileType::Q3_K_M), 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            n if n.ends_with("attn_v.weight") => {
                if layer(n).unwrap() < 2 {
                    T::Q5_K
                } else {
                    T::Q4_K
                }
            }
            n if n.ends_with("attn_output.weight") => T::Q4_K,
            n if n.ends_with("ffn_down.weight") => T::Q5_0,
            _ => T::Q3_K,
        },
        "Q3_K_M",
    );
    // Q5_K_S: no mixture; FFN down falls back to Q5_1.
    expect(
        &chosen(s, &rules(FileType::Q5_K_S), 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            n if n.ends_with("ffn_down.weight") => T::Q5_1,
            _ => T::Q5_K,
        },
        "Q5_K_S",
    );
    // IQ4_XS without an importance matrix: attention V Q5_K, FFN down of the first layer Q5_K
    // (falling back to Q5_1), the others fall back to IQ4_NL.
    expect(
        &chosen(s, &rules(FileType::IQ4_XS), 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            n if n.ends_with("attn_v.weight") => T::Q5_K,
            n if n.ends_with("ffn_down.weight") => {
                if layer(n) == Some(0) {
                    T::Q5_1
                } else {
                    T::IQ4_NL
                }
            }
            _ => T::IQ4_XS,
        },
        "IQ4_XS",
    );
    // Q8_0 everywhere (the output stays Q8_0); Q4_0 has a Q6_K output.
    expect(
        &chosen(s, &rules(FileType::Q8_0), 0),
        |n| {
            if n.ends_with("norm.weight") {
                T::F32
            } else {
                T::Q8_0
            }
        },
        "Q8_0",
    );
    expect(
        &chosen(s, &rules(FileType::Q4_0), 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            _ => T::Q4_0,
        },
        "Q4_0",
    );
    // With an importance matrix, Q4_0's first FFN down is Q4_1.
    let mut with_imatrix = rules(FileType::Q4_0);
    with_imatrix.has_importance = true;
    expect(
        &chosen(s, &with_imatrix, 0),
        |n| match n {
            "output.weight" => T::Q6_K,
            n if n.ends_with("norm.weight") => T::F32,
            "blk.0.ffn_down.weight" => T::Q4_1,
            _ => T::Q4_0,
        },
        "Q4_0 with an importance matrix",
    );
    // F16: every weight F16, norms kept.
    expect(
        &chosen(s, &rules(FileType::F16), 0),
        |n| {
            if n.ends_with("norm.weight") {
                T::F32
            } else {
                T::F16
            }
        },
        "F16",
    );
}

#[test]
fn rules_of_the_options() {
    let s = &SPEC;
    // Tied embeddings: the token embeddings take the output's rule.
    let tied = Spec { tied: true, ..SPEC };
    let got = chosen(&tied, &rules(FileType::Q4_K_M), 0);
    assert!(got.contains(&("token_embd.weight".into(), T::Q6_K)));
    // Pure: the default type everywhere, fallbacks still taken.
    let mut pure = rules(FileType::Q4_K_M);
    pure.pure = true;
    expect(
        &chosen(s, &pure, 0),
        |n| match n {
            n if n.ends_with("norm.weight") => T::F32,
            n if n.ends_with("ffn_down.weight") => T::Q5_0,
            _ => T::Q4_K,
        },
        "pure Q4_K_M",
    );
    // Leave the output, set the token embeddings' type, patterns before the mixture.
    let mut r = rules(FileType::Q4_K_M);
    r.leave_output_tensor = true;
    r.token_embedding_type = Some(T::Q8_0);
    r.tensor_types = vec![
        (Pattern::new("attn_q").unwrap(), T::Q5_0),
        (Pattern::new(r"blk\.[0-3]\.ffn_up").unwrap(), T::Q6_K),
        (Pattern::new(r"blk\.\d+\.ffn_down").unwrap(), T::Q6_K),
    ];
    expect(
        &chosen(s, &r, 0),
        |n| match n {
            "output.weight" | "token_embd.weight" => {
                if n == "output.weight" {
                    T::F32
                } else {
                    T::Q8_0
                }
            }
            n if n.ends_with("attn_q.weight") => T::Q5_0,
            n if n.ends_with("ffn_up.weight") && layer(n).unwrap() <= 3 => T::Q6_K,
            n if n.ends_with("ffn_down.weight") => T::Q8_0, // Q6_K falls back
            n => q4_k_m(n),
        },
        "options",
    );
    // MXFP4_MOE: expert tensors MXFP4, the rest Q8_0; expert layers come from the names.
    let list = [
        ("blk.0.ffn_down_exps.weight", vec![288u64, 256, 8]),
        ("blk.0.attn_q.weight", vec![256, 256]),
        ("token_embd.weight", vec![256, 320]),
        ("output.weight", vec![256, 320]),
        ("blk.0.ffn_gate_inp.weight", vec![256, 8]),
    ];
    let shapes: Vec<TensorShape<'_>> = list
        .iter()
        .map(|(n, d)| TensorShape {
            name: n.as_bytes(),
            dims: d,
            data_type: T::F32,
        })
        .collect();
    let got: Vec<DataType> = choose_types(&rules(FileType::MXFP4_MOE), &hparams(s, 8), &shapes)
        .unwrap()
        .iter()
        .map(|c| c.data_type)
        .collect();
    assert_eq!(got, [T::MXFP4, T::Q8_0, T::Q8_0, T::Q8_0, T::F32]);
    // An expert model's layer-dependent rules need a layer in the name.
    let odd = [TensorShape {
        name: b"ffn_down_exps.weight",
        dims: &[256, 256, 8],
        data_type: T::F32,
    }];
    let e = choose_types(&rules(FileType::Q4_K_M), &hparams(s, 8), &odd).unwrap_err();
    assert!(e.to_string().contains("layer"), "{e}");
}

/// Dequantizes tensor `name` of the model at `path`.
fn floats(m: &Model<gguf::source::Source>, name: &str) -> Vec<f32> {
    let i = m.tensor_index(name).unwrap();
    let t = m.tensor_at(i).unwrap().info;
    let mut v = vec![0f32; t.n_elements as usize];
    gguf::load::tensor_to_float(m, i, 0, t.n_elements / t.dims[0], &mut v).unwrap();
    v
}

/// The largest root-mean-square error, relative to the values' own, a type may give on the
/// test model's weights.
fn bound(t: DataType) -> f64 {
    match t {
        T::F32 => 0.0,
        T::F16 | T::BF16 => 0.005,
        T::Q8_0 => 0.01,
        T::Q6_K => 0.03,
        T::Q5_0 | T::Q5_1 | T::Q5_K => 0.06,
        T::Q4_0 | T::Q4_1 | T::Q4_K | T::IQ4_NL | T::IQ4_XS => 0.12,
        T::Q3_K => 0.25,
        _ => 0.5,
    }
}

fn check_values(src: &Path, dst: &Path) {
    let (a, b) = (open(src), open(dst));
    for i in 0..b.tensor_count() {
        let t = b.tensor_at(i).unwrap().info;
        let name = String::from_utf8_lossy(t.name).into_owned();
        let (x, y) = (floats(&a, &name), floats(&b, &name));
        let err: f64 = x
            .iter()
            .zip(&y)
            .map(|(p, q)| f64::from(p - q).powi(2))
            .sum();
        let rms: f64 = x.iter().map(|p| f64::from(*p).powi(2)).sum();
        let rel = (err / rms).sqrt();
        assert!(
            rel <= bound(t.dtype),
            "{name} as {}: relative error {rel}",
            t.dtype.name()
        );
        if t.n_dims == 1 {
            assert_eq!(t.dtype, T::F32, "{name}");
            assert_eq!(x, y, "{name}");
        }
    }
}

#[test]
fn uniform_type() {
    let dir = temp_dir("uniform");
    let src = source(&dir, &SMALL);
    let dst = dir.join("q8.gguf");
    let mut o = Options::new(FileType::Q8_0);
    o.pure = true;
    let summary = run(&src, &dst, &o);
    for (name, ty) in types_of(&dst) {
        let want = if name.ends_with("norm.weight") {
            T::F32
        } else {
            T::Q8_0
        };
        assert_eq!(ty, want, "{name}");
    }
    check_values(&src, &dst);
    let n = model::tensors(&SPEC).len();
    assert_eq!(summary.tensors.len(), n);
    assert_eq!(summary.converted, n - (2 * SPEC.n_layer as usize + 1));
    assert_eq!(summary.files, vec![dst.clone()]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn preset_with_its_metadata_and_order() {
    let dir = temp_dir("preset");
    let src = source(&dir, &SMALL);
    let dst = dir.join("q4km.gguf");
    let mut calls = 0;
    let mut last = None;
    let mut o = Options::new(FileType::Q4_K_M);
    o.sync = false;
    o.threads = 2;
    let summary = requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| {
        calls += 1;
        assert_eq!(p.index + 1, calls);
        last = Some((p.count, p.bytes_in, p.total_in));
        true
    })
    .unwrap();
    let n = model::tensors(&SPEC).len();
    assert_eq!(calls, n);
    let (count, bytes_in, total_in) = last.unwrap();
    assert_eq!((count, bytes_in), (n, total_in));
    assert_eq!(summary.fell_back, SPEC.n_layer as usize);
    let types = types_of(&dst);
    expect(&types, q4_k_m, "Q4_K_M file");
    // llama.cpp's order: tensors of no layer first, then by layer, each by name.
    let names: Vec<&str> = types.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names[..5],
        [
            "output.weight",
            "output_norm.weight",
            "token_embd.weight",
            "blk.0.attn_k.weight",
            "blk.0.attn_norm.weight"
        ]
    );
    check_values(&src, &dst);
    // The metadata: the source's, then the quantization version and the file type.
    let m = open(&dst);
    let keys: Vec<String> = m
        .first()
        .metadata()
        .map(|e| String::from_utf8_lossy(e.key).into_owned())
        .collect();
    assert_eq!(
        keys[keys.len() - 2..],
        ["general.quantization_version", "general.file_type"]
    );
    assert_eq!(keys[0], "general.architecture");
    assert_eq!(m.first().get("general.file_type"), Some(Value::U32(15)));
    assert_eq!(
        m.first().get("general.quantization_version"),
        Some(Value::U32(2))
    );
    // plan() tells the same without writing.
    let planned = plan(&open(&src), &o).unwrap();
    let planned: Vec<(String, DataType)> = planned
        .iter()
        .map(|t| (String::from_utf8_lossy(&t.name).into_owned(), t.to))
        .collect();
    assert_eq!(planned, types);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn f16_source_and_overrides() {
    let dir = temp_dir("f16");
    let spec = Spec {
        weights: T::F16,
        ..SMALL
    };
    let src = source(&dir, &spec);
    let dst = dir.join("out.gguf");
    let mut o = Options::new(FileType::Q5_K_M);
    o.tensor_types = vec![
        ("ATTN_Q".to_lowercase(), T::Q8_0),
        (r"ffn_(up|gate)".into(), T::Q4_0),
    ];
    o.output_tensor_type = Some(T::Q8_0);
    run(&src, &dst, &o);
    for (name, ty) in types_of(&dst) {
        if name.ends_with("attn_q.weight") {
            assert_eq!(ty, T::Q8_0, "{name}");
        } else if name.ends_with("ffn_up.weight") || name.ends_with("ffn_gate.weight") {
            assert_eq!(ty, T::Q4_0, "{name}");
        } else if name == "output.weight" {
            assert_eq!(ty, T::Q8_0);
        }
    }
    check_values(&src, &dst);
    // A bad pattern and an unquantizable type are refused before anything is written.
    o.tensor_types = vec![("attn_(q".into(), T::Q8_0)];
    let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
    assert!(e.to_string().contains("attn_(q"), "{e}");
    o.tensor_types = vec![("attn_q".into(), T::Q8_K)];
    let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    // Quantized sources need --allow-requantize.
    let q = dir.join("q.gguf");
    run(&src, &q, &Options::new(FileType::Q8_0));
    let e = requantize_file(
        &q,
        &dir.join("qq.gguf"),
        &Options::new(FileType::Q4_0),
        &mut keep_going,
    )
    .unwrap_err();
    assert!(e.to_string().contains("--allow-requantize"), "{e}");
    let mut again = Options::new(FileType::Q4_0);
    again.allow_requantize = true;
    run(&q, &dir.join("qq.gguf"), &again);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failure_leaves_no_file() {
    let dir = temp_dir("failure");
    let src = source(&dir, &SMALL);
    let dst = dir.join("out.gguf");
    std::fs::write(&dst, b"what was there").unwrap();
    let o = Options::new(FileType::Q4_K_M);
    let e = requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| p.index < 20).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled, "{e}");
    assert_eq!(std::fs::read(&dst).unwrap(), b"what was there");
    std::fs::remove_file(&dst).unwrap();
    let e = requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| p.index < 3).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Cancelled);
    // Nothing at all is left in the directory: no output, no temporary file.
    let left: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left, vec![std::ffi::OsString::from("source.gguf")]);
    // A big-endian source is refused, clearly.
    let mut big = model::writer(&Spec {
        n_layer: 1,
        ..SMALL
    });
    big.set_byte_order(gguf::ByteOrder::Big).set_sync(false);
    let big_path = dir.join("big.gguf");
    big.write_file(&big_path).unwrap();
    let e = requantize_file(&big_path, &dst, &o, &mut keep_going).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Unsupported, "{e}");
    assert!(e.to_string().contains("big-endian"), "{e}");
    std::fs::remove_file(&big_path).unwrap();
    assert!(!dst.exists());
    // A type that needs an importance matrix, without one: refused before any file exists.
    let mut o = Options::new(FileType::Q4_K_M);
    o.tensor_types = vec![("attn_k".into(), T::IQ2_XXS)];
    let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
    assert!(e.to_string().contains("importance matrix"), "{e}");
    assert!(e.to_string().contains("blk.0.attn_k.weight"), "{e}");
    assert!(!dst.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Writes an imatrix file in llama.cpp's format: for each weight, `in_sum2` and `counts`.
fn write_imatrix(path: &Path, entries: &[(&str, Vec<f32>, f32)], keys: bool) {
    let mut w = Writer::new();
    if keys {
        w.add_metadata("general.type", MetadataValue::string("imatrix"))
            .unwrap();
        w.add_metadata(
            "imatrix.datasets",
            MetadataValue::Array(
                gguf::ValueType::String,
                vec![MetadataValue::string("wiki.train.raw")],
            ),
        )
        .unwrap();
        w.add_metadata("imatrix.chunk_count", MetadataValue::U32(100))
            .unwrap();
        w.add_metadata("imatrix.chunk_size", MetadataValue::U32(512))
            .unwrap();
    }
    for (name, sums, count) in entries {
        let bytes: Vec<u8> = sums.iter().flat_map(|x| x.to_le_bytes()).collect();
        w.add_tensor(
            format!("{name}.in_sum2"),
            &[sums.len() as u64, 1],
            T::F32,
            bytes,
        )
        .unwrap();
        w.add_tensor(
            format!("{name}.counts"),
            &[1, 1],
            T::F32,
            count.to_le_bytes().to_vec(),
        )
        .unwrap();
    }
    w.set_sync(false);
    w.write_file(path).unwrap();
}

#[test]
fn importance_matrix_from_a_file() {
    let dir = temp_dir("imatrix");
    let src = source(&dir, &SMALL);
    let path = dir.join("imatrix.gguf");
    let n = SPEC.n_embd as usize;
    let sums: Vec<f32> = (0..n).map(|i| (i % 17) as f32 * 3.0 + 0.5).collect();
    let mut entries = Vec::new();
    for l in 0..SPEC.n_layer {
        for w in ["attn_q", "attn_k", "attn_v", "ffn_up", "ffn_gate"] {
            entries.push((format!("blk.{l}.{w}.weight"), sums.clone(), 9.6f32));
        }
    }
    entries.push(("blk.0.attn_output.weight".into(), sums.clone(), 0.0));
    let e: Vec<(&str, Vec<f32>, f32)> = entries
        .iter()
        .map(|(n, s, c)| (n.as_str(), s.clone(), *c))
        .collect();
    write_imatrix(&path, &e, true);
    let m = Importance::open(&path).unwrap();
    assert_eq!(m.len(), entries.len());
    assert_eq!(m.datasets, ["wiki.train.raw"]);
    assert_eq!((m.chunk_count, m.chunk_size), (100, 512));
    // sum / round(count); a count that is not positive gives 1.
    let q = m.get("blk.3.attn_q.weight").unwrap();
    assert_eq!(q[1], sums[1] / 10.0);
    assert!(m
        .get("blk.0.attn_output.weight")
        .unwrap()
        .iter()
        .all(|&v| v == 1.0));
    let mut filtered = m.clone();
    filtered.filter(&["attn_q".into()], &["blk.1.".into()]);
    assert_eq!(filtered.len(), SPEC.n_layer as usize - 1);

    // Quantized with it: the bytes are those of the quantizer given the column weights, and
    // llama-quantize's keys are written.
    let dst = dir.join("out.gguf");
    let mut o = Options::new(FileType::Q4_K_M);
    o.importance = Some(m.clone());
    o.importance_file = Some("imatrix.gguf".into());
    run(&src, &dst, &o);
    let out = open(&dst);
    let t = out.tensor("blk.2.attn_q.weight").unwrap().info;
    assert_eq!(t.dtype, T::Q4_K);
    let x = model::values("blk.2.attn_q.weight", &[256, 32]);
    let mut want = vec![0u8; t.size as usize];
    gguf::quantize::quantize(T::Q4_K, &x, n, m.get("blk.2.attn_q.weight"), &mut want).unwrap();
    assert_eq!(t.data, &want[..]);
    let mut plain = vec![0u8; t.size as usize];
    gguf::quantize::quantize(T::Q4_K, &x, n, None, &mut plain).unwrap();
    assert_ne!(plain, want, "the weights change the bytes");
    let f = out.first();
    assert_eq!(
        f.get("quantize.imatrix.file").and_then(|v| v.as_bytes()),
        Some(&b"imatrix.gguf"[..])
    );
    assert_eq!(
        f.get("quantize.imatrix.dataset").and_then(|v| v.as_bytes()),
        Some(&b"wiki.train.raw"[..])
    );
    assert_eq!(
        f.get("quantize.imatrix.entries_count"),
        Some(Value::U32(entries.len() as u32))
    );
    assert_eq!(
        f.get("quantize.imatrix.chunks_count"),
        Some(Value::U32(100))
    );

    // Windows cannot replace a file that a handle maps: each output is closed before the next.
    drop(out);
    // A long name is cut to 127 bytes as llama-quantize cuts it, but on a character
    // boundary: 126 ASCII bytes then a two-byte character keep the 126.
    let long = format!("{}é-rest.gguf", "d/".repeat(63));
    o.importance_file = Some(long.clone());
    run(&src, &dst, &o);
    let out = open(&dst);
    let file = out
        .first()
        .get("quantize.imatrix.file")
        .and_then(|v| v.as_bytes())
        .unwrap()
        .to_vec();
    assert_eq!(file, long.as_bytes()[..126]);
    drop(out);
    let short = "é".repeat(70);
    o.importance_file = Some(short.clone());
    run(&src, &dst, &o);
    let out = open(&dst);
    let file = out
        .first()
        .get("quantize.imatrix.file")
        .and_then(|v| v.as_bytes())
        .unwrap()
        .to_vec();
    assert_eq!(file, short.as_bytes()[..126]);
    assert!(std::str::from_utf8(&file).is_ok());
    drop(out);
    o.importance_file = Some("imatrix.gguf".into());

    // A matrix whose size does not fit a tensor is refused, naming it.
    let mut wrong = m.clone();
    wrong.insert("blk.4.ffn_up.weight", vec![1.0; 7]);
    o.importance = Some(wrong);
    let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
    assert!(e.to_string().contains("blk.4.ffn_up.weight"), "{e}");
    // So is one with a value that is not finite.
    let mut nan = m.clone();
    nan.insert("blk.4.ffn_up.weight", vec![f32::NAN; n]);
    o.importance = Some(nan);
    assert!(requantize_file(&src, &dst, &o, &mut keep_going).is_err());
    // A file without the imatrix keys is not read as one.
    write_imatrix(&path, &e_one(&sums), false);
    let e = Importance::open(&path).unwrap_err();
    assert!(e.to_string().contains("imatrix.datasets"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

fn e_one(sums: &[f32]) -> Vec<(&'static str, Vec<f32>, f32)> {
    vec![("blk.0.attn_q.weight", sums.to_vec(), 1.0)]
}

#[test]
fn split_models_in_and_out() {
    let dir = temp_dir("split");
    // A source in three shards.
    let shards = model::writer(&SMALL).into_shards(30).unwrap();
    assert_eq!(shards.len(), 3);
    for (no, mut s) in shards.into_iter().enumerate() {
        s.set_sync(false);
        s.write_file(dir.join(Writer::shard_path("src", no, 3)))
            .unwrap();
    }
    let first = dir.join("src-00001-of-00003.gguf");
    // Read whole, written as one file.
    let one = dir.join("one.gguf");
    run(&first, &one, &Options::new(FileType::Q8_0));
    assert_eq!(open(&one).shards().len(), 1);
    assert!(open(&one).first().get("split.count").is_none());
    // --keep-split: the source's shards, each with its tensors.
    let mut o = Options::new(FileType::Q8_0);
    o.keep_split = true;
    let summary = run(&first, &dir.join("kept.gguf"), &o);
    let paths = output_paths(&dir.join("kept.gguf"), 3);
    assert_eq!(summary.files, paths);
    let kept = open(&paths[0]);
    assert_eq!(kept.shards().len(), 3);
    let src = open(&first);
    for s in 0..3 {
        assert_eq!(
            kept.shards()[s].tensor_count(),
            src.shards()[s].tensor_count()
        );
    }
    assert_eq!(kept.shards()[2].get("split.no"), Some(Value::U16(2)));
    assert_eq!(kept.shards()[1].get("split.count"), Some(Value::U16(3)));
    // --keep-split on a single-file source: one shard named as llama.cpp names it.
    let single = dir.join("single.gguf");
    run(&first, &single, &Options::new(FileType::Q8_0));
    let summary = run(&single, &dir.join("single-kept.gguf"), &o);
    let named = dir.join("single-kept-00001-of-00001.gguf");
    assert_eq!(summary.files, vec![named.clone()]);
    assert!(named.exists() && !dir.join("single-kept.gguf").exists());
    assert!(open(&named).first().get("split.count").is_none());
    // Split by tensor count.
    let mut o = Options::new(FileType::Q8_0);
    o.split_max_tensors = 40;
    let summary = run(&one, &dir.join("four.gguf"), &o);
    assert_eq!(summary.files.len(), 2);
    let four = open(&summary.files[1]);
    assert_eq!(four.tensor_count(), model::tensors(&SPEC).len());
    assert_eq!(four.shards()[0].tensor_count(), 40);
    check_values(&one, &summary.files[0]);
    // The whole model, requantized from an opened model too.
    let m = open(&first);
    let mut o = Options::new(FileType::Q8_0);
    o.sync = false;
    requantize(&m, &dir.join("again.gguf"), &o, &mut keep_going).unwrap();
    assert_eq!(
        std::fs::read(dir.join("again.gguf")).unwrap(),
        std::fs::read(&one).unwrap()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn command_line_arguments_and_copy() {
    use gguf::requantize::{data_type_named, parse_tensor_type};
    assert_eq!(data_type_named("q4_k").unwrap(), T::Q4_K);
    assert_eq!(data_type_named("BF16").unwrap(), T::BF16);
    assert!(data_type_named("q9_9")
        .unwrap_err()
        .to_string()
        .contains("q9_9"));
    assert_eq!(
        parse_tensor_type(r"BLK\.0\.ATTN_Q=Q8_0").unwrap(),
        (r"blk\.0\.attn_q".to_string(), T::Q8_0)
    );
    for bad in ["attn_q", "=q8_0", "attn_q=", "attn_(q=q8_0", "attn_q=q9"] {
        assert!(parse_tensor_type(bad).is_err(), "{bad}");
    }
    assert_eq!(
        Options::for_preset("q4_k").unwrap().file_type,
        FileType::Q4_K_M
    );
    assert!(Options::for_preset("Q4_K_X").is_err());
    let copy = Options::for_preset("copy").unwrap();
    assert!(copy.only_copy);

    // COPY: every tensor as it was, the source's file type kept.
    let dir = temp_dir("copy");
    let spec = Spec {
        weights: T::F16,
        ..SMALL
    };
    let src = source(&dir, &spec);
    let dst = dir.join("copy.gguf");
    let summary = run(&src, &dst, &copy);
    assert_eq!(summary.converted, 0);
    let (a, b) = (open(&src), open(&dst));
    for i in 0..b.tensor_count() {
        let t = b.tensor_at(i).unwrap().info;
        let s = a.tensor(t.name).unwrap().info;
        assert_eq!((t.dtype, t.data), (s.dtype, s.data));
    }
    assert_eq!(b.first().get("general.file_type"), Some(Value::U32(1)));
    // Windows cannot replace a file that a handle maps: close both before writing again.
    drop((a, b));
    // Without general.file_type, llama.cpp's loader guesses one from the type most tensors
    // have, with its "guessed" bit (1024): F16 weights give 1025, F32 ones 1024.
    for (weights, want) in [(T::F16, 1025), (T::F32, 1024)] {
        let mut w = model::writer(&Spec { weights, ..SMALL });
        w.remove_metadata("general.file_type");
        w.set_sync(false);
        let bare = dir.join("bare.gguf");
        w.write_file(&bare).unwrap();
        run(&bare, &dst, &copy);
        assert_eq!(
            open(&dst).first().get("general.file_type"),
            Some(Value::U32(want)),
            "{weights:?}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn an_explicit_type_whose_blocks_do_not_fit_the_rows() {
    // Rows of 320 values are not whole Q4_K blocks (256 values): llama.cpp aborts where an
    // option names that type (no fallback there); the refusal names both lengths.
    let dir = temp_dir("rows");
    let src = source(
        &dir,
        &Spec {
            n_embd: 320,
            n_layer: 1,
            ..SMALL
        },
    );
    let dst = dir.join("out.gguf");
    let mut o = Options::new(FileType::Q8_0);
    o.token_embedding_type = Some(T::Q4_K);
    let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument, "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("token_embd.weight")
            && msg.contains("320")
            && msg.contains("Q4_K")
            && msg.contains("256")
            && !msg.contains("overflow"),
        "{msg}"
    );
    assert!(!dst.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_failed_split_output_leaves_no_shard() {
    // A split output fails at each shard's commit in turn (its destination made a directory
    // after the data is written, so the rename fails), or is cancelled inside each shard: no
    // shard is left, nor any temporary file, whichever one fails.
    let dir = temp_dir("split-failure");
    let src = source(&dir, &SMALL);
    let n_tensors = model::tensors(&SMALL).len();
    let mut o = Options::new(FileType::Q8_0);
    o.sync = false;
    o.split_max_tensors = 20;
    let dst = dir.join("out.gguf");
    let n_shards = n_tensors.div_ceil(20);
    assert!(n_shards >= 4, "{n_shards}");
    let paths = output_paths(&dst, n_shards);
    let left = |except: Option<&Path>| -> Vec<String> {
        std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p != &src && Some(p.as_path()) != except)
            .map(|p| p.display().to_string())
            .collect()
    };
    for (k, blocker) in paths.iter().enumerate() {
        let blocker = blocker.clone();
        let e = requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| {
            if p.index + 1 == p.count {
                std::fs::create_dir_all(blocker.join("in-the-way")).unwrap();
            }
            true
        })
        .unwrap_err();
        assert_eq!(e.code(), ErrorCode::Io, "shard {k}: {e}");
        assert_eq!(left(Some(&blocker)), Vec::<String>::new(), "shard {k}: {e}");
        std::fs::remove_dir_all(&blocker).unwrap();
        // Cancelled while shard k is being written.
        let stop = k * 20 + 3;
        let e =
            requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| p.index < stop).unwrap_err();
        assert_eq!(e.code(), ErrorCode::Cancelled, "{e}");
        assert_eq!(left(None), Vec::<String>::new(), "shard {k}");
    }
    // And when nothing fails, every shard is there.
    let summary = requantize_file(&src, &dst, &o, &mut keep_going).unwrap();
    assert_eq!(summary.files, paths);
    assert!(paths.iter().all(|p| p.is_file()));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_row_without_an_answer_is_named_as_one_thread_names_it() {
    // A NaN at row 200 of a weight quantized to IQ3_S on 4 threads: the error names row 200
    // (each thread's rows numbered as the tensor numbers them), and no file is left.
    let dir = temp_dir("nan-row");
    let spec = Spec {
        n_layer: 1,
        rows: Some(256),
        ..SMALL
    };
    let name = "blk.0.attn_q.weight";
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    for (n, dims) in model::tensors(&spec) {
        let mut x = model::values(&n, &dims);
        if n == name {
            x[200 * 256 + 17] = f32::NAN;
        }
        let bytes: Vec<u8> = x.iter().flat_map(|v| v.to_le_bytes()).collect();
        w.add_tensor(&n, &dims, T::F32, bytes).unwrap();
    }
    w.set_sync(false);
    let src = dir.join("nan.gguf");
    w.write_file(&src).unwrap();
    let dst = dir.join("out.gguf");
    for threads in [1, 4] {
        let mut o = Options::new(FileType::Q8_0);
        o.threads = threads;
        o.tensor_types = vec![("attn_q".into(), T::IQ3_S)];
        let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains(name) && msg.contains("row 200,") && msg.contains("element 17"),
            "{threads} threads: {msg}"
        );
        assert!(!dst.exists());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_source_cut_short_meanwhile_is_an_io_error() {
    // The source truncated after the first tensor is written: an error (not a fault), and
    // nothing left beside the source.
    let dir = temp_dir("truncated");
    let src = source(&dir, &SMALL);
    let dst = dir.join("out.gguf");
    let full = std::fs::metadata(&src).unwrap().len();
    for (preset, cut) in [(FileType::Q8_0, full / 2), (FileType::F32, full / 3)] {
        model::write(&src, &SMALL);
        let mut o = Options::new(preset);
        o.sync = false;
        o.threads = 2;
        let path = src.clone();
        let e = requantize_file(&src, &dst, &o, &mut |p: &Progress<'_>| {
            if p.index == 0 {
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&path)
                    .unwrap()
                    .set_len(cut)
                    .unwrap();
            }
            true
        })
        .unwrap_err();
        assert!(
            matches!(e.code(), ErrorCode::Io | ErrorCode::Truncated),
            "{preset:?}: {e}"
        );
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, vec![std::ffi::OsString::from("source.gguf")], "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_request_to_stop_is_heard_inside_a_tensor() {
    // One tensor that takes seconds to quantize (IQ3_S, 2^20 values, debug or release): asked
    // to stop a moment after it begins, the work ends within a second, leaving no file.
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let dir = temp_dir("cancel");
    let mut w = Writer::new();
    w.add_metadata("general.architecture", MetadataValue::string("llama"))
        .unwrap();
    let x: Vec<u8> = model::values("blk.0.attn_q.weight", &[1024, 1024])
        .iter()
        .flat_map(|v| v.to_le_bytes())
        .collect();
    w.add_tensor("blk.0.attn_q.weight", &[1024, 1024], T::F32, x)
        .unwrap();
    w.set_sync(false);
    let src = dir.join("big.gguf");
    w.write_file(&src).unwrap();
    let dst = dir.join("out.gguf");
    let stop = Arc::new(AtomicBool::new(false));
    let mut o = Options::new(FileType::IQ3_S);
    o.sync = false;
    o.threads = 2;
    let flag = stop.clone();
    o.cancel = Some(gguf::requantize::Cancel::new(move || {
        flag.load(Ordering::Relaxed)
    }));
    let asked = Arc::new(std::sync::Mutex::new(None));
    let setter = {
        let (stop, asked) = (stop.clone(), asked.clone());
        std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            *asked.lock().unwrap() = Some(std::time::Instant::now());
            stop.store(true, Ordering::Relaxed);
        })
    };
    let t = std::time::Instant::now();
    let e = requantize_file(&src, &dst, &o, &mut keep_going).unwrap_err();
    let ended = std::time::Instant::now();
    setter.join().unwrap();
    assert_eq!(e.code(), ErrorCode::Cancelled, "{e}");
    let asked = asked.lock().unwrap().expect("asked during the work");
    // Within a second natively; emulated targets (tools/cross.sh runs them under qemu, tens of
    // times slower) get ten.
    let bound = if cfg!(any(target_arch = "x86_64", target_arch = "x86")) {
        1.0
    } else {
        10.0
    };
    assert!(
        ended.duration_since(asked).as_secs_f64() < bound,
        "stopped {:?} after the request ({:?} in all)",
        ended.duration_since(asked),
        t.elapsed()
    );
    assert!(!dst.exists());
    let _ = std::fs::remove_dir_all(&dir);
}
