#!/usr/bin/env bash
# Builds the MCS API conformance suite (kubernetes-sigs/mcs-api conformance/, never vendored
# here) into a per-machine cache keyed by its go.mod, go.sum and sources, once. Its dependencies
# come from the Go module proxy as go.sum pins them. Prints the binary's path as its last line.
#
# The suite is looked for in this order:
#   1. MCS_CONFORMANCE_DIR, when set (then the only place: a path the user names is not
#      second-guessed by another copy);
#   2. the Go module proxy: the nested module sigs.k8s.io/mcs-api/conformance at the tag pinned
#      below, where the user's proxy serves it (proxy.golang.org answered 404 for it in 2026);
#   3. ../shared/mcs-conformance beside the project root (or beside the checkout this one was
#      cloned from).
# When none has it, the script prints one line naming the three places and exits 69
# (EX_UNAVAILABLE), so its callers can tell "no suite here" from a failed build: `make test`
# and the conformance test skip it, unless CI=true.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
module=sigs.k8s.io/mcs-api/conformance
# The tag conformance/v0.5.0: the same specs as ../shared/mcs-conformance (four commits later,
# which only lengthen three waits from 20 s to 60 s).
version=v0.5.0
NOT_FOUND=69
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

has_suite() { [[ -f "$1/go.mod" && -f "$1/go.sum" ]]; }

# The module's directory in the module cache, or nothing (any failure: not served, no network).
from_proxy() {
  local tmp json dir
  tmp=$(mktemp -d)
  # Outside any module: the download must not read or touch this project's go.mod.
  json=$(cd "$tmp" && timeout 120 go mod download -json "$module@$version" 2>/dev/null) || true
  rmdir "$tmp"
  dir=$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p' <<<"$json")
  if [[ -n "$dir" ]] && has_suite "$dir"; then echo "$dir"; fi
}

shared=$(dirname "$root")/shared/mcs-conformance
# A clone of a local checkout made elsewhere (a clean-clone CI run in /tmp) finds the suite
# beside the checkout it was cloned from.
origin=$(git -C "$root" config --get remote.origin.url 2>/dev/null || true)
origin=${origin#file://}
if ! has_suite "$shared" && [[ "$origin" == /* && -d "$origin" ]]; then
  # Resolved first: `git clone . DIR` records the origin as /path/to/checkout/.
  origin=$(cd "$origin" && pwd -P)
  shared=$(dirname "${origin%/.git}")/shared/mcs-conformance
fi

suite=
if [[ -n "${MCS_CONFORMANCE_DIR:-}" ]]; then
  has_suite "$MCS_CONFORMANCE_DIR" && suite=$MCS_CONFORMANCE_DIR
else
  suite=$(from_proxy)
  if [[ -z "$suite" ]] && has_suite "$shared"; then suite=$shared; fi
fi
if [[ -z "$suite" ]]; then
  if [[ -n "${MCS_CONFORMANCE_DIR:-}" ]]; then
    echo "mcs-conformance: no MCS conformance suite: MCS_CONFORMANCE_DIR ($MCS_CONFORMANCE_DIR) has no go.mod and go.sum (the Go module proxy's $module@$version and $shared are looked at only when it is unset)" >&2
  else
    echo "mcs-conformance: no MCS conformance suite: MCS_CONFORMANCE_DIR is unset, the Go module proxy does not serve $module@$version, and $shared has no go.mod and go.sum (set MCS_CONFORMANCE_DIR to the conformance/ folder of kubernetes-sigs/mcs-api)" >&2
  fi
  exit "$NOT_FOUND"
fi

# The key: every file the build reads, name and content.
files=$(cd "$suite" && find . -maxdepth 1 -type f \( -name go.mod -o -name go.sum -o -name '*.go' -o -name '*.gohtml' \) | LC_ALL=C sort)
key=$(cd "$suite" && sha256sum $files | sha256sum | cut -c1-16)
out="$cache/mcs-conformance/$key"
bin="$out/mcs-conformance.test"
if [[ ! -x "$bin" ]]; then
  echo "building the MCS conformance suite from $suite into $out (once per machine)..." >&2
  # Built from a copy: the shared folder may be read-only, and the module cache is.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  (cd "$suite" && cp $files "$work/")
  chmod -R u+w "$work"
  mod=-mod=readonly
  # The tagged module's go.mod replaces sigs.k8s.io/mcs-api by its parent folder in the mcs-api
  # tree (`=> ..`), which is not there outside that tree: the requirement as tagged is used
  # instead, and its go.sum lines are added to the copy.
  replaced=$(awk '$0 ~ /=>[[:space:]]*\./ { print ($1 == "replace" ? $2 : $1) }' "$work/go.mod")
  for path in $replaced; do
    (cd "$work" && go mod edit -dropreplace="$path")
    mod=-mod=mod
  done
  mkdir -p "$out"
  (cd "$work" && go test -c "$mod" -trimpath -o "$bin.tmp.$$" .)
  mv "$bin.tmp.$$" "$bin"
fi
echo "$bin"
