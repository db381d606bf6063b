//! The grids of the IQ searches as ggml's `iq2xs_init_impl` / `iq3xs_init_impl` build them: each
//! grid point as 8 (or 4) odd values `2*level + 1`, a map from a point's packed levels to its
//! grid index, and for each point off the grid the list of grid points nearest to it (all those
//! at the `nwant` smallest squared distances, by distance then index: the order ggml's `qsort`
//! leaves, its comparison being a total order).
//!
//! Built once per grid on first use (`OnceLock`): a few milliseconds, against several megabytes
//! of generated tables in the source. Only points a search can ask about get a list (levels up
//! to 2 for the 2-bit grids, all points for the 3-bit ones); a list depends only on its point,
//! so each is the list ggml has.

// Levels below 8, grid indices below 2048, distances below 1024, list lengths below 2048: the
// casts cannot truncate.
#![allow(clippy::cast_possible_truncation)]

use crate::quant::tables::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};
use std::sync::OnceLock;

/// One grid: points, map and neighbour lists.
pub(super) struct Grid<const N: usize> {
    /// Each grid point's values `2*level + 1`, as ggml keeps them.
    pub(super) points: Vec<[i8; N]>,
    /// Each grid point's levels.
    pub(super) levels: Vec<[u8; N]>,
    /// ggml's map over packed levels (`bits` per value): the grid index (>= 0); else
    /// `-(k + 1)` for the point's neighbour list `k`; `i32::MIN` where no search asks (no list).
    map: Vec<i32>,
    /// Each list's start in `ids`, its length, and its start in `lv`.
    spans: Vec<(u32, u32, u32)>,
    /// The neighbours' grid indices, list after list.
    ids: Vec<u16>,
    /// The neighbours' levels, list after list, value by value: for value `i`, the levels of
    /// the list's neighbours in order, padded to a multiple of [`LANES`] (with level 0) so that
    /// the searches compute `LANES` neighbours side by side.
    lv: Vec<u8>,
}

/// How many neighbours a search computes side by side.
pub(super) const LANES: usize = 8;

/// A point's neighbours: grid indices and levels (see [`Grid::lv`]).
pub(super) struct Neighbours<'a> {
    pub(super) ids: &'a [u16],
    pub(super) lv: &'a [u8],
    /// The list's length rounded up to a multiple of [`LANES`].
    pub(super) padded: usize,
}

impl<const N: usize> Grid<N> {
    /// The point with packed levels `u`: on the grid, or its neighbours; `None` where ggml
    /// would read outside its map.
    #[inline]
    pub(super) fn lookup(&self, u: usize) -> Option<Lookup<'_>> {
        let m = *self.map.get(u)?;
        Some(if m >= 0 {
            Lookup::On(m as usize)
        } else if m == i32::MIN {
            Lookup::Off(Neighbours {
                ids: &[],
                lv: &[],
                padded: 0,
            })
        } else {
            let (start, n, at) = self.spans[(-(m + 1)) as usize];
            let (start, n, at) = (start as usize, n as usize, at as usize);
            let padded = n.div_ceil(LANES) * LANES;
            Lookup::Off(Neighbours {
                ids: &self.ids[start..start + n],
                lv: &self.lv[at..at + N * padded],
                padded,
            })
        })
    }
}

