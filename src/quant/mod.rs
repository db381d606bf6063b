//! Tensor values: conversion to float (vector kernels in `simd`) and validation (`validate`).

pub mod simd;
pub mod validate;
