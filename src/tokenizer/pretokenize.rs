//! Pre-tokenization: text split into words by the regular expressions llama.cpp names for each pre-tokenizer.
