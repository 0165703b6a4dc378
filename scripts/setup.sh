#!/usr/bin/env bash
# scripts/setup.sh: from a fresh Debian machine to a built hvdrun and the Python package.
# Idempotent: installs only the packages that are missing; creates .venv and installs
# requirements.txt into it only when the file changed since the last install (pip's cache
# keeps the wheels: torch's CUDA wheels are several GB); configures and builds into build/
# (or $HVD_BUILD_DIR); then builds and installs the hvd package into .venv (incremental,
# build/python). HVD_SKIP_PYTHON=1 leaves the Python side out: hvdrun and libhvd need none of it.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev libfmt-dev libtomlplusplus-dev catch2
  libopenmpi-dev openmpi-bin libpmix-dev
  slurm-wlm munge iproute2
  openssh-client openssh-server
  python3 python3-venv python3-dev
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
  # openssh-server is for the tests' own sshd hosts (tests/ssh/sshbed.sh): the package must
  # not start a system sshd listening on the network. Without a policy-rc.d (container
  # images ship one) a temporary one tells invoke-rc.d not to start services.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee "$policy" >/dev/null
    $sudo chmod 0755 "$policy"
    trap '$sudo rm -f "$policy"' EXIT
  fi
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [[ -n "$(trap -p EXIT)" ]]; then $sudo rm -f "$policy"; trap - EXIT; fi
fi

python_side=$([[ ${HVD_SKIP_PYTHON:-0} == 1 ]] && echo no || echo yes)
if [[ $python_side == yes ]]; then
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
  want=$(sha256sum requirements.txt | cut -d' ' -f1)
  if [[ "$(cat .venv/.requirements.sha256 2>/dev/null)" != "$want" ]]; then
    echo "setup: installing requirements.txt into .venv (torch's wheels are several GB the first time)"
    .venv/bin/pip install -q --disable-pip-version-check -r requirements.txt
    echo "$want" >.venv/.requirements.sha256
  fi
fi

build_dir=${HVD_BUILD_DIR:-build}
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE="${HVD_BUILD_TYPE:-RelWithDebInfo}" ${HVD_CMAKE_ARGS:-}
fi
cmake --build "$build_dir" -j"$(nproc)"

if [[ $python_side == yes ]]; then
  .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps .
fi
