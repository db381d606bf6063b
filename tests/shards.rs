//! Split models: every shard of `name-0000i-of-0000N.gguf` opened as one model, from any shard.
//!
//! * Shards written by the reference (gguf-py's `GGUFWriter` with `split_max_tensors`,
//!   `split_max_size` and `small_first_shard`, through `tests/conformance/generate.py split`)
//!   open from each shard, through the Rust and the C API, as the unsplit model the script also
//!   writes, tensor by tensor.
//! * Our own `Writer::into_shards` round trip, for many shard sizes; the reference reads our
//!   shards' split keys with the types it writes itself.
//! * Broken shard sets, with their exact error codes and the shard they name.
//! * Five sparse shards with more than 200 GiB of tensor data each: tensors at offsets above
//!   4 GiB in every shard read back, and upload plans over them (a 1 GiB limit) place every
//!   tensor or report it oversized.
//!
//! The reference interpreter is `$GGUF_PYTHON`, else `<repo>/.venv/bin/python` (`make venv`),
//! found by `common::reference_python`; without it the reference tests fail, never skip.

mod common;

use common::canon::{read_json, sha256};
use common::{last_error, run_reference};
use gguf::ffi::*;
use gguf::source::Source;
use gguf::{DataType, ErrorCode, MetadataValue as V, Model, OpenOptions, Paging, Writer};
use serde_json::Value as Json;
use std::ffi::{CStr, CString};
use std::io::{Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

const GIB: u64 = 1 << 30;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("shards")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn open(path: &Path) -> gguf::Result<Model<Source>> {
    Model::open(path, OpenOptions::default())
}

fn open_single(path: &Path) -> Model<Source> {
    let options = OpenOptions {
        single_shard: true,
        ..Default::default()
    };
    Model::open(path, options).unwrap()
}

/// Writes a model of `n` tensors split into shards of `per_shard`; returns the shard paths.
fn write_split(name: &str, n: usize, per_shard: usize) -> Vec<PathBuf> {
    let d = dir(name);
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("llama"))
        .unwrap();
    for i in 0..n {
        w.add_tensor(format!("t.{i}"), &[8], DataType::F32, vec![i as u8; 32])
            .unwrap();
    }
    write_shards(&d, "model", w.into_shards(per_shard).unwrap())
}

/// Writes each shard to `dir/prefix-0000i-of-0000N.gguf`; returns the paths.
fn write_shards(dir: &Path, prefix: &str, shards: Vec<Writer>) -> Vec<PathBuf> {
    let count = shards.len();
    shards
        .iter()
        .enumerate()
        .map(|(no, s)| {
            let path = dir.join(Writer::shard_path(prefix, no, count));
            s.write_file(&path).unwrap();
            path
        })
        .collect()
}

#[test]
fn any_shard_opens_the_whole_model() {
    let paths = write_split("whole", 11, 3);
    assert_eq!(paths.len(), 4);
    for path in &paths {
        let m = open(path).unwrap();
        assert_eq!(m.shards().len(), 4);
        assert_eq!(m.tensor_count(), 11);
        assert!(m.first().get("general.architecture").is_some());
        for i in 0..11 {
            let t = m.tensor(format!("t.{i}")).unwrap();
            assert_eq!(t.shard, i / 3);
            assert!(t.info.data.iter().all(|&b| b == i as u8));
        }
    }
    let single = open_single(&paths[2]);
    assert_eq!((single.shards().len(), single.tensor_count()), (1, 3));
}

// ---------------------------------------------------------------------------------------------
// Comparing a split model with the same model unsplit.

/// Keys every shard of a split model carries.
const SPLIT_KEYS: [&str; 3] = ["split.no", "split.count", "split.tensors.count"];

