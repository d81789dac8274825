#!/usr/bin/env bash
# Builds helm from its Go module (the release pinned in hack/helm/go.mod) into a
# per-machine cache keyed by version, once. Prints the binary's path as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=$(awk '$1 == "helm.sh/helm/v3" { print $2; exit } $1 == "require" && $2 == "helm.sh/helm/v3" { print $3; exit }' "$here/go.mod")
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
bin="$cache/helm/$version"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly

if [[ ! -x "$bin/helm" ]]; then
  echo "building helm $version into $bin (once per machine; a few minutes cold on 2 cores)..." >&2
  mkdir -p "$bin"
  # Stamp the version as upstream's Makefile does, so `helm version` reports the release.
  # and the Kubernetes version `helm template` assumes from client-go (v0.N → 1.N).
  client_go_minor=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$here/go.mod" | cut -d. -f2)
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$client_go_minor"
  done
  (cd "$here" && go build -trimpath -ldflags "$ldflags" -o "$bin/helm.tmp" helm.sh/helm/v3/cmd/helm)
  mv "$bin/helm.tmp" "$bin/helm"
fi
echo "$bin/helm"
