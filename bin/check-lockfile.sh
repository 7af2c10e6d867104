#!/usr/bin/env bash
# Fails when package-lock.json is not what `npm install` would write for package.json: out of
# sync, or missing other platforms' optional packages (which `npm ci` of newer npm refuses).
# Fix with: npm install --package-lock-only
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp package.json package-lock.json "$work/"
(cd "$work" && npm install --package-lock-only --ignore-scripts --no-audit --no-fund >/dev/null)
if ! diff -q package-lock.json "$work/package-lock.json" >/dev/null; then
  echo "package-lock.json is out of date; run: npm install --package-lock-only" >&2
  diff -u package-lock.json "$work/package-lock.json" | head -40 >&2
  exit 1
fi
echo "package-lock.json is complete and in sync"
