# libgguf: the two commands of the README.
#   make        builds the library (release), the inspector and the requantizer (gguf-quantize),
#               then inspects the bundled sample
#   make test   runs every test: Rust unit/integration tests, C tests under ASan/UBSan and
#               valgrind, conformance tests against the reference Python reader (installed into
#               .venv) and cross-checks against ggml's own parser (fetched into target/ggml);
#               each step ends with its time, the whole with the total and `N passed, M failed`
#   make test-quick  the Rust and C tests that need nothing beyond cargo and a C compiler (the
#               inner loop; `make test` and CI run everything)

CARGO   ?= cargo
CC      ?= cc
PYTHON  ?= python3
VENV    := .venv
RELEASE := $(or $(CARGO_TARGET_DIR),target)/release
CFLAGS_INSPECT := -std=c99 -O2 -Wall -Wextra -Werror -pthread -Iinclude
# The test recipes time their steps and sum their results with bash.
SHELL   := /bin/bash
# The major version (Cargo.toml's [package] version), the number in the soname libgguf.so.MAJOR.
MAJOR   := $(shell sed -n 's/^version *= *"\([0-9]*\)\..*/\1/p' Cargo.toml | head -n 1)

.PHONY: all lib inspect quantize-tool test test-quick test-prereqs venv ggml llama-src header tsan fuzz-smoke clean cross

all: inspect quantize-tool
	./$(RELEASE)/gguf-inspect

# The release library with its soname, libgguf.so.MAJOR, which installed copies need: built
# here exactly as install/install.sh builds it (the same command), so that `make install` finds
# it up to date and installs it without building again. The link libgguf.so.MAJOR beside it
# lets the programs linked here (the inspector) find it by that name.
lib:
	$(CARGO) rustc --release --lib -- -C link-arg=-Wl,-soname,libgguf.so.$(MAJOR)
	ln -sfn libgguf.so $(RELEASE)/libgguf.so.$(MAJOR)

$(RELEASE)/gguf-inspect: tools/gguf-inspect.c include/gguf.h lib
	$(CC) $(CFLAGS_INSPECT) -o $@ tools/gguf-inspect.c -L$(RELEASE) -lgguf -Wl,-rpath,'$$ORIGIN' \
		-DGGUF_INSPECT_DEFAULT_SAMPLE='"$(CURDIR)/testdata/sample.gguf"'

inspect: $(RELEASE)/gguf-inspect

# The requantizer (tools/gguf-quantize.c, the C API alone), built as the inspector is.
$(RELEASE)/gguf-quantize: tools/gguf-quantize.c include/gguf.h lib
	$(CC) $(CFLAGS_INSPECT) -o $@ tools/gguf-quantize.c -L$(RELEASE) -lgguf -Wl,-rpath,'$$ORIGIN'

quantize-tool: $(RELEASE)/gguf-quantize

# The reference implementation (PyPI `gguf`) used by the conformance tests.
$(VENV)/.installed: tests/conformance/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/conformance/requirements.txt
	touch $@

venv: $(VENV)/.installed

# llama.cpp's prebuilt libraries from npm (libggml-base.so: ggml's parser, dequantizers and
# quantizers; libllama: its tokenizer and quantizer), for the cross-check tests and the benchmarks.
ggml:
	tools/fetch-ggml.sh

# llama.cpp's sources as the llama-cpp-python sdist vendors them (its tokenizer test files).
llama-src:
	tools/fetch-llama-src.sh

# What `make test` runs besides cargo and $(CC), as COMMAND:DEBIAN-PACKAGE (README: Quick start).
TEST_TOOLS := c++:g++ nm:binutils readelf:binutils valgrind:valgrind cmake:cmake \
	pkg-config:pkg-config npm:npm $(PYTHON):python3 openssl:openssl

