// CoreDNS's own entry point (coremain.Run: -conf, -version, -plugins, signals) with only the
// plugins a test node's DNS needs, built from the published github.com/coredns/coredns module;
// see hack/dns/build.sh. The kubernetes plugin serves cluster.local and, with its multicluster
// option, clusterset.local from ServiceImports (multicluster.x-k8s.io v1alpha1).
package main

import (
	"github.com/coredns/caddy"
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/ready"
)

func main() {
	// dnsserver.Directives is upstream's generated list (core/dnsserver/zdirectives.go, from its
	// plugin.cfg) of every plugin of its full build, in the order a query passes them: errors and
	// cache before kubernetes, or they never see its answers. Keep the plugins linked here (those
	// imported above, and metadata, prometheus and transfer, which they import) in that order, so
	// a Corefile naming a plugin this binary lacks fails to parse ("unknown directive").
	var linked []string
	for _, d := range dnsserver.Directives {
		if _, err := caddy.DirectiveAction("dns", d); err == nil {
			linked = append(linked, d)
		}
	}
	dnsserver.Directives = linked
	coremain.Run()
}
