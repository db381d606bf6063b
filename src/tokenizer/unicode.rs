//! Code points as llama.cpp sees them: UTF-8 decoding, categories, lower case, NFD.
