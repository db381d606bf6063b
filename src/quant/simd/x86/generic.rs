//! The block kernels of every type with one, written once over the lane helpers of an
//! instruction set (`lanes` in `avx2.rs` and in `avx512.rs`: 16 values stored per call, as two
//! 8-lane or one 16-lane vector) and instantiated in each set's file with its target features,
//! as memchr writes its searchers once over a vector type. Each kernel takes whole blocks
//! (`blocks.len()` a multiple of the block's bytes, `dst` the matching number of floats; extra
//! bytes or floats are left alone).

/// The block kernels, as `pub unsafe fn`s of the module that invokes this, with the features
/// `$feat`; that module imports its lane helpers (`splat`, `i8_mul`, ...) before the invocation.
macro_rules! block_kernels {
    ($feat:literal) => {
        use crate::quant::blocks::{
            iq1_m, iq1_s, iq2_s, iq2_xs, iq2_xxs, iq3_s, iq3_xxs, iq4_nl, iq4_xs, mxfp4, q2_0,
            q2_k, q3_k, q4_0, q4_1, q5_0, q5_1, q5_k, q6_k, tq1_0, tq2_0,
        };
        use crate::quant::fp4::e8m0_to_f32_half;
        use crate::quant::iquant::IQ1S_DELTA;
        use crate::quant::kquant::{q3_k_scales, scale_min_k4};
        use crate::quant::simd::x86::shared::{half, half_bits, le16, q5_high_bits, scalar_block};
        use crate::quant::tables::{
            IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID, KSIGNS_IQ2XS,
            KVALUES_IQ4NL, KVALUES_MXFP4,
        };
        use crate::types::DataType;
        use core::arch::x86_64::*;

        #[target_feature(enable = $feat)]
        pub unsafe fn f16(x: &[u8], y: &mut [f32]) {
            let n = (x.len() / 2).min(y.len());
            // One by one up to a 64-byte boundary of y, so that no vector store splits a
            // line (a caller's buffer may lie anywhere).
            let head = y.as_ptr().align_offset(64).min(n);
            for j in 0..head {
                // SAFETY: the kernel's features include F16C.
                y[j] = unsafe { half(x, 2 * j) };
            }
            let mut i = head;
            while i + 16 <= n {
                // SAFETY: i + 16 <= n: 32 bytes of x and 16 floats of y are in bounds.
                unsafe { f16x16(y.as_mut_ptr().add(i), x.as_ptr().add(2 * i)) };
                i += 16;
            }
            for j in i..n {
                // SAFETY: the kernel's features include F16C.
                y[j] = unsafe { half(x, 2 * j) };
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn bf16(x: &[u8], y: &mut [f32]) {
            let n = (x.len() / 2).min(y.len());
            // As `f16`: one by one up to a 64-byte boundary of y (with the output 16 bytes
            // off one, ggml's 16-byte stores ran 20% faster than split 32-byte ones in L2
            // on an Intel Xeon).
            let head = y.as_ptr().align_offset(64).min(n);
            for j in 0..head {
                y[j] = f32::from_bits(u32::from(le16(x, 2 * j)) << 16);
            }
            let mut i = head;
            while i + 16 <= n {
                // SAFETY: i + 16 <= n: 32 bytes of x and 16 floats of y are in bounds.
                unsafe { bf16x16(y.as_mut_ptr().add(i), x.as_ptr().add(2 * i)) };
                i += 16;
            }
            for j in i..n {
                y[j] = f32::from_bits(u32::from(le16(x, 2 * j)) << 16);
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q4_0(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            let eight = _mm_set1_epi8(8);
            for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(32)) {
                // SAFETY: a block is 18 bytes (2 + 16 quants) and y is 32 floats; the kernel's
                // features are the helpers'.
                unsafe {
                    let d = splat(half(b, q4_0::D));
                    let qs = _mm_loadu_si128(b.as_ptr().add(q4_0::QS).cast());
                    let lo = _mm_sub_epi8(_mm_and_si128(qs, m4), eight);
                    let hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), eight);
                    i8_mul(y.as_mut_ptr(), lo, d);
                    i8_mul(y.as_mut_ptr().add(16), hi, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q4_1(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            for (b, y) in x.chunks_exact(20).zip(y.chunks_exact_mut(32)) {
                // SAFETY: the kernel's features include F16C.
                let (d, m) = unsafe { (half(b, q4_1::D), half(b, q4_1::M)) };
                if !(d.is_finite() && m.is_finite()) {
                    scalar_block(DataType::Q4_1, b, y);
                    continue;
                }
                // SAFETY: a block is 20 bytes (4 + 16 quants) and y is 32 floats; the kernel's
                // features are the helpers'.
                unsafe {
                    let (d, m) = (splat(d), splat(m));
                    let qs = _mm_loadu_si128(b.as_ptr().add(q4_1::QS).cast());
                    let lo = _mm_and_si128(qs, m4);
                    let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m4);
                    u8_mul_add(y.as_mut_ptr(), lo, d, m);
                    u8_mul_add(y.as_mut_ptr().add(16), hi, d, m);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q5_0(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            let sixteen = _mm_set1_epi8(16);
            for (b, y) in x.chunks_exact(22).zip(y.chunks_exact_mut(32)) {
                // SAFETY: a block is 22 bytes (2 + 4 + 16 quants) and y is 32 floats; the kernel's
                // features are the helpers'.
                unsafe {
                    let d = splat(half(b, q5_0::D));
                    let (h0, h1) = q5_high_bits(b, q5_0::QH);
                    let qs = _mm_loadu_si128(b.as_ptr().add(q5_0::QS).cast());
                    let lo = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(qs, m4), h0), sixteen);
                    let hi = _mm_and_si128(_mm_srli_epi16(qs, 4), m4);
                    let hi = _mm_sub_epi8(_mm_or_si128(hi, h1), sixteen);
                    i8_mul(y.as_mut_ptr(), lo, d);
                    i8_mul(y.as_mut_ptr().add(16), hi, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q5_1(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            for (b, y) in x.chunks_exact(24).zip(y.chunks_exact_mut(32)) {
                // SAFETY: the kernel's features include F16C.
                let (d, m) = unsafe { (half(b, q5_1::D), half(b, q5_1::M)) };
                if !(d.is_finite() && m.is_finite()) {
                    scalar_block(DataType::Q5_1, b, y);
                    continue;
                }
                // SAFETY: a block is 24 bytes (4 + 4 + 16 quants) and y is 32 floats; the kernel's
                // features are the helpers'.
                unsafe {
                    let (d, m) = (splat(d), splat(m));
                    let (h0, h1) = q5_high_bits(b, q5_1::QH);
                    let qs = _mm_loadu_si128(b.as_ptr().add(q5_1::QS).cast());
                    let lo = _mm_or_si128(_mm_and_si128(qs, m4), h0);
                    let hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), h1);
                    u8_mul_add(y.as_mut_ptr(), lo, d, m);
                    u8_mul_add(y.as_mut_ptr().add(16), hi, d, m);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q5_k(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            let sixteen = _mm_set1_epi8(16);
            for (b, y) in x.chunks_exact(176).zip(y.chunks_exact_mut(256)) {
                let scales = &b[q5_k::SCALES..q5_k::SCALES + 12];
                // SAFETY: the kernel's features are the helpers'; qh is the 32 bytes at
                // 16, the quants of group g the 32 at 48 + 32g, inside the 176-byte block;
                // its 64 floats (at 64g) are in y's 256.
                unsafe {
                    let d = half(b, q5_k::D);
                    let min = half(b, q5_k::DMIN);
                    for g in 0..4 {
                        let (sc1, m1) = scale_min_k4(2 * g, scales);
                        let (sc2, m2) = scale_min_k4(2 * g + 1, scales);
                        let d1 = splat(d * f32::from(sc1));
                        let m1 = splat(min * f32::from(m1));
                        let d2 = splat(d * f32::from(sc2));
                        let m2 = splat(min * f32::from(m2));
                        let u1 = _mm_set1_epi8((1u8 << (2 * g)) as i8);
                        let u2 = _mm_set1_epi8((2u8 << (2 * g)) as i8);
                        let q = b.as_ptr().add(q5_k::QS + 32 * g);
                        let out = y.as_mut_ptr().add(64 * g);
                        let mut lo = [_mm_setzero_si128(); 2];
                        let mut hi = [_mm_setzero_si128(); 2];
                        for k in 0..2 {
                            let qh = _mm_loadu_si128(b.as_ptr().add(q5_k::QH + 16 * k).cast());
                            let qs = _mm_loadu_si128(q.add(16 * k).cast());
                            let h1 =
                                _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(qh, u1), u1), sixteen);
                            let h2 =
                                _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(qh, u2), u2), sixteen);
                            lo[k] = _mm_add_epi8(_mm_and_si128(qs, m4), h1);
                            hi[k] = _mm_add_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m4), h2);
                        }
                        // In address order (as Q4_K's `nibbles_mul_sub`).
                        mul_u8_sub(out, d1, lo[0], m1);
                        mul_u8_sub(out.add(16), d1, lo[1], m1);
                        mul_u8_sub(out.add(32), d2, hi[0], m2);
                        mul_u8_sub(out.add(48), d2, hi[1], m2);
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q6_k(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            let m3 = _mm_set1_epi8(0x30);
            let k32 = _mm_set1_epi8(32);
            for (b, y) in x.chunks_exact(210).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; for half n, ql is the 64
                // bytes at 64n (in 0..128), qh the 32 at 128 + 32n (in 128..192), its 128
                // floats at 128n in y's 256.
                unsafe {
                    let d = half(b, q6_k::D);
                    for n in 0..2 {
                        // The scale of each group of 16: d times the signed byte, as ggml.
                        let sc = |k: usize| splat(d * f32::from(b[q6_k::SCALES + 8 * n + k] as i8));
                        let ql = b.as_ptr().add(q6_k::QL + 64 * n);
                        let qh = b.as_ptr().add(q6_k::QH + 32 * n);
                        let out = y.as_mut_ptr().add(128 * n);
                        for l in 0..2 {
                            let a = _mm_loadu_si128(ql.add(16 * l).cast());
                            let c = _mm_loadu_si128(ql.add(32 + 16 * l).cast());
                            let h = _mm_loadu_si128(qh.add(16 * l).cast());
                            let h0 = _mm_and_si128(_mm_slli_epi16(h, 4), m3);
                            let h2 = _mm_and_si128(_mm_slli_epi16(h, 2), m3);
                            let h4 = _mm_and_si128(h, m3);
                            let h6 = _mm_and_si128(_mm_srli_epi16(h, 2), m3);
                            let a4 = _mm_and_si128(_mm_srli_epi16(a, 4), m4);
                            let c4 = _mm_and_si128(_mm_srli_epi16(c, 4), m4);
                            let q1 = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(a, m4), h0), k32);
                            let q2 = _mm_sub_epi8(_mm_or_si128(_mm_and_si128(c, m4), h2), k32);
                            let q3 = _mm_sub_epi8(_mm_or_si128(a4, h4), k32);
                            let q4 = _mm_sub_epi8(_mm_or_si128(c4, h6), k32);
                            mul_i8(out.add(16 * l), sc(l), q1);
                            mul_i8(out.add(32 + 16 * l), sc(2 + l), q2);
                            mul_i8(out.add(64 + 16 * l), sc(4 + l), q3);
                            mul_i8(out.add(96 + 16 * l), sc(6 + l), q4);
                        }
                    }
                }
            }
        }
        #[target_feature(enable = $feat)]
        pub unsafe fn iq4_nl(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(32)) {
                // SAFETY: the kernel's features are the helpers'; 16 quants at QS in the
                // 18-byte block, 16 table bytes, 32 floats of y.
                unsafe {
                    let table = _mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast());
                    let d = splat(half(b, iq4_nl::D));
                    let qs = _mm_loadu_si128(b.as_ptr().add(iq4_nl::QS).cast());
                    let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                    let hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
                    mul_i8(y.as_mut_ptr(), d, lo);
                    mul_i8(y.as_mut_ptr().add(16), d, hi);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq4_xs(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            for (b, y) in x.chunks_exact(136).zip(y.chunks_exact_mut(256)) {
                let scales_h = le16(b, iq4_xs::SCALES_H);
                // SAFETY: the kernel's features are the helpers'; sub-block ib's 16 quants
                // (at QS + 16ib, in the 136-byte block), its 32 floats at 32ib in y's 256.
                unsafe {
                    let table = _mm_loadu_si128(KVALUES_IQ4NL.as_ptr().cast());
                    let d = half(b, iq4_xs::D);
                    for ib in 0..8 {
                        let low = (b[iq4_xs::SCALES_L + ib / 2] >> (4 * (ib % 2))) & 0x0f;
                        let high = ((scales_h >> (2 * ib)) & 3) as u8;
                        let ls = i16::from(low | (high << 4)) - 32;
                        let dl = splat(d * f32::from(ls));
                        let qs = _mm_loadu_si128(b.as_ptr().add(iq4_xs::QS + 16 * ib).cast());
                        let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                        let hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
                        mul_i8(y.as_mut_ptr().add(32 * ib), dl, lo);
                        mul_i8(y.as_mut_ptr().add(32 * ib + 16), dl, hi);
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn mxfp4(x: &[u8], y: &mut [f32]) {
            let m4 = _mm_set1_epi8(0x0f);
            for (b, y) in x.chunks_exact(17).zip(y.chunks_exact_mut(32)) {
                // SAFETY: the kernel's features are the helpers'; 16 quants at QS in the
                // 17-byte block, 16 table bytes, 32 floats of y.
                unsafe {
                    let table = _mm_loadu_si128(KVALUES_MXFP4.as_ptr().cast());
                    let d = splat(e8m0_to_f32_half(b[mxfp4::E]));
                    let qs = _mm_loadu_si128(b.as_ptr().add(mxfp4::QS).cast());
                    let lo = _mm_shuffle_epi8(table, _mm_and_si128(qs, m4));
                    let hi = _mm_shuffle_epi8(table, _mm_and_si128(_mm_srli_epi16(qs, 4), m4));
                    i8_mul(y.as_mut_ptr(), lo, d);
                    i8_mul(y.as_mut_ptr().add(16), hi, d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn tq2_0(x: &[u8], y: &mut [f32]) {
            let m2 = _mm_set1_epi8(3);
            let one = _mm_set1_epi8(1);
            for (b, y) in x.chunks_exact(66).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 32 quant bytes at
                // QS + 32h (in the 66-byte block), floats 128h + 32l.. +32 of y's 256.
                unsafe {
                    let d = splat(half(b, tq2_0::D));
                    for h in 0..2 {
                        for k in 0..2 {
                            let qs =
                                _mm_loadu_si128(b.as_ptr().add(tq2_0::QS + 32 * h + 16 * k).cast());
                            let out = y.as_mut_ptr().add(128 * h + 16 * k);
                            let code = |v: __m128i| _mm_sub_epi8(_mm_and_si128(v, m2), one);
                            i8_mul(out, code(qs), d);
                            i8_mul(out.add(32), code(_mm_srli_epi16(qs, 2)), d);
                            i8_mul(out.add(64), code(_mm_srli_epi16(qs, 4)), d);
                            i8_mul(out.add(96), code(_mm_srli_epi16(qs, 6)), d);
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q2_k(x: &[u8], y: &mut [f32]) {
            let m2 = _mm_set1_epi8(3);
            for (b, y) in x.chunks_exact(84).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16 quant bytes at
                // QS + 32h + 16p (in the 84-byte block), 16 floats at 128h + 32s + 16p.
                unsafe {
                    let d = half(b, q2_k::D);
                    let dmin = half(b, q2_k::DMIN);
                    for h in 0..2 {
                        for p in 0..2 {
                            let qs =
                                _mm_loadu_si128(b.as_ptr().add(q2_k::QS + 32 * h + 16 * p).cast());
                            for sh in 0..4 {
                                let sc = b[q2_k::SCALES + h * 8 + sh * 2 + p];
                                let dl = splat(d * f32::from(sc & 0x0f));
                                let ml = splat(dmin * f32::from(sc >> 4));
                                let q = match sh {
                                    0 => qs,
                                    1 => _mm_srli_epi16(qs, 2),
                                    2 => _mm_srli_epi16(qs, 4),
                                    _ => _mm_srli_epi16(qs, 6),
                                };
                                let out = y.as_mut_ptr().add(128 * h + 32 * sh + 16 * p);
                                mul_u8_sub(out, dl, _mm_and_si128(q, m2), ml);
                            }
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn q3_k(x: &[u8], y: &mut [f32]) {
            let m2 = _mm_set1_epi8(3);
            let four = _mm_set1_epi8(4);
            for (b, y) in x.chunks_exact(110).zip(y.chunks_exact_mut(256)) {
                let scales = q3_k_scales(&b[q3_k::SCALES..q3_k::SCALES + 12]);
                // SAFETY: the kernel's features are the helpers'; 16 bytes of hmask at
                // HMASK + 16p and of quants at QS + 32h + 16p (in the 110-byte block), 16
                // floats at 128h + 32s + 16p.
                unsafe {
                    let d = half(b, q3_k::D);
                    for p in 0..2 {
                        let hm = _mm_loadu_si128(b.as_ptr().add(q3_k::HMASK + 16 * p).cast());
                        for h in 0..2 {
                            let qs =
                                _mm_loadu_si128(b.as_ptr().add(q3_k::QS + 32 * h + 16 * p).cast());
                            for sh in 0..4 {
                                let bit = _mm_set1_epi8((1u8 << (h * 4 + sh)) as i8);
                                let set = _mm_cmpeq_epi8(_mm_and_si128(hm, bit), bit);
                                let q = match sh {
                                    0 => qs,
                                    1 => _mm_srli_epi16(qs, 2),
                                    2 => _mm_srli_epi16(qs, 4),
                                    _ => _mm_srli_epi16(qs, 6),
                                };
                                // The low two bits, minus 4 where the hmask bit is clear.
                                let q =
                                    _mm_sub_epi8(_mm_and_si128(q, m2), _mm_andnot_si128(set, four));
                                let dl = splat(d * f32::from(scales[h * 8 + sh * 2 + p]));
                                mul_i8(y.as_mut_ptr().add(128 * h + 32 * sh + 16 * p), dl, q);
                            }
                        }
                    }
                }
            }
        }
        #[target_feature(enable = $feat)]
        pub unsafe fn q2_0(x: &[u8], y: &mut [f32]) {
            let m2 = _mm_set1_epi8(3);
            let one = _mm_set1_epi8(1);
            for (b, y) in x.chunks_exact(18).zip(y.chunks_exact_mut(64)) {
                // SAFETY: the kernel's features are the helpers'; 16 quant bytes at QS in
                // the 18-byte block, 64 floats of y.
                unsafe {
                    let d = splat(half(b, q2_0::D));
                    let qs = _mm_loadu_si128(b.as_ptr().add(q2_0::QS).cast());
                    // Code s of byte i is element 4i + s: interleave the four shifts.
                    let c0 = _mm_sub_epi8(_mm_and_si128(qs, m2), one);
                    let c1 = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 2), m2), one);
                    let c2 = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 4), m2), one);
                    let c3 = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(qs, 6), m2), one);
                    let (a0, a1) = (_mm_unpacklo_epi8(c0, c1), _mm_unpackhi_epi8(c0, c1));
                    let (b0, b1) = (_mm_unpacklo_epi8(c2, c3), _mm_unpackhi_epi8(c2, c3));
                    let out = y.as_mut_ptr();
                    i8_mul(out, _mm_unpacklo_epi16(a0, b0), d);
                    i8_mul(out.add(16), _mm_unpackhi_epi16(a0, b0), d);
                    i8_mul(out.add(32), _mm_unpacklo_epi16(a1, b1), d);
                    i8_mul(out.add(48), _mm_unpackhi_epi16(a1, b1), d);
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn tq1_0(x: &[u8], y: &mut [f32]) {
            const POW3: [i16; 5] = [1, 3, 9, 27, 81];
            let ff = _mm256_set1_epi16(0xff);
            let three = _mm256_set1_epi16(3);
            let one = _mm_set1_epi8(1);
            for (b, y) in x.chunks_exact(54).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16-byte loads at QS,
                // QS + 16 and QS + 32 (inside the 54-byte block), 16 floats per store at
                // offsets below 240 of y's 256; the last 16 are written by index.
                unsafe {
                    let dv = half(b, tq1_0::D);
                    let d = splat(dv);
                    // Digit n of 16 bytes: ((byte * 3^n mod 256) * 3) >> 8, minus 1.
                    let digits = |v: __m128i, n: usize| {
                        let w = _mm256_cvtepu8_epi16(v);
                        let q =
                            _mm256_and_si256(_mm256_mullo_epi16(w, _mm256_set1_epi16(POW3[n])), ff);
                        let t = _mm256_srli_epi16(_mm256_mullo_epi16(q, three), 8);
                        let t = _mm_packus_epi16(
                            _mm256_castsi256_si128(t),
                            _mm256_extracti128_si256(t, 1),
                        );
                        _mm_sub_epi8(t, one)
                    };
                    let out = y.as_mut_ptr();
                    for half16 in 0..2 {
                        let v = _mm_loadu_si128(b.as_ptr().add(tq1_0::QS + 16 * half16).cast());
                        for n in 0..5 {
                            i8_mul(out.add(32 * n + 16 * half16), digits(v, n), d);
                        }
                    }
                    let v = _mm_loadu_si128(b.as_ptr().add(tq1_0::QS + 32).cast());
                    for n in 0..5 {
                        i8_mul(out.add(160 + 16 * n), digits(v, n), d);
                    }
                }
                // The 16 digits of qh's 4 bytes, 4 each, digit-major.
                for n in 0..4 {
                    for m in 0..4 {
                        let q = b[tq1_0::QH + m].wrapping_mul([1u8, 3, 9, 27][n]);
                        let t = ((u16::from(q) * 3) >> 8) as i8 - 1;
                        // SAFETY: the kernel's features include F16C.
                        y[240 + 4 * n + m] = f32::from(t) * unsafe { half(b, tq1_0::D) };
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq1_s(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(50).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; grid rows are 8 bytes of
                // IQ1S_GRID (indices below 2048 by construction); 16 floats per store at
                // 32ib + 16k of y's 256.
                unsafe {
                    let d = half(b, iq1_s::D);
                    for ib in 0..8 {
                        let qh = le16(b, iq1_s::QH + 2 * ib);
                        let dl = splat(d * f32::from(2 * ((qh >> 12) & 7) + 1));
                        let delta = splat(if qh & 0x8000 != 0 {
                            -IQ1S_DELTA
                        } else {
                            IQ1S_DELTA
                        });
                        for k in 0..2 {
                            let row = |l: usize| {
                                let index = usize::from(b[iq1_s::QS + 4 * ib + l])
                                    | (usize::from((qh >> (3 * l)) & 7) << 8);
                                i64::from_le_bytes(IQ1S_GRID[index].map(|g| g as u8))
                            };
                            let v = _mm_set_epi64x(row(2 * k + 1), row(2 * k));
                            mul_i8_plus(y.as_mut_ptr().add(32 * ib + 16 * k), dl, v, delta);
                        }
                    }
                }
            }
        }
        /// Two grid rows of 8 magnitudes as one vector.
        #[inline(always)]
        fn rows8(a: &[u8; 8], b: &[u8; 8]) -> __m128i {
            let lo = i64::from_le_bytes(*a);
            let hi = i64::from_le_bytes(*b);
            // SAFETY: register-only (SSE2, part of x86-64).
            unsafe { _mm_set_epi64x(hi, lo) }
        }
        /// Four grid rows of 4 magnitudes as one vector.
        #[inline(always)]
        fn rows4(r: [&[u8; 4]; 4]) -> __m128i {
            let w = r.map(|r| i32::from_le_bytes(*r));
            // SAFETY: register-only (SSE2, part of x86-64).
            unsafe { _mm_setr_epi32(w[0], w[1], w[2], w[3]) }
        }
        #[inline(always)]
        fn u32_at(b: &[u8], at: usize) -> u32 {
            u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq2_xxs(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(66).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                // 32ib + 16p of y's 256; grid indices are bytes (the grid has 256 rows).
                unsafe {
                    let d = half(b, iq2_xxs::D);
                    for ib in 0..8 {
                        let g = &b[iq2_xxs::QS + 8 * ib..iq2_xxs::QS + 8 * ib + 8];
                        let aux = u32_at(g, 4);
                        let db = d * (0.5 + (aux >> 28) as f32) * 0.25;
                        for p in 0..2 {
                            let (l0, l1) = (2 * p, 2 * p + 1);
                            let s0 = KSIGNS_IQ2XS[((aux >> (7 * l0)) & 127) as usize];
                            let s1 = KSIGNS_IQ2XS[((aux >> (7 * l1)) & 127) as usize];
                            let v = rows8(
                                &IQ2XXS_GRID[usize::from(g[l0])],
                                &IQ2XXS_GRID[usize::from(g[l1])],
                            );
                            let signs = u16::from(s0) | (u16::from(s1) << 8);
                            mul_u8_signed(y.as_mut_ptr().add(32 * ib + 16 * p), db, db, v, signs);
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq2_xs(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(74).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                // 32ib + 16p of y's 256; grid indices are 9 bits (512 rows).
                unsafe {
                    let d = half(b, iq2_xs::D);
                    for ib in 0..8 {
                        let s = b[iq2_xs::SCALES + ib];
                        let db = [
                            d * (0.5 + f32::from(s & 0x0f)) * 0.25,
                            d * (0.5 + f32::from(s >> 4)) * 0.25,
                        ];
                        for p in 0..2 {
                            let q0 = le16(b, iq2_xs::QS + 2 * (4 * ib + 2 * p));
                            let q1 = le16(b, iq2_xs::QS + 2 * (4 * ib + 2 * p + 1));
                            let v = rows8(
                                &IQ2XS_GRID[usize::from(q0 & 511)],
                                &IQ2XS_GRID[usize::from(q1 & 511)],
                            );
                            let signs = u16::from(KSIGNS_IQ2XS[usize::from(q0 >> 9)])
                                | (u16::from(KSIGNS_IQ2XS[usize::from(q1 >> 9)]) << 8);
                            let out = y.as_mut_ptr().add(32 * ib + 16 * p);
                            mul_u8_signed(out, db[p], db[p], v, signs);
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq2_s(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(82).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                // 32ib + 16p of y's 256; grid indices are 10 bits (1024 rows).
                unsafe {
                    let d = half(b, iq2_s::D);
                    for ib in 0..8 {
                        let s = b[iq2_s::SCALES + ib];
                        let db = [
                            d * (0.5 + f32::from(s & 0x0f)) * 0.25,
                            d * (0.5 + f32::from(s >> 4)) * 0.25,
                        ];
                        let qh = usize::from(b[iq2_s::QH + ib]);
                        let index = |l: usize| {
                            usize::from(b[iq2_s::QS + 4 * ib + l]) | ((qh << (8 - 2 * l)) & 0x300)
                        };
                        for p in 0..2 {
                            let (l0, l1) = (2 * p, 2 * p + 1);
                            let v = rows8(&IQ2S_GRID[index(l0)], &IQ2S_GRID[index(l1)]);
                            let signs = u16::from(b[iq2_s::SIGNS + 4 * ib + l0])
                                | (u16::from(b[iq2_s::SIGNS + 4 * ib + l1]) << 8);
                            let out = y.as_mut_ptr().add(32 * ib + 16 * p);
                            mul_u8_signed(out, db[p], db[p], v, signs);
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq3_xxs(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(98).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                // 32ib + 16p of y's 256; grid indices are bytes (256 rows).
                unsafe {
                    let d = half(b, iq3_xxs::D);
                    for ib in 0..8 {
                        let aux = u32_at(b, iq3_xxs::SCALES_AND_SIGNS + 4 * ib);
                        let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
                        let at = iq3_xxs::QS + 8 * ib;
                        for p in 0..2 {
                            let g = |k: usize| &IQ3XXS_GRID[usize::from(b[at + 4 * p + k])];
                            let v = rows4([g(0), g(1), g(2), g(3)]);
                            let s = |l: usize| KSIGNS_IQ2XS[((aux >> (7 * l)) & 127) as usize];
                            let signs = u16::from(s(2 * p)) | (u16::from(s(2 * p + 1)) << 8);
                            mul_u8_signed(y.as_mut_ptr().add(32 * ib + 16 * p), db, db, v, signs);
                        }
                    }
                }
            }
        }

        #[target_feature(enable = $feat)]
        pub unsafe fn iq3_s(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(110).zip(y.chunks_exact_mut(256)) {
                // SAFETY: the kernel's features are the helpers'; 16 floats per store at
                // 32ib + 16p of y's 256; grid indices are 9 bits (512 rows).
                unsafe {
                    let d = half(b, iq3_s::D);
                    for ib in 0..8 {
                        let s = b[iq3_s::SCALES + ib / 2] >> (4 * (ib % 2));
                        let db = d * f32::from(1 + 2 * (s & 0x0f));
                        let qh = usize::from(b[iq3_s::QH + ib]);
                        let at = iq3_s::QS + 8 * ib;
                        let g = |l: usize, k: usize| {
                            let shift = 8 - 2 * l - k;
                            &IQ3S_GRID[usize::from(b[at + 2 * l + k]) | ((qh << shift) & 256)]
                        };
                        for p in 0..2 {
                            let (l0, l1) = (2 * p, 2 * p + 1);
                            let v = rows4([g(l0, 0), g(l0, 1), g(l1, 0), g(l1, 1)]);
                            let signs = u16::from(b[iq3_s::SIGNS + 4 * ib + l0])
                                | (u16::from(b[iq3_s::SIGNS + 4 * ib + l1]) << 8);
                            mul_u8_signed(y.as_mut_ptr().add(32 * ib + 16 * p), db, db, v, signs);
                        }
                    }
                }
            }
        }
        #[target_feature(enable = $feat)]
        pub unsafe fn iq1_m(x: &[u8], y: &mut [f32]) {
            for (b, y) in x.chunks_exact(56).zip(y.chunks_exact_mut(256)) {
                let sc = [0, 1, 2, 3].map(|k| le16(b, iq1_m::SCALES + 2 * k));
                let bits = (sc[0] >> 12)
                    | ((sc[1] >> 8) & 0x00f0)
                    | ((sc[2] >> 4) & 0x0f00)
                    | (sc[3] & 0xf000);
                // SAFETY: the kernel's features are the helpers'; grid indices are 11 bits
                // (IQ1S_GRID has 2048 rows); 16 floats per store at 32ib + 16p of y's 256.
                unsafe {
                    let d = half_bits(bits);
                    for ib in 0..8 {
                        let word = sc[ib / 2] >> (6 * (ib % 2));
                        let dl = [
                            d * f32::from(2 * (word & 7) + 1),
                            d * f32::from(2 * ((word >> 3) & 7) + 1),
                        ];
                        let qs = iq1_m::QS + 4 * ib;
                        for p in 0..2 {
                            let h = b[iq1_m::QH + 2 * ib + p];
                            let delta = |bit: u8| {
                                if h & bit != 0 {
                                    -IQ1S_DELTA
                                } else {
                                    IQ1S_DELTA
                                }
                            };
                            let row0 = &IQ1S_GRID
                                [usize::from(b[qs + 2 * p]) | ((usize::from(h) << 8) & 0x700)];
                            let row1 = &IQ1S_GRID
                                [usize::from(b[qs + 2 * p + 1]) | ((usize::from(h) << 4) & 0x700)];
                            let lo = i64::from_le_bytes(row0.map(|g| g as u8));
                            let hi = i64::from_le_bytes(row1.map(|g| g as u8));
                            let v = _mm_set_epi64x(hi, lo);
                            let out = y.as_mut_ptr().add(32 * ib + 16 * p);
                            mul_i8_plus2(out, dl[p], v, delta(0x08), delta(0x80));
                        }
                    }
                }
            }
        }
    };
}
pub(crate) use block_kernels;
