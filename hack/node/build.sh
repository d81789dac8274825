#!/usr/bin/env bash
# Builds the node's own binaries into a per-machine cache keyed by version, once: the kubelet
# and kube-proxy from the same k8s.io/kubernetes module and version as kube-apiserver
# (hack/node/kubelet/go.mod is hack/controlplane/kube-apiserver/go.mod with the two as its
# tools, tidied; no shared module at another version), and the pause image (hack/node/pause)
# as an OCI archive.
# Prints the bin directory as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
k8s_version=$(awk '$1 == "k8s.io/kubernetes" { print $2; exit }' "$here/kubelet/go.mod")
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
bin="$cache/node/k8s-$k8s_version"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
mkdir -p "$bin"

# The kubelet and kube-proxy, whichever is missing (one go build when both are).
missing=()
for cmd in kubelet kube-proxy; do [[ -x "$bin/$cmd" ]] || missing+=("$cmd"); done
if (( ${#missing[@]} )); then
  echo "building ${missing[*]} $k8s_version into $bin (once per machine; minutes, less after kube-apiserver's build)..." >&2
  minor=$(echo "$k8s_version" | cut -d. -f2)
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  out="$bin/.build.$$"
  rm -rf "$out" && mkdir "$out"
  (cd "$here/kubelet" && go build -trimpath -tags selinux,notest -ldflags "$ldflags" \
    -o "$out/" "${missing[@]/#/k8s.io/kubernetes/cmd/}")
  for cmd in "${missing[@]}"; do mv "$out/$cmd" "$bin/$cmd"; done
  rmdir "$out"
fi

if [[ ! -x "$bin/pause" ]]; then
  (cd "$here/pause" && go build -trimpath -ldflags "-s -w" -o "$bin/pause.tmp" .)
  mv "$bin/pause.tmp" "$bin/pause"
fi
# The sandbox image the kubelet asks containerd for (its --pod-infra-container-image default),
# as an OCI archive for `ctr images import --base-name registry.k8s.io/pause`.
if [[ ! -f "$bin/pause-oci.tar" ]]; then
  command -v umoci >/dev/null || bash "$here/deps.sh"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  mkdir -p "$tmp/rootfs"
  install -m 0755 "$bin/pause" "$tmp/rootfs/pause"
  image="$tmp/layout:3.10.1"
  umoci init --layout "$tmp/layout"
  umoci new --image "$image"
  umoci insert --image "$image" "$tmp/rootfs" /
  umoci config --image "$image" --config.entrypoint /pause --config.user 65535:65535
  umoci gc --layout "$tmp/layout"
  tar -cf "$bin/pause-oci.tar.tmp" -C "$tmp/layout" --owner=0 --group=0 --numeric-owner .
  mv "$bin/pause-oci.tar.tmp" "$bin/pause-oci.tar"
fi
echo "$bin"
