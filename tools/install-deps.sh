#!/usr/bin/env bash
# Installs the Debian packages libcoll needs, only those missing.
# CUDA is optional and never installed here (configure reports it).
set -euo pipefail
pkgs=(cmake ninja-build g++ pkg-config libhwloc-dev libibverbs-dev libspdlog-dev libfmt-dev catch2 clang libclang-rt-14-dev openmpi-bin libopenmpi-dev libgloo-dev zlib1g-dev dataset-fashion-mnist libopenblas-dev python3-matplotlib)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
  exit 0
fi
echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: not root and no sudo; install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
