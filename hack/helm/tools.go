//go:build tools

// Pins helm's module so `go build helm.sh/helm/v3/cmd/helm` resolves from go.sum.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
