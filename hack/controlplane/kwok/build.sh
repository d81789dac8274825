#!/usr/bin/env bash
# Builds kwok from its Go module (the version pinned in hack/controlplane/kwok/go.mod) into a
# per-machine cache keyed by version, once, next to upstream's own default Stages (what
# `kwokctl` gives its kwok: nodes become Ready and keep a Lease; Pods get IPs, become Running and
# Ready, complete, and go when deleted) as stages.yaml for its --config.
# Prints the directory as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "sigs.k8s.io/kwok" { print $2; exit }' "$here/go.mod")
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
bin="$cache/kwok/$version"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
if [[ ! -x "$bin/kwok" ]]; then
  echo "building kwok $version into $bin (once per machine)..." >&2
  mkdir -p "$bin"
  (cd "$here" && go build -trimpath -ldflags "-s -w" -o "$bin/kwok.tmp.$$" sigs.k8s.io/kwok/cmd/kwok)
  mv "$bin/kwok.tmp.$$" "$bin/kwok"
fi
if [[ ! -s "$bin/stages.yaml" ]]; then
  src=$(cd "$here" && go list -m -f '{{.Dir}}' sigs.k8s.io/kwok)
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml; do
    echo "---"
    cat "$src/kustomize/stage/$f"
  done >"$bin/stages.yaml.tmp.$$"
  mv "$bin/stages.yaml.tmp.$$" "$bin/stages.yaml"
fi
echo "$bin"
