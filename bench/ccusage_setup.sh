#!/usr/bin/env bash
# Install ccusage (the usage oracle for Claude Code folders) into bench/.ccusage-native, gitignored.
# ccusage 20 is a native binary shipped in a per-platform npm package (@ccusage/ccusage-linux-x64
# here); the `ccusage` package's JS launcher finds it. Nothing from these packages is committed.
#
#   bash bench/ccusage_setup.sh        # prints the binary's path on success
#   CCUSAGE_VERSION=20.0.24 bash bench/ccusage_setup.sh
#
# Exit 3 without node or npm; the tests that use it then skip.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
prefix="$here/.ccusage-native"
version=${CCUSAGE_VERSION:-20.0.24}

command -v node >/dev/null || { echo "ccusage_setup.sh: node not found" >&2; exit 3; }
command -v npm >/dev/null || { echo "ccusage_setup.sh: npm not found" >&2; exit 3; }

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) platform=linux-x64 ;;
  Linux-aarch64) platform=linux-arm64 ;;
  Darwin-arm64) platform=darwin-arm64 ;;
  Darwin-x86_64) platform=darwin-x64 ;;
  *) echo "ccusage_setup.sh: no ccusage binary for $(uname -s)-$(uname -m)" >&2; exit 3 ;;
esac
native="$prefix/node_modules/@ccusage/ccusage-$platform"

if [ -f "$native/package.json" ] && grep -q "\"version\": \"$version\"" "$native/package.json"; then
  :
else
  mkdir -p "$prefix"
  # The platform package is an optional dependency of `ccusage`; name it too so that npm's
  # platform filter or an --omit=optional default cannot leave it out.
  npm install --prefix "$prefix" --no-audit --no-fund --ignore-scripts --loglevel=error \
    "ccusage@$version" "@ccusage/ccusage-$platform@$version" >&2
fi
binary="$native/bin/ccusage"
[ -f "$binary" ] || binary=$(find "$native" -maxdepth 3 -type f -name 'ccusage*' | head -1)
# The package's file is not marked executable (npm sets the mode only for a package's own "bin").
[ -n "$binary" ] && chmod u+x "$binary"
[ -n "$binary" ] || { echo "ccusage_setup.sh: no executable in $native" >&2; exit 4; }
echo "$binary"
