#!/usr/bin/env bash
# Install pi's own package (the reference implementation) into bench/.pi, which is gitignored.
# Nothing from the package is ever committed; it is only run by bench/pi_runner/run.mjs.
#
#   bash bench/pi_runner/setup.sh            # installs @earendil-works/pi-coding-agent@1.6.0
#   PI_VERSION=1.6.0 bash bench/pi_runner/setup.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix=$(cd "$here/.." && pwd)/.pi
version=${PI_VERSION:-1.6.0}
pkg="$prefix/node_modules/@earendil-works/pi-coding-agent"

command -v node >/dev/null || { echo "setup.sh: node not found" >&2; exit 3; }
command -v npm >/dev/null || { echo "setup.sh: npm not found" >&2; exit 3; }

if [ -f "$pkg/package.json" ] && grep -q "\"version\": \"$version\"" "$pkg/package.json"; then
  echo "pi $version already installed in $prefix"
else
  mkdir -p "$prefix"
  # The package declares engines node>=22.19 (its CLI needs it); the modules used here run on 20.
  # Install scripts are not needed for the session/compaction modules.
  npm install --prefix "$prefix" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "@earendil-works/pi-coding-agent@$version"
fi
node "$here/run.mjs" info >/dev/null && echo "pi $version ready: $pkg"
