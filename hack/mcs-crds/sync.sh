#!/usr/bin/env bash
# Copies the official ServiceExport and ServiceImport CRDs (config/crd/ of the sigs.k8s.io/mcs-api
# Go module, fetched through the Go module proxy) into the chart, unchanged, so the chart, the test
# clusters and the conformance suite all use upstream's own definitions.
# Usage: hack/mcs-crds/sync.sh [version]   (default: the version the vendored files carry)
# src/testing/mcs-crds.test.ts checks the vendored files against the module cache.
set -euo pipefail
repo=$(cd "$(dirname "$0")/../.." && pwd)
dest="$repo/charts/mesh-endpoints/files/mcs-crds"
current=$(sed -n 's/^ *multicluster.x-k8s.io\/release-version: "\(.*\)"$/\1/p' "$dest/multicluster.x-k8s.io_serviceexports.yaml" | head -1)
version=${1:-$current}
export GOTOOLCHAIN=local GOFLAGS=-mod=mod
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
dir=$(cd "$tmp" && go mod download -json "sigs.k8s.io/mcs-api@$version" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
[[ -d "$dir/config/crd" ]] || { echo "sigs.k8s.io/mcs-api@$version has no config/crd/" >&2; exit 1; }
for f in multicluster.x-k8s.io_serviceexports.yaml multicluster.x-k8s.io_serviceimports.yaml; do
  install -m 0644 "$dir/config/crd/$f" "$dest/$f"
done
echo "charts/mesh-endpoints/files/mcs-crds: sigs.k8s.io/mcs-api $version"
