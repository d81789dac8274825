#!/usr/bin/env bash
# Builds kube-apiserver and etcd from their Go modules into a per-machine cache
# keyed by version, once. Prints the bin directory as its last line.
# With --controllers, also kube-controller-manager and kube-scheduler (hack/controlplane/controllers:
# the same k8s.io/kubernetes module and version), into the same directory.
# Go's module and build caches live in $HOME, so a rebuild after a cache wipe is
# incremental on the same machine.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
module_version() { awk -v m="$1" '$1 == m { print $2; exit } $1 == "require" && $2 == m { print $3; exit }' "$2"; }
k8s_version=$(module_version k8s.io/kubernetes "$here/kube-apiserver/go.mod")
etcd_version=$(module_version go.etcd.io/etcd/server/v3 "$here/etcd/go.mod")
cache=${MESH_ENDPOINTS_CACHE:-$HOME/.cache/mesh-endpoints}
bin="$cache/control-plane/k8s-$k8s_version-etcd-$etcd_version"
export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=readonly
controllers=false
[[ "${1:-}" == --controllers ]] && controllers=true
controllers_version=$(module_version k8s.io/kubernetes "$here/controllers/go.mod")
if [[ "$controllers_version" != "$k8s_version" ]]; then
  echo "hack/controlplane/controllers/go.mod has k8s.io/kubernetes $controllers_version, kube-apiserver's $k8s_version: keep them one version" >&2
  exit 1
fi

# Upstream's version stamp (hack/lib/version.sh), so /version and the components' logs report the
# real release instead of the v0.0.0-master placeholder.
minor=$(echo "$k8s_version" | cut -d. -f2)
ldflags="-s -w"
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
done

if [[ ! -x "$bin/etcd" ]]; then
  echo "building etcd $etcd_version into $bin (once per machine)..." >&2
  mkdir -p "$bin"
  (cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin/etcd.tmp" .)
  mv "$bin/etcd.tmp" "$bin/etcd"
fi

if [[ ! -x "$bin/kube-apiserver" ]]; then
  echo "building kube-apiserver $k8s_version into $bin (once per machine; about 5 min cold on 2 cores)..." >&2
  mkdir -p "$bin"
  (cd "$here/kube-apiserver" && go build -trimpath -tags selinux,notest -ldflags "$ldflags" \
    -o "$bin/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$bin/kube-apiserver.tmp" "$bin/kube-apiserver"
fi
if $controllers && [[ ! -x "$bin/kube-controller-manager" || ! -x "$bin/kube-scheduler" ]]; then
  echo "building kube-controller-manager and kube-scheduler $k8s_version into $bin (once per machine; minutes)..." >&2
  tmp=$(mktemp -d "$bin/.controllers.XXXXXX")
  # One go build for both: they share most packages, compiled once.
  (cd "$here/controllers" && go build -trimpath -tags selinux,notest -ldflags "$ldflags" -o "$tmp/" \
    k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)
  mv "$tmp/kube-controller-manager" "$tmp/kube-scheduler" "$bin/"
  rmdir "$tmp"
fi
echo "$bin"