/// `split` (opened from any shard) holds exactly the tensors of `whole`, in order, with the
/// same bytes, and its metadata is `whole`'s plus the split keys; `shards[i]` names the
/// tensors of shard `i`.
fn assert_same_model(split: &Model<Source>, whole: &Model<Source>, shards: &[Vec<String>]) {
    assert_eq!(split.shards().len(), shards.len());
    assert_eq!(split.tensor_count(), whole.tensor_count());
    let mut i = 0;
    for (s, names) in shards.iter().enumerate() {
        assert_eq!(split.shard_starts()[s], i, "first tensor of shard {s}");
        assert_eq!(split.shards()[s].tensor_count(), names.len(), "shard {s}");
        for name in names {
            let (a, b) = (split.tensor_at(i).unwrap(), whole.tensor_at(i).unwrap());
            assert_eq!(a.shard, s, "{name}");
            assert_eq!(a.info.name, name.as_bytes());
            assert_eq!(a.info.name, b.info.name);
            assert_eq!(
                (a.info.n_dims, a.info.dims, a.info.dtype, a.info.n_elements),
                (b.info.n_dims, b.info.dims, b.info.dtype, b.info.n_elements),
                "{name}"
            );
            assert_eq!(a.info.size, b.info.size, "{name}");
            assert_eq!(a.info.data, b.info.data, "{name}");
            assert_eq!(split.tensor_index(name), Some(i));
            // Offsets are the shard's own.
            let file = &split.shards()[s];
            assert_eq!(a.info.file_offset, file.data_offset() + a.info.offset);
            assert!(a.info.file_offset + a.info.size <= file.file_size());
            i += 1;
        }
    }
    let n = shards.len() as i64;
    for (s, file) in split.shards().iter().enumerate() {
        let int = |key: &str| {
            let v = file.get(key)?;
            v.as_i64()
                .or_else(|| v.as_u64().and_then(|u| i64::try_from(u).ok()))
        };
        assert_eq!(int("split.no"), Some(s as i64));
        assert_eq!(int("split.count"), Some(n));
        assert_eq!(
            int("split.tensors.count"),
            Some(whole.tensor_count() as i64)
        );
        if s > 0 {
            assert_eq!(
                file.metadata_count(),
                3,
                "shard {s} holds only the split keys"
            );
        }
    }
    let first: Vec<_> = split
        .first()
        .metadata()
        .filter(|e| !SPLIT_KEYS.iter().any(|k| e.key == k.as_bytes()))
        .collect();
    let all: Vec<_> = whole.first().metadata().collect();
    assert_eq!(first, all, "the first shard's metadata is the model's");
}

/// The same comparison through the C API: `path` (any shard) against the unsplit `whole`.
fn assert_same_through_c(path: &Path, whole: &Path, shards: &[Vec<String>]) {
    let c = |p: &Path| CString::new(p.to_str().unwrap()).unwrap();
    let (cp, cw) = (c(path), c(whole));
    // SAFETY: both handles are used only below, with pointers they returned, and closed.
    unsafe {
        let h = gguf_open(cp.as_ptr());
        let w = gguf_open(cw.as_ptr());
        assert!(!h.is_null() && !w.is_null(), "{}", last_error());
        assert_eq!(gguf_shard_count(h) as usize, shards.len());
        assert_eq!(gguf_tensor_count(h), gguf_tensor_count(w));
        let mut k = 0u64;
        for (s, names) in shards.iter().enumerate() {
            let shard = &*gguf_get_shard(h, s as u32);
            assert_eq!(shard.first_tensor, k);
            assert_eq!(shard.tensor_count as usize, names.len());
            let shard_path = CStr::from_ptr(shard.path).to_str().unwrap();
            assert_eq!(Path::new(shard_path).parent(), path.parent());
            for name in names {
                let a = &*gguf_get_tensor_by_index(h, k);
                let b = &*gguf_get_tensor(w, CString::new(name.as_str()).unwrap().as_ptr());
                assert_eq!(CStr::from_ptr(a.name).to_str().unwrap(), name);
                assert_eq!(a.shard as usize, s);
                assert_eq!(
                    (a.dims, a.dtype, a.size_bytes),
                    (b.dims, b.dtype, b.size_bytes)
                );
                let data = gguf_tensor_data(h, a).cast::<u8>();
                assert_eq!(data, shard.base.add(a.file_offset as usize));
                let len = a.size_bytes as usize;
                let other = gguf_tensor_data(w, b).cast::<u8>();
                if len > 0 {
                    assert_eq!(
                        std::slice::from_raw_parts(data, len),
                        std::slice::from_raw_parts(other, len),
                        "{name}"
                    );
                }
                k += 1;
            }
        }
        // Every tensor is placed, in a view of its own shard.
        let plan = &*gguf_plan_upload(h, u64::MAX, 0);
        assert_eq!(plan.n_oversized, 0);
        let views = std::slice::from_raw_parts(plan.views, plan.n_views as usize);
        let placements = std::slice::from_raw_parts(plan.placements, plan.n_tensors as usize);
        for (k, p) in placements.iter().enumerate() {
            let info = &*gguf_get_tensor_by_index(h, k as u64);
            let view = &views[p.view as usize];
            assert_eq!(view.shard, info.shard);
            assert_eq!(view.file_offset + p.offset, info.file_offset);
        }
        gguf_close(w);
        gguf_close(h);
    }
}

