#!/usr/bin/env bash
# Builds llama.cpp's llama-server for bench/decode.sh and caches it as
# bench/.llamacpp-server/llama-server. No prebuilt binary is fetched: the source is the llama.cpp
# tree vendored in the llama-cpp-python sdist on PyPI (the same version as the
# one-after-another anchor, so both anchors run the same llama.cpp), built for this CPU.
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=${LLAMA_CPP_PYTHON_VERSION:-0.3.36}
DEST=bench/.llamacpp-server
[ -x "$DEST/llama-server" ] && { echo "$DEST/llama-server already built"; exit 0; }
command -v cmake >/dev/null || apt-get install -y -q cmake
mkdir -p "$DEST"
WORK=$(mktemp -d "$DEST/work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
start=$(date +%s)
# --no-binary for this one package only: ":all:" would also build pip's build dependencies
# (cmake, ninja) from source just to read the package metadata.
python3 -m pip download -q --no-deps --no-binary llama-cpp-python "llama-cpp-python==$VERSION" -d "$WORK"
tar -xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
[ -d "$SRC/tools/server" ] || [ -d "$SRC/examples/server" ] || { echo "no server sources in $SRC" >&2; exit 1; }
# GGML_NATIVE: -march=native, so the kernels match this CPU (AVX512/BF16, AMX where present).
# Static libs: the cached binary then needs nothing from the deleted build tree.
# The web UI is off and never downloaded (no network but package registries here).
nice -n 19 cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
  -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF \
  -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF >"$DEST/build.log" 2>&1 &&
nice -n 19 cmake --build "$WORK/build" --target llama-server -j"${JOBS:-2}" >>"$DEST/build.log" 2>&1 ||
  { tail -30 "$DEST/build.log" >&2; echo "llama-server build failed (log: $DEST/build.log)" >&2; exit 1; }
cp "$WORK/build/bin/llama-server" "$DEST/llama-server"
echo "built $DEST/llama-server (llama-cpp-python $VERSION sources) in $(( $(date +%s) - start )) s" | tee -a "$DEST/build.log"
