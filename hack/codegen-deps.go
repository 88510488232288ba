//go:build tools

// Package hack pins the code generators in go.mod so hack/update-codegen.sh
// runs the version of the module graph.
package hack

import _ "k8s.io/code-generator"
