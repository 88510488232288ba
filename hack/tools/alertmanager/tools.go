//go:build tools

// Package tools pins Alertmanager, which the e2e suite runs as a process
// (test/env) to receive the alerts of the Prometheus it runs; it is built
// by `make tools` into _output/bin.
package tools

import _ "github.com/prometheus/alertmanager/cmd/alertmanager"
