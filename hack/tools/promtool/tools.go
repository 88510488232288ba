//go:build tools

// Package tools pins promtool, which tests the alerting rules in
// artifacts/monitoring; it is built by `make test` into _output/bin.
package tools

import _ "github.com/prometheus/prometheus/cmd/promtool"
