//! Importance matrices from llama.cpp's imatrix GGUF files (what `llama-imatrix` writes): for
//! each weight `W`, the F32 tensors `W.in_sum2` (the sums of squared activations, one row of
//! `n_per_row` values per expert) and `W.counts` (how many activations each expert's row summed),
//! with the keys `imatrix.datasets`, `imatrix.chunk_count` and `imatrix.chunk_size`. A column's
//! importance is its sum divided by its expert's count rounded to an integer (1 where the count
//! is not positive), as llama-quantize computes it.

use crate::error::{Error, ErrorCode, Result};
use crate::load::tensor_to_float;
use crate::model::Model;
use crate::source::{OpenOptions, Source};
use crate::types::DataType;
use std::collections::HashMap;
use std::path::Path;

/// The keys an imatrix file carries.
const DATASETS: &str = "imatrix.datasets";
const CHUNK_COUNT: &str = "imatrix.chunk_count";
const CHUNK_SIZE: &str = "imatrix.chunk_size";

/// Importance weights by tensor name: for a weight of `n_per_row` columns and `n` experts,
/// `n * n_per_row` values (expert by expert).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Importance {
    entries: HashMap<Vec<u8>, Vec<f32>>,
    /// The datasets the matrix was computed on (`imatrix.datasets`).
    pub datasets: Vec<String>,
    /// How many chunks it was computed on (`imatrix.chunk_count`).
    pub chunk_count: u32,
    /// The tokens of a chunk (`imatrix.chunk_size`).
    pub chunk_size: u32,
}

fn bad(path: &str, what: String) -> Error {
    Error::msg(ErrorCode::InvalidArgument, what).in_file(path.to_string())
}

impl Importance {
    /// No entries.
    pub fn new() -> Importance {
        Importance::default()
    }

    /// Reads the imatrix GGUF file at `path`.
    pub fn open(path: &Path) -> Result<Importance> {
        let model = Model::open(path, OpenOptions::default())?;
        Importance::from_model(&model)
    }

    /// Reads an opened imatrix GGUF file.
    pub fn from_model(model: &Model<Source>) -> Result<Importance> {
        let shown = model.shard_names().first().cloned().unwrap_or_default();
        let first = model.first();
        let datasets = first.get(DATASETS).and_then(|v| v.as_array());
        let chunk_count = first.get(CHUNK_COUNT).and_then(|v| v.as_u64());
        let chunk_size = first.get(CHUNK_SIZE).and_then(|v| v.as_u64());
        let (Some(datasets), Some(chunk_count), Some(chunk_size)) =
            (datasets, chunk_count, chunk_size)
        else {
            return Err(bad(
                &shown,
                format!(
                    "not an imatrix file: it lacks {DATASETS}, {CHUNK_COUNT} or {CHUNK_SIZE} \
                     (as llama-quantize, this reads only the GGUF files llama-imatrix writes)"
                ),
            ));
        };
        let mut out = Importance {
            datasets: datasets
                .strings()
                .map(|s| s.map(|b| String::from_utf8_lossy(b).into_owned()).collect())
                .unwrap_or_default(),
            chunk_count: u32::try_from(chunk_count).unwrap_or(u32::MAX),
            chunk_size: u32::try_from(chunk_size).unwrap_or(u32::MAX),
            entries: HashMap::new(),
        };
        // Each weight's two tensors, by the weight's name.
        let mut pairs: HashMap<Vec<u8>, (Option<usize>, Option<usize>)> = HashMap::new();
        for i in 0..model.tensor_count() {
            let Some(t) = model.tensor_at(i) else {
                continue;
            };
            let name = t.info.name;
            if let Some(w) = name.strip_suffix(b".in_sum2") {
                pairs.entry(w.to_vec()).or_default().0 = Some(i);
            } else if let Some(w) = name.strip_suffix(b".counts") {
                pairs.entry(w.to_vec()).or_default().1 = Some(i);
            }
        }
        if pairs.is_empty() {
            return Err(bad(&shown, "the imatrix file holds no entries".into()));
        }
        for (weight, pair) in pairs {
            let quoted = crate::text::quote(&weight);
            let (Some(sums), Some(counts)) = pair else {
                return Err(bad(
                    &shown,
                    format!("imatrix entry {quoted} has in_sum2 or counts but not both"),
                ));
            };
            let sums = read_f32(model, sums, &shown)?;
            let counts = read_f32(model, counts, &shown)?;
            if counts.is_empty() || sums.len() % counts.len() != 0 {
                return Err(bad(
                    &shown,
                    format!(
                        "imatrix entry {quoted}: {} sums are not a whole number of rows for {} \
                         counts",
                        sums.len(),
                        counts.len()
                    ),
                ));
            }
            let per = sums.len() / counts.len();
            let mut values = Vec::with_capacity(sums.len());
            for (row, &count) in sums.chunks_exact(per.max(1)).zip(&counts) {
                // std::lround, then back to float, as llama.cpp does (a count past the i64 range
                // saturates, where lround's result is unspecified).
                #[allow(clippy::cast_possible_truncation)]
                let count = count.round() as i64 as f32;
                if count > 0.0 {
                    values.extend(row.iter().map(|s| s / count));
                } else {
                    values.extend(std::iter::repeat_n(1.0f32, row.len()));
                }
            }
            out.entries.insert(weight, values);
        }
        Ok(out)
    }

