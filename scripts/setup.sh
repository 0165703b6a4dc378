#!/usr/bin/env bash
# scripts/setup.sh: from a fresh Debian machine to a built hvdrun. Idempotent: installs
# only the packages that are missing, then configures and builds into build/ (or $HVD_BUILD_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev libfmt-dev libtomlplusplus-dev catch2
  libopenmpi-dev openmpi-bin libpmix-dev
  slurm-wlm munge iproute2
)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: error: need root or sudo to install ${missing[*]}" >&2; exit 3; }
    sudo="sudo"
  fi
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

build_dir=${HVD_BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${HVD_BUILD_TYPE:-RelWithDebInfo}" ${HVD_CMAKE_ARGS:-}
fi
cmake --build "$build_dir" -j"$(nproc)"