# Installs the missing ones itself where it can (as root, with apt-get: Debian, Ubuntu; as
# .ci/run does); elsewhere stops with the packages to install. The registries must be reachable
# too: PyPI for .venv and target/llama.cpp, npm for target/ggml.
test-prereqs:
	@missing=; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "make test needs cargo (Rust 1.82 or newer): https://rustup.rs" >&2; exit 1; }; \
	command -v $(CC) >/dev/null 2>&1 || missing="$$missing gcc"; \
	for t in $(TEST_TOOLS); do command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || missing="$$missing nginx-light"; \
	$(PYTHON) -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	[ -z "$$missing" ] && exit 0; \
	packages=$$(printf '%s\n' $$missing | sort -u | paste -sd ' '); \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "make test: installing the tools it needs: apt-get install $$packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$packages >/dev/null || \
	    { echo "make test: apt-get could not install $$packages" >&2; exit 1; }; \
	else \
	  echo "make test needs tools that are not installed; on Debian or Ubuntu:" >&2; \
	  echo "  apt-get install $$packages" >&2; \
	  exit 1; \
	fi

# The test recipes: `step NAME COMMAND...` runs a step, its output also appended to
# target/test-output.log, and ends it with its time; `finish` prints the total time and one line
# summing the `test result:` lines of every test binary, and the `NAME: N passed, M failed` line
# of those without libtest's harness (concurrency), as `N passed, M failed`; it fails if any step
# did.
define TEST_STEPS
log=target/test-output.log; mkdir -p target; : >"$$log"; started=$$SECONDS; failed=; \
step() { \
  local name=$$1 s=$$SECONDS rc; shift; echo "== $$name"; \
  "$$@" 2>&1 | tee -a "$$log"; rc=$${PIPESTATUS[0]}; \
  if [ $$rc = 0 ]; then echo "== $$name: $$((SECONDS - s)) s"; \
  else echo "== $$name: FAILED (exit status $$rc) after $$((SECONDS - s)) s"; failed="$$failed, $$name"; fi; \
}; \
finish() { \
  echo "== total: $$((SECONDS - started)) s"; \
  awk '/^test result: / { for (i = 2; i <= NF; i++) { if ($$i ~ /^passed;?$$/) p += $$(i-1); if ($$i ~ /^failed;?$$/) f += $$(i-1) } } \
       /^[a-z_]+: [0-9]+ passed, [0-9]+ failed$$/ { p += $$2; f += $$4 } \
       END { printf "%d passed, %d failed", p, f }' "$$log"; \
  if [ -n "$$failed" ]; then echo " (failed: $${failed#, })"; exit 1; fi; echo; \
}
endef

# What the reference tests use: the reference Python reader, llama.cpp's libraries and sources.
TEST_ENV := GGUF_PYTHON=$(CURDIR)/$(VENV)/bin/python GGUF_GGML_LIB_DIR=$(CURDIR)/target/ggml \
	GGUF_LLAMA_SRC_DIR=$(CURDIR)/target/llama.cpp

test: test-prereqs venv ggml llama-src
	@$(TEST_STEPS); \
	step "the release library (make lib; the install tests install it)" $(MAKE) --no-print-directory lib; \
	step "the debug library: $(CARGO) build --lib" $(CARGO) build --lib; \
	step "$(CARGO) test" env $(TEST_ENV) $(CARGO) test --no-fail-fast; \
	step "the kernels as built for release: $(CARGO) test --release --test simd --test dequant" \
	  env $(TEST_ENV) $(CARGO) test --release --no-fail-fast --test simd --test dequant; \
	step "the JavaScript package: js/test.sh (npm ci, npm run build, node --test)" \
	  env $(TEST_ENV) js/test.sh; \
	finish
# (The kernels run again as optimized for release, the build engines ship: the optimizer may
# reorder what the debug build does in the written order; it swapped an add's operands.)

# The inner loop: the unit tests, the doctests and every test file that needs nothing beyond
# cargo and $(CC) (tests/*.rs but those below), less the tests in them that need valgrind, the
# reference Python reader or ggml's library. `make test` runs everything.
TESTS_NEEDING_TOOLS := c_writer chat_llama chat_transformers conformance dequant_ggml dequant_tables ggml_crosscheck header \
	inspect install memory_llama python quantize_ggml quantize_iq_ggml readme requantize_llama requantize_pattern \
	tokenizer_llama \
	tokenizer_memory tokenizer_split tokenizer_vocab url validate_ggml
