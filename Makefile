# libgguf: the two commands of the README.
#   make        builds the library (release) and the inspector, then inspects the bundled sample
#   make test   runs every test: Rust unit/integration tests, C tests under ASan/UBSan and
#               valgrind, conformance tests against the reference Python reader (installed into
#               .venv) and cross-checks against ggml's own parser (fetched into target/ggml)

CARGO   ?= cargo
CC      ?= cc
PYTHON  ?= python3
VENV    := .venv
RELEASE := target/release
CFLAGS_INSPECT := -std=c99 -O2 -Wall -Wextra -Werror -pthread -Iinclude

.PHONY: all lib inspect test test-prereqs venv ggml header tsan fuzz-smoke clean cross

all: inspect
	./$(RELEASE)/gguf-inspect

lib:
	$(CARGO) build --release --lib

$(RELEASE)/gguf-inspect: tools/gguf-inspect.c include/gguf.h lib
	$(CC) $(CFLAGS_INSPECT) -o $@ tools/gguf-inspect.c -L$(RELEASE) -lgguf -Wl,-rpath,'$$ORIGIN' \
		-DGGUF_INSPECT_DEFAULT_SAMPLE='"$(CURDIR)/testdata/sample.gguf"'

inspect: $(RELEASE)/gguf-inspect

# The reference implementation (PyPI `gguf`) used by the conformance tests.
$(VENV)/.installed: tests/conformance/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/conformance/requirements.txt
	touch $@

venv: $(VENV)/.installed

# ggml's own parser (libggml-base.so from npm), for the cross-check tests and the benchmarks.
ggml:
	tools/fetch-ggml.sh

# What `make test` runs besides cargo and $(CC), as COMMAND:DEBIAN-PACKAGE (README: Quick start).
TEST_TOOLS := c++:g++ nm:binutils readelf:binutils valgrind:valgrind cmake:cmake \
	pkg-config:pkg-config npm:npm $(PYTHON):python3 openssl:openssl

# Stops with the packages to install when a tool is missing (the registries must be reachable
# too: PyPI for .venv, npm for target/ggml).
test-prereqs:
	@missing=; \
	command -v $(CARGO) >/dev/null 2>&1 || { echo "make test needs cargo (Rust 1.82 or newer): https://rustup.rs" >&2; exit 1; }; \
	command -v $(CC) >/dev/null 2>&1 || missing="$$missing gcc"; \
	for t in $(TEST_TOOLS); do command -v $${t%%:*} >/dev/null 2>&1 || missing="$$missing $${t#*:}"; done; \
	command -v nginx >/dev/null 2>&1 || test -x /usr/sbin/nginx || missing="$$missing nginx-light"; \
	$(PYTHON) -c 'import venv, ensurepip' >/dev/null 2>&1 || missing="$$missing python3-venv"; \
	if [ -n "$$missing" ]; then \
	  echo "make test needs tools that are not installed; on Debian or Ubuntu:" >&2; \
	  echo "  apt-get install$$(printf ' %s' $$missing | tr ' ' '\n' | sort -u | tr '\n' ' ')" >&2; \
	  exit 1; \
	fi

test: test-prereqs venv ggml
	$(CARGO) build --lib
	GGUF_PYTHON=$(CURDIR)/$(VENV)/bin/python GGUF_GGML_LIB_DIR=$(CURDIR)/target/ggml $(CARGO) test
	@# The kernels again as optimized for release, the build engines ship: the optimizer may
	@# reorder what the debug build does in the written order (it swapped an add's operands).
	GGUF_GGML_LIB_DIR=$(CURDIR)/target/ggml $(CARGO) test --release --test simd --test dequant

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
bench:
	CARGO=$(CARGO) CC=$(CC) MAKE=$(MAKE) bench/run.sh
	$(CARGO) bench --bench open

bench-smoke:
	CARGO=$(CARGO) CC=$(CC) MAKE=$(MAKE) bench/run.sh --quick

# Installation: the release library (libgguf.so.X.Y.Z with soname libgguf.so.X and its links,
# libgguf.a), include/gguf.h, lib/pkgconfig/gguf.pc, lib/cmake/gguf/ (find_package(gguf)) and
# bin/gguf-inspect (with share/libgguf/sample.gguf, its default FILE), under $(DESTDIR)$(PREFIX).
# The work is done by install/install.sh.
PREFIX  ?= /usr/local
DESTDIR ?=
.PHONY: install uninstall
install:
	CARGO=$(CARGO) CC=$(CC) install/install.sh install --prefix "$(PREFIX)" --destdir "$(DESTDIR)"

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