    /// The importance weights of tensor `name` (`n_experts * n_per_row` values).
    pub fn get(&self, name: impl AsRef<[u8]>) -> Option<&[f32]> {
        self.entries.get(name.as_ref()).map(Vec::as_slice)
    }

    /// Sets the weights of tensor `name`.
    pub fn insert(&mut self, name: impl AsRef<[u8]>, values: Vec<f32>) {
        self.entries.insert(name.as_ref().to_vec(), values);
    }

    /// The number of entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there is no entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Keeps the entries whose name contains one of `include` (all when it is empty), then drops
    /// those whose name contains one of `exclude` (llama-quantize's `--include-weights` and
    /// `--exclude-weights`).
    pub fn filter(&mut self, include: &[String], exclude: &[String]) {
        let has = |name: &[u8], part: &String| {
            let p = part.as_bytes();
            p.is_empty() || name.windows(p.len()).any(|w| w == p)
        };
        self.entries.retain(|name, _| {
            (include.is_empty() || include.iter().any(|p| has(name, p)))
                && !exclude.iter().any(|p| has(name, p))
        });
    }

    /// Refuses values that are not finite (llama.cpp refuses such a matrix).
    pub(crate) fn check_finite(&self) -> Result<()> {
        for (name, values) in &self.entries {
            if let Some(v) = values.iter().find(|v| !v.is_finite()) {
                return Err(Error::msg(
                    ErrorCode::InvalidArgument,
                    format!(
                        "the importance matrix of {} holds a value that is not finite ({v})",
                        crate::text::quote(name)
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Tensor `index` of an imatrix file, which must be F32, as floats.
fn read_f32(model: &Model<Source>, index: usize, shown: &str) -> Result<Vec<f32>> {
    let t = model
        .tensor_at(index)
        .ok_or_else(|| Error::msg(ErrorCode::Internal, format!("tensor {index} is missing")))?;
    if t.info.dtype != DataType::F32 {
        return Err(bad(
            shown,
            format!(
                "imatrix tensor {} is {}, not F32",
                crate::text::quote(t.info.name),
                t.info.dtype.name()
            ),
        ));
    }
    let n = usize::try_from(t.info.n_elements)
        .map_err(|_| bad(shown, "an imatrix tensor is too large for memory".into()))?;
    let row = t.info.dims[0].max(1);
    let mut values = vec![0f32; n];
    tensor_to_float(model, index, 0, t.info.n_elements / row, &mut values)?;
    Ok(values)
}
