#!/usr/bin/env bash
# Installs the Debian packages codectalk needs to build and test (skips what is present):
# with them no test skips. The Python packages of test_onnx (onnx, onnxruntime, numpy) come
# from PyPI into a venv in the build dir: `make onnx-venv` (part of `make test`).
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
      libjansson-dev libpcre2-dev libutf8proc-dev libyaml-dev libmicrohttpd-dev
      libavcodec-dev libavformat-dev libavutil-dev libsonic-dev curl librsvg2-bin
      libfftw3-dev libsndfile1-dev libsoxr-dev libwebsockets-dev nginx-light
      ca-certificates python3 python3-venv python3-yaml protobuf-compiler libonnx-dev
      gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
echo "installing: ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
