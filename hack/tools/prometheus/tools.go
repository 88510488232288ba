//go:build tools

// Package tools pins Prometheus, which the e2e suite runs as a process
// (test/env) to evaluate alerting rules over a metric a test controls; it
// is built by `make tools` into _output/bin.
package tools

import _ "github.com/prometheus/prometheus/cmd/prometheus"
