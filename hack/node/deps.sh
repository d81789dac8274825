#!/usr/bin/env bash
# The Debian packages the image and the node need, installed when missing: umoci (writes the
# image), runc and containerd (run it; the node's runtime), containernetworking-plugins (the
# Pods' CNI bridge), iptables (the kubernetes Service's address inside the node's namespace, and
# kube-proxy's iptables mode: iptables-save/-restore and the ip6tables ones come with it; nft is
# not needed there, kube-proxy only skips its nftables clean-up without it).
set -euo pipefail
need=()
command -v umoci >/dev/null || need+=(umoci)
command -v runc >/dev/null || need+=(runc)
command -v containerd >/dev/null || need+=(containerd)
[[ -x /usr/lib/cni/bridge ]] || need+=(containernetworking-plugins)
command -v iptables >/dev/null || need+=(iptables)
if (( ${#need[@]} )); then
  echo "installing ${need[*]} (apt-get)..." >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "${need[@]}" >/dev/null; }
fi
