#!/usr/bin/env bash
# scripts/setup.sh [main|all]: from a fresh Debian machine to a built hvdrun and its Python
# package, in four phases, each said as it starts.
#   main (README's command 1, scripts/run-example.sh): what the main job runs: hvdrun,
#        libhvd, the examples and the Python package, with the packages they need.
#   all  (README's command 2, scripts/test.sh; the default): the test programs too, and what
#        the tests need (Slurm, munge and sshd for the test beds, Catch2, test-only Python
#        packages).
# Idempotent and incremental: Debian packages only when missing; requirements.txt into .venv
# only when its part changed (pip's cache keeps the wheels); one build tree (build/, or
# $HVD_BUILD_DIR) for both commands and for the Python package, whose install builds nothing
# again. HVD_SKIP_PYTHON=1 leaves the Python side out: hvdrun and libhvd need none of it.
set -euo pipefail
cd "$(dirname "$0")/.."

mode=${1:-all}
if [[ $mode != main && $mode != all ]]; then
  echo "setup: error: unknown mode '$mode'" >&2
  echo "  hint: scripts/setup.sh main (what the main job needs) or all (the tests too)" >&2
  exit 2
fi
python_side=$([[ ${HVD_SKIP_PYTHON:-0} == 1 ]] && echo no || echo yes)
build_dir=${HVD_BUILD_DIR:-build}
say() { echo "setup: $*"; }

# --- 1. Debian packages ----------------------------------------------------------------
packages=(
  build-essential cmake ninja-build pkg-config git
  libcli11-dev libfmt-dev libtomlplusplus-dev libssl-dev nlohmann-json3-dev
  libopenmpi-dev openmpi-bin libpmix-dev
  openssh-client
)
[[ $python_side == yes ]] && packages+=(python3 python3-venv python3-dev)
# The tests: Catch2, a real Slurm cluster and real sshd hosts in network namespaces.
[[ $mode == all ]] && packages+=(catch2 slurm-wlm munge iproute2 openssh-server)

missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [[ "$status" == "install ok installed" ]] || missing+=("$p")
done
if ((${#missing[@]})); then
  say "[1/4] installing ${#missing[@]} Debian package(s): ${missing[*]}"
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
else
  say "[1/4] Debian packages: all ${#packages[@]} there"
fi

# --- 2. Python packages ----------------------------------------------------------------
# requirements.txt holds every pin; the lines after its "tests only" marker are for the
# tests (main installs the part above it). A stamp per part says what .venv holds.
if [[ $python_side == yes ]]; then
  [[ -x .venv/bin/python ]] || python3 -m venv .venv
  marker='^# --- tests only'
  main_part=$(sed "/$marker/,\$d" requirements.txt)
  want_main=$(printf '%s' "$main_part" | sha256sum | cut -d' ' -f1)
  want_all=$(sha256sum requirements.txt | cut -d' ' -f1)
  have_main=$(cat .venv/.requirements-main.sha256 2>/dev/null || true)
  have_all=$(cat .venv/.requirements-all.sha256 2>/dev/null || true)
  if [[ $mode == main && ($have_main == "$want_main" || $have_all == "$want_all") ]] ||
     [[ $mode == all && $have_all == "$want_all" ]]; then
    say "[2/4] Python packages: .venv has requirements.txt's $mode part"
  else
    say "[2/4] installing requirements.txt's $mode part into .venv (torch's wheels are about 2 GB the first time)"
    if [[ $mode == main ]]; then
      .venv/bin/pip install --disable-pip-version-check --progress-bar on -r <(printf '%s\n' "$main_part")
      echo "$want_main" >.venv/.requirements-main.sha256
    else
      .venv/bin/pip install --disable-pip-version-check --progress-bar on -r requirements.txt
      echo "$want_all" >.venv/.requirements-all.sha256
      echo "$want_main" >.venv/.requirements-main.sha256
    fi
  fi
else
  say "[2/4] Python packages: left out (HVD_SKIP_PYTHON=1)"
fi

# --- 3. Build --------------------------------------------------------------------------
# One configuration for both commands: main leaves the tests out until all asks for them
# (turning BUILD_TESTING on adds targets and recompiles nothing). ccache when present.
testing=$([[ $mode == all ]] && echo ON || echo OFF)
type=${HVD_BUILD_TYPE:-RelWithDebInfo}
configure=(-DCMAKE_BUILD_TYPE="$type")
command -v ninja >/dev/null && [[ ! -f "$build_dir/CMakeCache.txt" ]] && configure+=(-G Ninja)
command -v ccache >/dev/null && configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
if [[ $python_side == yes ]]; then
  configure+=(-DHVD_PYTHON=ON -DPython_EXECUTABLE="$PWD/.venv/bin/python")
fi
cached() { sed -n "s/^$1:[A-Z]*=//p" "$build_dir/CMakeCache.txt" 2>/dev/null; }
log=$(mktemp)
reconfigure=()
if [[ ! -f "$build_dir/CMakeCache.txt" ]]; then
  reconfigure=(-DBUILD_TESTING="$testing" ${HVD_CMAKE_ARGS:-})
elif [[ $mode == all && $(cached BUILD_TESTING) != ON ]] || [[ $python_side == yes && $(cached HVD_PYTHON) != ON ]]; then
  reconfigure=(-DBUILD_TESTING="$([[ $mode == all ]] && echo ON || cached BUILD_TESTING)")
fi
if ((${#reconfigure[@]})); then
  cmake -S . -B "$build_dir" "${configure[@]}" "${reconfigure[@]}" >"$log" 2>&1 || { cat "$log" >&2; rm -f "$log"; exit 3; }
fi
rm -f "$log"
targets=()
what="everything (the tests included)"
if [[ $mode == main ]]; then
  targets=(--target hvdrun hvd_shared hello_ranks train_softmax)
  [[ $python_side == yes ]] && targets+=(_hvd _hvd_stub)
  what="hvdrun, libhvd, the examples and the Python extension"
fi
# The steps ninja plans (the build's identity is checked every time, and what includes it
# is rebuilt only when the commit changed: "up to").
steps=""
if [[ $(cached CMAKE_GENERATOR) == Ninja ]]; then
  steps=$(cmake --build "$build_dir" "${targets[@]}" -- -n 2>/dev/null | grep -c '^\[' || true)
fi
say "[3/4] building $what into $build_dir/${steps:+ (up to $steps steps, $(nproc) cores)}"
cmake --build "$build_dir" "${targets[@]}" -j"$(nproc)"

# --- 4. The Python package, from the same build ------------------------------------------
if [[ $python_side == yes ]]; then
  say "[4/4] installing the hvd package into .venv from $build_dir/"
  .venv/bin/pip install -q --disable-pip-version-check --no-build-isolation --no-deps \
    -C build-dir="$build_dir" -C cmake.build-type="$type" -C cmake.define.BUILD_TESTING="$(cached BUILD_TESTING)" .
else
  say "[4/4] the Python package: left out (HVD_SKIP_PYTHON=1)"
fi