QUICK_TESTS := $(filter-out $(TESTS_NEEDING_TOOLS),$(basename $(notdir $(wildcard tests/*.rs))))
QUICK_SKIPS := valgrind_ shards_written_by_the_reference_open_as_the_whole_model \
	the_reference_reads_our_split_keys_as_it_writes_them every_vector_kernel_matches_ggml_bit_for_bit

test-quick:
	@$(TEST_STEPS); \
	step "$(CARGO) test --lib and the tests needing only cargo and $(CC)" \
	  $(CARGO) test --no-fail-fast --lib $(addprefix --test ,$(QUICK_TESTS)) -- $(addprefix --skip ,$(QUICK_SKIPS)); \
	step "$(CARGO) test --doc" $(CARGO) test --doc; \
	finish

# The concurrency test under ThreadSanitizer (nightly toolchain).
tsan:
	TSAN_OPTIONS="halt_on_error=1" RUSTFLAGS="-Zsanitizer=thread -Cunsafe-allow-abi-mismatch=sanitizer" CARGO_TARGET_DIR=target/tsan \
		$(CARGO) +nightly test --test concurrency --target $$(rustc -vV | sed -n 's/^host: //p')

# A short fuzzing run of every target (fuzz/run.sh SECONDS for longer ones).
fuzz-smoke:
	fuzz/run.sh 60

# The other platforms (README: Platforms): builds and tests for Windows (Wine), i686, s390x,
# aarch64 (qemu) and wasm32 (Node.js), type-checks macOS, iOS and Android. TARGETS picks some
# (short names or triples, e.g. `make cross TARGETS="i686 s390x"`); installs the Debian packages it needs.
TARGETS ?=
cross:
	tools/cross.sh $(TARGETS)

# Regenerates include/gguf.h after a change to the C API (the `header` feature compiles cbindgen).
header:
	GGUF_UPDATE_HEADER=1 $(CARGO) build --lib --features header

clean:
	$(CARGO) clean
	rm -rf $(VENV)

# The open benchmark side by side (libgguf, ggml, the floor walk, the Python reference; heap
# counts under valgrind), then the Criterion benchmarks. bench-smoke: the quick run for CI.
.PHONY: bench bench-smoke
# (CC is passed on only when it was given: cargo rebuilds the dependencies whose build scripts
# watch CC when it appears, and `make lib` would rebuild them again.)
BENCH_ENV = CARGO=$(CARGO) $(if $(filter default,$(origin CC)),,CC=$(CC)) MAKE=$(MAKE)
bench:
	$(BENCH_ENV) bench/run.sh
	$(CARGO) bench --bench open

bench-smoke:
	$(BENCH_ENV) bench/run.sh --quick
	$(BENCH_ENV) bench/chat_run.sh --quick

# Installation: the release library `make` built (libgguf.so.X.Y.Z with soname libgguf.so.X,
# stripped, its debug information in lib/.debug/, and its links; libgguf.a), include/gguf.h,
# lib/pkgconfig/gguf.pc, lib/cmake/gguf/ (find_package(gguf)) and bin/gguf-inspect (with share/libgguf/sample.gguf, its default FILE), under $(DESTDIR)$(PREFIX).
# The work is done by install/install.sh.
PREFIX  ?= /usr/local
DESTDIR ?=
.PHONY: install uninstall
# (The compiler and cargo are passed under names of their own: a CC that `make lib` did not see
# would make cargo rebuild the dependencies whose build scripts watch it.)
install:
	INSTALL_CARGO="$(CARGO)" INSTALL_CC="$(CC)" install/install.sh install --prefix "$(PREFIX)" --destdir "$(DESTDIR)"

uninstall:
	install/install.sh uninstall --prefix "$(PREFIX)" --destdir "$(DESTDIR)"

# The Python package (python/, `pip install ./python`): its tests against the reference reader
# (also part of `make test`), and its open benchmark on the 262144-token model.
.PHONY: python-test python-bench
python-test: venv
	GGUF_PYTHON=$(CURDIR)/$(VENV)/bin/python $(CARGO) test --test python

python-bench: venv lib
	$(CARGO) run --release --example make_bench_models target/bench-models --if-missing
	PYTHONPATH=python LIBGGUF_PATH=$(CURDIR)/$(RELEASE)/libgguf.so \
		$(VENV)/bin/python python/bench_open.py target/bench-models/gemma3-like.gguf
