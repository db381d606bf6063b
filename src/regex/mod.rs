//! Regular expressions with the meaning libstdc++'s `std::regex` (ECMAScript grammar, the "C"
//! locale) gives them, for the two places llama.cpp uses it: the tensor-name patterns of
//! llama-quantize's `--tensor-type` ([`Pattern`]: libstdc++'s own automaton over bytes and its
//! depth-first search, step for step, back-references and limits included) and the
//! pre-tokenizers' expressions (`Program`: a backtracking matcher over 32-bit units that
//! remembers the (state, position) pairs that failed, so it runs in linear time). Both read
//! the syntax with one scanner and one bracket reader ([`syntax`]) and one grammar
//! ([`grammar`], which hands each construct to the matcher's compiler), compile classes to one
//! set of units ([`classes`]) and decide `^`, `$` and `\b` by one rule ([`anchors`]).

mod anchors;
mod automaton;
mod classes;
mod grammar;
mod linear;
mod syntax;

pub use automaton::Pattern;
pub(crate) use linear::{Program, Scratch};
