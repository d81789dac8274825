#!/usr/bin/env bash
# Builds the MCS API conformance suite (kubernetes-sigs/mcs-api conformance/, kept beside the
# project in ../shared/mcs-conformance, never vendored here) into a per-machine cache keyed by
# its go.mod, go.sum and sources, once. Its dependencies come from the Go module proxy as go.sum
# pins them. Prints the binary's path as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
suite=${MCS_CONFORMANCE_DIR:-$(dirname "$root")/shared/mcs-conformance}
# A clone of a local checkout made elsewhere (a clean-clone CI run in /tmp) finds the suite
# beside the checkout it was cloned from.
origin=$(git -C "$root" config --get remote.origin.url 2>/dev/null || true)
origin=${origin#file://}
if [[ -z "${MCS_CONFORMANCE_DIR:-}" && ! -f "$suite/go.mod" && "$origin" == /* && -d "$origin" ]]; then
  # Resolved first: `git clone . DIR` records the origin as /path/to/checkout/.
  origin=$(cd "$origin" && pwd -P)
  suite=$(dirname "${origin%/.git}")/shared/mcs-conformance
fi
if [[ ! -f "$suite/go.mod" || ! -f "$suite/go.sum" ]]; then
  echo "mcs-conformance: the suite is not at $suite (expected ../shared/mcs-conformance beside the project root, with go.mod and go.sum; MCS_CONFORMANCE_DIR overrides)" >&2
  exit 1
fi
# The key: every file the build reads, name and content.
files=$(cd "$suite" && find . -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' -o -name '*.gohtml' \) | LC_ALL=C sort)
key=$(cd "$suite" && sha256sum $files | sha256sum | cut -c1-16)
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
out="$cache/mcs-conformance/$key"
bin="$out/mcs-conformance.test"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
if [[ ! -x "$bin" ]]; then
  echo "building the MCS conformance suite into $out (once per machine)..." >&2
  # Built from a copy: the shared folder may be read-only, and the build must not write there.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$suite" && cp $files "$work/")
  mkdir -p "$out"
  (cd "$work" && go test -c -trimpath -o "$bin.tmp.$$" .)
  mv "$bin.tmp.$$" "$bin"
fi
echo "$bin"
