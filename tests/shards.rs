//! Split models: every shard of `name-0000i-of-0000N.gguf` opened as one model, from any shard.

use gguf::{DataType, MetadataValue as V, Model, OpenOptions, Writer};
use std::path::PathBuf;

fn dir(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join("shards")
        .join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
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
    let shards = w.into_shards(per_shard).unwrap();
    let count = shards.len();
    shards
        .iter()
        .enumerate()
        .map(|(no, s)| {
            let path = d.join(Writer::shard_path("model", no, count));
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
        let m = Model::open(path, OpenOptions::default()).unwrap();
        assert_eq!(m.shards().len(), 4);
        assert_eq!(m.tensor_count(), 11);
        assert!(m.first().get("general.architecture").is_some());
        for i in 0..11 {
            let t = m.tensor(format!("t.{i}")).unwrap();
            assert_eq!(t.shard, i / 3);
            assert!(t.info.data.iter().all(|&b| b == i as u8));
        }
    }
    let single = Model::open(
        &paths[2],
        OpenOptions {
            single_shard: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!((single.shards().len(), single.tensor_count()), (1, 3));
}