/// Builds a grid from its points' levels: `bits` per level in the map of `map_size` entries,
/// lists of the `nwant` nearest distances for the points `asked` says a search can look up.
fn build<const N: usize>(
    levels: &[[u8; N]],
    bits: u32,
    map_size: usize,
    nwant: usize,
    asked: impl Fn(usize) -> bool,
) -> Grid<N> {
    let points: Vec<[i8; N]> = levels
        .iter()
        .map(|l| l.map(|v| (2 * v + 1) as i8))
        .collect();
    let mut map = vec![i32::MIN; map_size];
    for (k, l) in levels.iter().enumerate() {
        let mut index = 0usize;
        for (i, &v) in l.iter().enumerate() {
            index |= usize::from(v) << (bits as usize * i);
        }
        map[index] = k as i32;
    }
    let mut spans = Vec::new();
    let mut ids: Vec<u16> = Vec::new();
    let mut lv = Vec::new();
    let mut d2 = vec![0u16; points.len()];
    let mut count = [0u32; 1024];
    let mask = (1usize << bits) - 1;
    for i in 0..map_size {
        if map[i] >= 0 || !asked(i) {
            continue;
        }
        let mut pos = [0i32; N];
        for (k, p) in pos.iter_mut().enumerate() {
            *p = 2 * ((i >> (bits as usize * k)) & mask) as i32 + 1;
        }
        count.fill(0);
        for (j, pg) in points.iter().enumerate() {
            let mut d = 0i32;
            for k in 0..N {
                let diff = i32::from(pg[k]) - pos[k];
                d += diff * diff;
            }
            d2[j] = d as u16;
            count[d as usize] += 1;
        }
        let start = ids.len();
        let mut have = 0;
        for (dist, &c) in count.iter().enumerate() {
            if c == 0 {
                continue;
            }
            for (j, &d) in d2.iter().enumerate() {
                if usize::from(d) == dist {
                    ids.push(j as u16);
                }
            }
            have += 1;
            if have == nwant {
                break;
            }
        }
        let n = ids.len() - start;
        let padded = n.div_ceil(LANES) * LANES;
        let at = lv.len();
        for k in 0..N {
            for c in 0..padded {
                lv.push(if c < n {
                    levels[usize::from(ids[start + c])][k]
                } else {
                    0
                });
            }
        }
        map[i] = -(spans.len() as i32 + 1);
        spans.push((start as u32, n as u32, at as u32));
    }
    Grid {
        points,
        levels: levels.to_vec(),
        map,
        spans,
        ids,
        lv,
    }
}

/// The 2-bit grids' map size in ggml (levels 0..=2 in each of 8 places fit below it).
const MAP2: usize = 43692;

/// A 2-bit grid point's levels from the dequantizer's magnitudes (8, 25, 43, 62).
fn levels2(g: &[[u8; 8]]) -> Vec<[u8; 8]> {
    g.iter()
        .map(|p| {
            p.map(|v| match v {
                8 => 0,
                25 => 1,
                43 => 2,
                _ => 3,
            })
        })
        .collect()
}

/// Whether every 2-bit level of `i` is at most 2 (what the 2-bit searches look up).
fn asked2(i: usize) -> bool {
    (0..8).all(|k| (i >> (2 * k)) & 3 <= 2)
}

pub(super) fn iq2_xxs() -> &'static Grid<8> {
    static G: OnceLock<Grid<8>> = OnceLock::new();
    G.get_or_init(|| build(&levels2(&IQ2XXS_GRID), 2, MAP2, 2, asked2))
}

pub(super) fn iq2_xs() -> &'static Grid<8> {
    static G: OnceLock<Grid<8>> = OnceLock::new();
    G.get_or_init(|| build(&levels2(&IQ2XS_GRID), 2, MAP2, 2, asked2))
}

pub(super) fn iq2_s() -> &'static Grid<8> {
    static G: OnceLock<Grid<8>> = OnceLock::new();
    G.get_or_init(|| build(&levels2(&IQ2S_GRID), 2, MAP2, 1, asked2))
}

/// IQ1_S and IQ1_M share one grid (values -1, 0, 1 as levels 0, 1, 2).
pub(super) fn iq1() -> &'static Grid<8> {
    static G: OnceLock<Grid<8>> = OnceLock::new();
    G.get_or_init(|| {
        let levels: Vec<[u8; 8]> = IQ1S_GRID.iter().map(|p| p.map(|v| (v + 1) as u8)).collect();
        build(&levels, 2, MAP2, 3, asked2)
    })
}

pub(super) fn iq3_xxs() -> &'static Grid<4> {
    static G: OnceLock<Grid<4>> = OnceLock::new();
    G.get_or_init(|| {
        let levels: Vec<[u8; 4]> = IQ3XXS_GRID.iter().map(|p| p.map(|v| (v - 4) / 8)).collect();
        build(&levels, 3, 4096, 2, |_| true)
    })
}

pub(super) fn iq3_s() -> &'static Grid<4> {
    static G: OnceLock<Grid<4>> = OnceLock::new();
    G.get_or_init(|| {
        let levels: Vec<[u8; 4]> = IQ3S_GRID.iter().map(|p| p.map(|v| (v - 1) / 2)).collect();
        build(&levels, 3, 4096, 3, |_| true)
    })
}

/// The grid index of a point, or where it is off the grid, its neighbour list.
pub(super) enum Lookup<'a> {
    On(usize),
    Off(Neighbours<'a>),
}
