"""Build step of the `libgguf` Python package: puts the shared library inside the package.

`pip install ./python` (from the repository root) runs this. The library comes from, in order:
  1. $LIBGGUF_PATH (the library file, or a directory holding it): copied as is;
  2. the repository this directory belongs to: `cargo build --release --lib` is run at its root
     ($CARGO for the cargo binary, $CARGO_TARGET_DIR honoured); if cargo is missing, an already
     built target/release library is used (with a warning).
Everything else is in pyproject.toml. The wheel is tagged py3-none-<platform>: the package is
pure Python over ctypes, but carries a native library.
"""

import os
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

if sys.platform == "darwin":
    LIBRARY_FILE = "libgguf.dylib"
elif sys.platform == "win32":
    LIBRARY_FILE = "gguf.dll"
else:
    LIBRARY_FILE = "libgguf.so"


class LibraryError(RuntimeError):
    pass


def _is_checkout(root):
    manifest = os.path.join(root, "Cargo.toml")
    if not os.path.isfile(manifest) or not os.path.isfile(os.path.join(root, "include", "gguf.h")):
        return False
    with open(manifest, encoding="utf-8") as f:
        return 'name = "libgguf"' in f.read()


def find_or_build_library():
    """The path of the shared library to bundle (building it when in a checkout)."""
    env = os.environ.get("LIBGGUF_PATH")
    if env:
        path = os.path.join(env, LIBRARY_FILE) if os.path.isdir(env) else env
        if not os.path.isfile(path):
            raise LibraryError(f"LIBGGUF_PATH={env!r}: no library at {path}")
        return path
    if not _is_checkout(ROOT):
        raise LibraryError(
            "libgguf: not building inside the libgguf repository, and LIBGGUF_PATH is not set: "
            "set LIBGGUF_PATH to a built libgguf shared library"
        )
    target = os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target")
    built = os.path.join(target, "release", LIBRARY_FILE)
    cargo = os.environ.get("CARGO") or "cargo"
    if shutil.which(cargo):
        print(f"libgguf: running {cargo} build --release --lib in {ROOT}", flush=True)
        subprocess.check_call([cargo, "build", "--release", "--lib"], cwd=ROOT)
    elif os.path.isfile(built):
        print(f"libgguf: warning: cargo not found; bundling the existing {built}", flush=True)
    else:
        raise LibraryError(
            "libgguf: cargo is not on PATH and the library is not built: install Rust "
            "(https://rustup.rs), run `cargo build --release --lib`, or set LIBGGUF_PATH"
        )
    if not os.path.isfile(built):
        raise LibraryError(f"libgguf: the build left no {built}")
    return built


class BuildPy(build_py):
    """build_py, then the shared library copied into the built package."""

    def run(self):
        super().run()
        if self.dry_run or getattr(self, "editable_mode", False):
            return  # an editable install finds the checkout's target/ directly
        src = find_or_build_library()
        dest = os.path.join(self.build_lib, "libgguf")
        self.mkpath(dest)
        self.copy_file(src, os.path.join(dest, LIBRARY_FILE), preserve_mode=True)


cmdclass = {"build_py": BuildPy}

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:
    try:
        from wheel.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

if bdist_wheel is not None:

    class BdistWheel(bdist_wheel):
        """A platform wheel (it holds a native library) for any Python 3."""

        def finalize_options(self):
            super().finalize_options()
            self.root_is_pure = False

        def get_tag(self):
            return ("py3", "none", super().get_tag()[2])

    cmdclass["bdist_wheel"] = BdistWheel

setup(cmdclass=cmdclass)
