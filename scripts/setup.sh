#!/usr/bin/env bash
# Installs everything the build and the tests need on a fresh Debian 12 machine.
# Idempotent: packages already present are left alone.
set -euo pipefail

LLVM_VERSION=22
APT_PACKAGES=(
  "llvm-${LLVM_VERSION}-dev" "libmlir-${LLVM_VERSION}-dev" "mlir-${LLVM_VERSION}-tools"
  "llvm-${LLVM_VERSION}-tools" "clang-${LLVM_VERSION}" "libclang-rt-${LLVM_VERSION}-dev"
  cmake ninja-build ccache python3 python3-pip python3-dev python3-venv
)

missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# Python packages used by the test suite, the example generator and the
# attnfuse Python package (nanobind for its extension, scikit-build-core for
# `pip install ./python-bindings`), as pip-name:import-name. torch,
# transformers (5.23: the first with the `zaya` model) and safetensors run
# the checks against Hugging Face's own ZAYA attention
# (python-bindings/tests/test_hf_numerics.py, examples/python/
# zaya_from_hf.py); PyPI's torch is the CUDA build, which imports without a
# GPU (about 5.6 GB with its nvidia-* wheels, 3.5 minutes here).
PY_PACKAGES=(numpy:numpy pytest:pytest nanobind:nanobind
             scikit-build-core:scikit_build_core safetensors:safetensors
             torch:torch transformers==5.23.0:transformers.models.zaya)
for entry in "${PY_PACKAGES[@]}"; do
  python3 -c "import ${entry#*:}" 2>/dev/null || python3 -m pip install -q "${entry%%:*}"
done
