#!/usr/bin/env bash
# Builds CoreDNS (hack/dns/coredns: upstream's coremain with only the kubernetes plugin, its
# multicluster option serving clusterset.local from ServiceImports, and errors, log, bind,
# health, ready, cache) for the test nodes' Pod DNS, from the github.com/coredns/coredns module
# pinned in hack/dns/coredns/go.mod, into a per-machine cache keyed by version, once.
# Prints the binary's path as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "github.com/coredns/coredns" { print $2; exit } $1 == "require" && $2 == "github.com/coredns/coredns" { print $3; exit }' "$here/coredns/go.mod")
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
bin="$cache/dns/coredns-$version"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

if [[ ! -x "$bin/coredns" ]]; then
  echo "building CoreDNS $version into $bin (once per machine; a few minutes cold on 2 cores)..." >&2
  mkdir -p "$bin"
  (cd "$here/coredns" && go build -trimpath -ldflags "-s -w" -o "$bin/coredns.tmp.$$" .)
  mv "$bin/coredns.tmp.$$" "$bin/coredns"
fi
echo "$bin/coredns"