// ---------------------------------------------------------------------------------------------
// The reference writer's shards.

fn names_of(set: &Json) -> Vec<Vec<String>> {
    set["shards"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            s.as_array()
                .unwrap()
                .iter()
                .map(|n| n.as_str().unwrap().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn shards_written_by_the_reference_open_as_the_whole_model() {
    let d = dir("reference");
    run_reference(["split".as_ref(), d.as_os_str(), "1".as_ref()]);
    let manifest = read_json(&d.join("split.json"));
    let whole_path = d.join("whole.gguf");
    let whole = open(&whole_path).unwrap();
    assert_eq!(whole.shards().len(), 1);

    // The unsplit model is what the script wrote: names, shapes, types, sha256 of the data.
    let expected = manifest["tensors"].as_array().unwrap();
    assert_eq!(whole.tensor_count(), expected.len());
    for (i, e) in expected.iter().enumerate() {
        let t = whole.tensor_at(i).unwrap().info;
        assert_eq!(t.name, e["name"].as_str().unwrap().as_bytes());
        assert_eq!(u64::from(t.dtype.id()), e["type"].as_u64().unwrap());
        let shape: Vec<u64> = e["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(&t.dims[..t.n_dims as usize], &shape[..]);
        assert_eq!(sha256(t.data), e["sha256"].as_str().unwrap());
    }

    let sets = manifest["sets"].as_object().unwrap();
    assert_eq!(sets.len(), 4);
    let mut shapes = Vec::new();
    for (name, set) in sets {
        if name == "whole" {
            continue;
        }
        let files: Vec<PathBuf> = set["files"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| d.join(f.as_str().unwrap()))
            .collect();
        let shards = names_of(set);
        assert!(files.len() > 1, "{name}: {files:?}");
        shapes.push(shards.iter().map(Vec::len).collect::<Vec<_>>());
        for path in &files {
            let split = open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            assert_same_model(&split, &whole, &shards);
            let names = split.shard_names();
            for (f, n) in files.iter().zip(names) {
                assert_eq!(Path::new(n), f.as_path());
            }
            assert_same_through_c(path, &whole_path, &shards);
        }
        // Each shard alone.
        for (path, names) in files.iter().zip(&shards) {
            let alone = open_single(path);
            assert_eq!(alone.tensor_count(), names.len());
        }
    }
    // The three splits differ: by count, by size (uneven), with an empty first shard.
    assert!(shapes.contains(&vec![4, 4, 4, 4, 1]), "{shapes:?}");
    assert!(shapes.iter().any(|s| s[0] == 0), "{shapes:?}");
    assert_eq!(shapes.len(), 3);
}

// ---------------------------------------------------------------------------------------------
// Our own writer's shards.

fn varied_model(n: usize) -> Writer {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("llama"))
        .unwrap();
    w.add_metadata("general.name", V::string("round trip"))
        .unwrap();
    w.add_metadata(
        "test.floats",
        V::Array(gguf::ValueType::Float32, vec![V::F32(0.5)]),
    )
    .unwrap();
    let types = [DataType::F32, DataType::Q4_0, DataType::I8, DataType::Q6_K];
    for i in 0..n {
        let dtype = types[i % types.len()];
        let dims = [dtype.block_elems() * (1 + i as u64 % 5), 1 + i as u64 % 3];
        let size = dtype.tensor_bytes(&dims).unwrap() as usize;
        let data = (0..size).map(|j| (i * 31 + j * 7) as u8).collect();
        w.add_tensor(format!("blk.{i}.w"), &dims, dtype, data)
            .unwrap();
    }
    w
}

#[test]
fn into_shards_round_trips_from_every_shard() {
    let n = 23;
    let d = dir("round_trip");
    let whole_path = d.join("whole.gguf");
    varied_model(n).write_file(&whole_path).unwrap();
    let whole = open(&whole_path).unwrap();
    for per_shard in [1, 2, 5, 22, 23, 40] {
        let sub = d.join(format!("per{per_shard}"));
        std::fs::create_dir_all(&sub).unwrap();
        let paths = write_shards(&sub, "m", varied_model(n).into_shards(per_shard).unwrap());
        assert_eq!(paths.len(), n.div_ceil(per_shard));
        let shards: Vec<Vec<String>> = (0..paths.len())
            .map(|s| {
                (s * per_shard..((s + 1) * per_shard).min(n))
                    .map(|i| format!("blk.{i}.w"))
                    .collect()
            })
            .collect();
        if paths.len() == 1 {
            // One shard of one: a split model of a single file still opens (and says so).
            let m = open(&paths[0]).unwrap();
            assert_eq!((m.shards().len(), m.tensor_count()), (1, n));
            continue;
        }
        for path in &paths {
            assert_same_model(&open(path).unwrap(), &whole, &shards);
        }
        assert_same_through_c(&paths[paths.len() / 2], &whole_path, &shards);
    }
    assert_eq!(
        varied_model(3).into_shards(0).unwrap_err().code(),
        ErrorCode::InvalidArgument
    );
    // A model without tensors is one shard holding the metadata.
    let empty = Writer::new().into_shards(4).unwrap();
    assert_eq!(empty.len(), 1);
}

#[test]
fn the_reference_reads_our_split_keys_as_it_writes_them() {
    let d = dir("ours_in_reference");
    let paths = write_shards(&d, "ours", varied_model(7).into_shards(3).unwrap());
    run_reference(std::iter::once("dump".as_ref()).chain(paths.iter().map(|p| p.as_os_str())));
    for (no, path) in paths.iter().enumerate() {
        let json = read_json(Path::new(&format!("{}.json", path.display())));
        let value = |key: &str| {
            json["metadata"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["_key"] == key)
                .map(|m| m["value"].clone())
                .unwrap_or_else(|| panic!("{key} missing in {}", path.display()))
        };
        // The types gguf-py's GGUFWriter gives them (and llama.cpp's gguf-split).
        assert_eq!(
            value("split.no"),
            serde_json::json!({"type": "UINT16", "value": no})
        );
        assert_eq!(
            value("split.count"),
            serde_json::json!({"type": "UINT16", "value": 3})
        );
        assert_eq!(
            value("split.tensors.count"),
            serde_json::json!({"type": "INT32", "value": 7})
        );
        let tensors = json["tensors"].as_array().unwrap().len();
        assert_eq!(tensors, if no < 2 { 3 } else { 1 });
    }
}

// ---------------------------------------------------------------------------------------------
// Broken shard sets.

/// A model of `n` tiny tensors `{stem}.{i}` in shards of `per_shard`.
fn tiny(stem: &str, n: usize, per_shard: usize) -> Vec<Writer> {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("llama"))
        .unwrap();
    for i in 0..n {
        w.add_tensor(format!("{stem}.{i}"), &[4], DataType::I8, vec![i as u8; 4])
            .unwrap();
    }
    w.into_shards(per_shard).unwrap()
}

/// Opening `path` fails with `code`, naming the file `culprit`, the message containing `what`.
fn assert_fails(path: &Path, code: ErrorCode, culprit: &Path, what: &str) {
    let e = match open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(e) => e,
    };
    assert_eq!(e.code(), code, "{e}");
    // As messages show paths: exactly, with `\` escaped (so doubled on Windows).
    let shown = gguf::error::path_text(culprit);
    assert_eq!(e.path(), Some(shown.as_str()), "{e}");
    assert_eq!(e.offset(), None, "{e}");
    assert!(e.message().contains(what), "{e}");
}

#[test]
fn broken_shard_sets_fail_with_exact_codes() {
    let d = dir("broken");
    let path = |name: &str| d.join(name);

    // A missing shard: IO, naming it.
    let mut shards = tiny("m", 6, 2);
    shards.remove(1);
    for (no, s) in [(0, &shards[0]), (2, &shards[1])] {
        s.write_file(path(&Writer::shard_path("missing", no, 3)))
            .unwrap();
    }
    let missing = path("missing-00002-of-00003.gguf");
    for p in ["missing-00001-of-00003.gguf", "missing-00003-of-00003.gguf"] {
        assert_fails(&path(p), ErrorCode::Io, &missing, "cannot open");
    }

    // A shard disagreeing on split.count.
    let mut shards = tiny("c", 6, 2);
    shards[2].set_metadata("split.count", V::U16(4)).unwrap();
    let p = write_shards(&d, "count", shards);
    assert_fails(
        &p[0],
        ErrorCode::ShardMismatch,
        &p[2],
        "expected split.count 3 like the other shards, found 4",
    );
    let shard_key = |p: &Path| match open(p).err().map(|e| e.kind().clone()) {
        Some(gguf::ErrorKind::ShardMismatch { key, .. }) => key,
        other => panic!("{other:?}"),
    };
    assert_eq!(shard_key(&p[0]), Some("split.count"));
    // Named as a shard of 4: the file name is the problem.
    assert_eq!(shard_key(&p[2]), None);
    assert_fails(
        &p[2],
        ErrorCode::ShardMismatch,
        &p[2],
        "-00003-of-00004.gguf",
    );

    // A shard without the split keys at all.
    let mut shards = tiny("k", 4, 2);
    for key in SPLIT_KEYS {
        assert!(shards[1].remove_metadata(key));
    }
    let p = write_shards(&d, "nokeys", shards);
    assert_fails(
        &p[0],
        ErrorCode::ShardMismatch,
        &p[1],
        "expected split.no 1, but split.no is missing",
    );
    assert_eq!(
        open(&p[1]).unwrap().shards().len(),
        1,
        "alone, it is a whole model"
    );

    // Shards swapped: the file named 00001 says it is shard 2.
    let shards = tiny("s", 4, 2);
    let p = write_shards(&d, "swapped", shards);
    let tmp = path("swap.tmp");
    std::fs::rename(&p[0], &tmp).unwrap();
    std::fs::rename(&p[1], &p[0]).unwrap();
    std::fs::rename(&tmp, &p[1]).unwrap();
    assert_fails(
        &p[0],
        ErrorCode::ShardMismatch,
        &p[0],
        "-00002-of-00002.gguf",
    );

    // split.no outside split.count.
    let mut shards = tiny("o", 4, 2);
    shards[0].set_metadata("split.no", V::U16(7)).unwrap();
    let p = write_shards(&d, "outside", shards);
    assert_fails(&p[0], ErrorCode::ShardMismatch, &p[0], "split.no is 7");
    assert_fails(
        &p[1],
        ErrorCode::ShardMismatch,
        &p[0],
        "expected split.no 0, found 7",
    );

    // split.tensors.count wrong, in one shard or in all.
    let mut shards = tiny("t", 4, 2);
    shards[1]
        .set_metadata("split.tensors.count", V::I32(5))
        .unwrap();
    let p = write_shards(&d, "tensors", shards);
    for q in &p {
        assert_fails(
            q,
            ErrorCode::ShardMismatch,
            &p[1],
            "split.tensors.count is 5, but the shards hold 4 tensors",
        );
        assert_eq!(shard_key(q), Some("split.tensors.count"));
    }
    let mut shards = tiny("u", 4, 2);
    for s in &mut shards {
        s.set_metadata("split.tensors.count", V::I32(3)).unwrap();
    }
    let p = write_shards(&d, "alltensors", shards);
    assert_fails(
        &p[1],
        ErrorCode::ShardMismatch,
        &p[0],
        "split.tensors.count is 3",
    );

    // The same tensor in two shards.
    let shards: Vec<Writer> = (0..3u8)
        .map(|no| {
            let mut w = Writer::new();
            w.add_metadata("split.no", V::U16(no.into())).unwrap();
            w.add_metadata("split.count", V::U16(3)).unwrap();
            w.add_metadata("split.tensors.count", V::I32(5)).unwrap();
            w.add_tensor(format!("own.{no}"), &[4], DataType::I8, vec![no; 4])
                .unwrap();
            if no != 1 {
                w.add_tensor("dup.weight", &[4], DataType::I8, vec![no; 4])
                    .unwrap();
            }
            w
        })
        .collect();
    let p = write_shards(&d, "dup", shards);
    for q in &p {
        assert_fails(
            q,
            ErrorCode::DuplicateTensor,
            &p[2],
            "tensor 'dup.weight' is in shard 1",
        );
    }

    // A shard renamed out of the pattern.
    let renamed = path("renamed.gguf");
    tiny("r", 4, 2)[0].write_file(&renamed).unwrap();
    assert_fails(
        &renamed,
        ErrorCode::ShardMismatch,
        &renamed,
        "-00001-of-00002.gguf",
    );
    assert_eq!(open_single(&renamed).tensor_count(), 2);
    // ... or to another model's name: its siblings are not there.
    let other = path("other-00001-of-00002.gguf");
    std::fs::rename(&renamed, &other).unwrap();
    assert_fails(
        &other,
        ErrorCode::Io,
        &path("other-00002-of-00002.gguf"),
        "cannot open",
    );
}

/// Split keys that mislead: too many shards, a missing or mistyped shard number. Each message
/// says what is wrong with the key, not a made-up number.
#[test]
fn bad_split_keys_are_named_for_what_they_are() {
    let d = dir("split_keys");
    let one = |name: &str, set: &dyn Fn(&mut Writer)| {
        let mut w = tiny(name, 2, 2).remove(0);
        set(&mut w);
        let path = d.join(format!("{name}-00001-of-00003.gguf"));
        w.write_file(&path).unwrap();
        path
    };
    let p = one("many", &|w| {
        w.set_metadata("split.count", V::U32(99999)).unwrap();
    });
    assert_fails(
        &p,
        ErrorCode::ShardMismatch,
        &p,
        "split.count is 99999, more than the 65535 shards a split model can have",
    );
    let p = one("nono", &|w| {
        w.set_metadata("split.count", V::U16(3)).unwrap();
        assert!(w.remove_metadata("split.no"));
    });
    assert_fails(
        &p,
        ErrorCode::ShardMismatch,
        &p,
        "split.count is 3, so this is a shard of a split model, but split.no is missing",
    );
    let p = one("typed", &|w| {
        w.set_metadata("split.count", V::U16(3)).unwrap();
        w.set_metadata("split.no", V::string("0")).unwrap();
    });
    assert_fails(
        &p,
        ErrorCode::ShardMismatch,
        &p,
        "but split.no has type STRING, not an integer",
    );
    let p = one("negative", &|w| {
        w.set_metadata("split.count", V::U16(3)).unwrap();
        w.set_metadata("split.no", V::I32(-1)).unwrap();
    });
    assert_fails(
        &p,
        ErrorCode::ShardMismatch,
        &p,
        "split.no is -1, outside the 3 shards of split.count (0 to 2)",
    );
}

/// A split model in a directory (and under a model name) that is not UTF-8 opens as one model
/// from every shard: sibling paths are built from the given path's bytes. The C API hands back
/// each shard's exact path; messages show the bytes escaped. Unix only: Windows file names are
/// Unicode, so no such name exists there.
#[cfg(unix)]
#[test]
fn a_split_model_under_a_non_utf8_path_opens_whole() {
    use std::os::unix::ffi::OsStrExt;
    let d = dir("non_utf8").join(std::ffi::OsStr::from_bytes(b"caf\xe9-\xff"));
    std::fs::create_dir_all(&d).unwrap();
    let mut w = Writer::new();
    for i in 0..5u8 {
        w.add_tensor(format!("t.{i}"), &[4], DataType::I8, vec![i; 4])
            .unwrap();
    }
    let prefix = std::ffi::OsStr::from_bytes(b"m\xe9");
    let shards = w.into_shards(2).unwrap();
    let paths: Vec<PathBuf> = (0..shards.len())
        .map(|no| {
            let mut name = prefix.to_os_string();
            name.push(Writer::shard_path("", no, shards.len()));
            let path = d.join(name);
            shards[no].write_file(&path).unwrap();
            path
        })
        .collect();
    assert_eq!(paths.len(), 3);
    for path in &paths {
        let m = open(path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((m.shards().len(), m.tensor_count()), (3, 5));
        assert_eq!(m.shard_paths(), &paths[..]);
        for i in 0..5u8 {
            let t = m.tensor(format!("t.{i}")).unwrap();
            assert_eq!(t.info.data, [i; 4]);
        }
        let c_path = CString::new(path.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path; the handle is closed below.
        unsafe {
            let h = gguf_open(c_path.as_ptr());
            assert!(!h.is_null(), "{}", last_error());
            assert_eq!(gguf_shard_count(h), 3);
            for (i, p) in paths.iter().enumerate() {
                let shard = &*gguf_get_shard(h, i as u32);
                assert_eq!(
                    CStr::from_ptr(shard.path).to_bytes(),
                    p.as_os_str().as_bytes()
                );
            }
            gguf_close(h);
        }
    }
    // A missing sibling is named with its bytes escaped.
    std::fs::remove_file(&paths[1]).unwrap();
    let e = open(&paths[0]).err().unwrap();
    assert_eq!(e.code(), ErrorCode::Io);
    let shown = format!(
        "{}/caf\\xe9-\\xff/m\\xe9-00002-of-00003.gguf",
        d.parent().unwrap().display()
    );
    assert_eq!(e.path(), Some(shown.as_str()), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Five sparse shards of more than 200 GiB each.

/// The small tensors of one shard: names and bytes.
type Tails = Vec<(String, Vec<u8>)>;

/// Per shard: a 200 GiB tensor (never written: the file is sparse), then three 64-byte
/// tensors whose bytes are written, above 200 GiB. Returns the shard paths and, per shard, the
/// small tensors' names and bytes.
fn sparse_shards(d: &Path) -> (Vec<PathBuf>, Vec<Tails>) {
    let mut w = Writer::new();
    w.add_metadata("general.architecture", V::string("llama"))
        .unwrap();
    let mut small = Vec::new();
    for s in 0..5u8 {
        // 2^27 x 400 F32 = 200 GiB.
        w.add_tensor_info(format!("huge.{s}"), &[1 << 27, 400], DataType::F32)
            .unwrap();
        let mut tails = Vec::new();
        for i in 0..3u8 {
            let name = format!("tail.{s}.{i}");
            let data: Vec<u8> = (0..64u8).map(|b| b ^ (s * 16 + i)).collect();
            w.add_tensor_info(&name, &[16], DataType::F32).unwrap();
            tails.push((name, data));
        }
        small.push(tails);
    }
    let shards = w.into_shards(4).unwrap();
    assert_eq!(shards.len(), 5);
    let count = shards.len();
    let mut paths = Vec::new();
    for (no, shard) in shards.iter().enumerate() {
        let path = d.join(Writer::shard_path("sparse", no, count));
        let header = shard.header_bytes().unwrap();
        let offsets = shard.tensor_offsets().unwrap();
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&header).unwrap();
        for ((_, data), offset) in small[no].iter().zip(&offsets[1..]) {
            f.seek(SeekFrom::Start(header.len() as u64 + offset))
                .unwrap();
            f.write_all(data).unwrap();
        }
        let end = header.len() as u64 + offsets[3] + 64;
        f.set_len(end).unwrap();
        paths.push(path);
    }
    (paths, small)
}

#[test]
fn five_sparse_shards_of_200_gib_open_and_plan() {
    let d = dir("sparse");
    let (paths, small) = sparse_shards(&d);
    for path in &paths {
        assert!(std::fs::metadata(path).unwrap().len() > 200 * GIB);
    }
    // A 32-bit process cannot map a 200 GiB shard: it reads every shard by position instead
    //, tensor data through `load::read_tensor`.
    if usize::BITS == 32 {
        let m = open(&paths[2]).unwrap();
        assert_eq!((m.shards().len(), m.tensor_count()), (5, 20));
        assert!(m.shards().iter().all(|s| !s.source().in_memory()));
        for tails in &small {
            for (name, data) in tails {
                let i = m.tensor_index(name).unwrap();
                let mut got = vec![0u8; data.len()];
                gguf::load::read_tensor(&m, i, 0, &mut got).unwrap();
                assert_eq!(&got[..], &data[..]);
            }
        }
        return;
    }
    for path in [&paths[0], &paths[2], &paths[4]] {
        let m = open(path).unwrap();
        assert_eq!((m.shards().len(), m.tensor_count()), (5, 20));
        for (s, tails) in small.iter().enumerate() {
            let huge = m.tensor(format!("huge.{s}")).unwrap();
            assert_eq!((huge.shard, huge.info.size), (s, 200 * GIB));
            for (name, data) in tails {
                let t = m.tensor(name).unwrap();
                assert_eq!(t.shard, s);
                assert!(t.info.offset >= 200 * GIB && t.info.file_offset > 4 * GIB);
                assert_eq!(t.info.data, &data[..]);
            }
        }
    }

    // The C API, and plans over 1 TiB of mappings.
    let c_path = CString::new(paths[3].to_str().unwrap()).unwrap();
    // SAFETY: the handle is used only below, with pointers it returned, and closed at the end.
    unsafe {
        let h = gguf_open(c_path.as_ptr());
        assert!(!h.is_null(), "{}", last_error());
        assert_eq!(gguf_shard_count(h), 5);
        for (s, tails) in small.iter().enumerate() {
            let shard = &*gguf_get_shard(h, s as u32);
            assert!(shard.file_size > 200 * GIB);
            for (name, data) in tails {
                let n = CString::new(name.as_str()).unwrap();
                let info = &*gguf_get_tensor(h, n.as_ptr());
                assert_eq!(info.shard as usize, s);
                assert!(info.file_offset > 4 * GIB);
                let ptr = gguf_tensor_data(h, info).cast::<u8>();
                assert_eq!(ptr, shard.base.add(info.file_offset as usize));
                assert_eq!(std::slice::from_raw_parts(ptr, 64), &data[..]);
                assert!(gguf_contains(h, ptr.cast(), 64));
                assert!(gguf_advise_tensor(h, info, Paging::WillNeed as u32));
            }
        }
        for (max, page) in [(GIB, 0), (GIB, 16384), (GIB + 12345, 65536), (u64::MAX, 0)] {
            let plan = gguf_plan_upload(h, max, page);
            assert!(!plan.is_null(), "{}", last_error());
            let plan = &*plan;
            let views = std::slice::from_raw_parts(plan.views, plan.n_views as usize);
            let placements = std::slice::from_raw_parts(plan.placements, plan.n_tensors as usize);
            assert_eq!(placements.len(), 20);
            // The five 200 GiB tensors are reported under 1 GiB, the rest placed.
            let oversized = if max == u64::MAX { 0 } else { 5 };
            assert_eq!(plan.n_oversized, oversized, "max {max}");
            for v in views {
                assert!(v.size <= plan.max_view_size);
                assert!(gguf_contains(h, v.data, v.size));
            }
            for (k, p) in placements.iter().enumerate() {
                let info = &*gguf_get_tensor_by_index(h, k as u64);
                if p.view == GGUF_NO_VIEW {
                    assert_eq!(info.size_bytes, 200 * GIB);
                    continue;
                }
                let view = &views[p.view as usize];
                assert_eq!(view.shard, info.shard);
                assert_eq!(view.file_offset + p.offset, info.file_offset);
                assert!(p.offset + info.size_bytes <= view.size);
                if info.size_bytes == 64 {
                    if max != u64::MAX {
                        assert!(
                            view.file_offset > 4 * GIB,
                            "a tail's view starts above 4 GiB"
                        );
                    }
                    let via = view.data.cast::<u8>().add(p.offset as usize);
                    assert_eq!(via, gguf_tensor_data(h, info).cast::<u8>());
                    let tails = &small[info.shard as usize];
                    let name = CStr::from_ptr(info.name).to_str().unwrap();
                    let (_, data) = tails.iter().find(|(n, _)| n == name).unwrap();
                    assert_eq!(std::slice::from_raw_parts(via, 64), &data[..]);
                }
            }
        }
        gguf_close(h);
    }
}
