#!/bin/sh
# Install ember's build dependencies from Debian's packages.
set -e
PKGS="build-essential pkg-config libuv1-dev libmsgpack-dev libopenblas-dev zlib1g-dev liblz4-dev libzstd-dev libxxhash-dev libsodium-dev"
# `install-deps.sh ui`: also headless Chromium and its driver, for the
# browser test (make test-ui).  `install-deps.sh bench`: also numpy, the
# peer bench/pagerank runs in the same run (bench/pagerank_numpy.py).
# Both may be given.
for arg in "$@"; do
  case $arg in
    ui) PKGS="$PKGS chromium chromium-driver" ;;
    bench) PKGS="$PKGS python3-numpy" ;;
  esac
done
SUDO=""
[ "$(id -u)" = 0 ] || SUDO=sudo
missing=""
for p in $PKGS; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi
