#!/usr/bin/env bash
# Regenerates everything under pkg/generated and the zz_generated files in
# pkg/apis with k8s.io/code-generator's kube_codegen.sh, at the version in go.mod.
set -o errexit
set -o nounset
set -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "${SCRIPT_ROOT}"
# A fresh module cache does not have it yet: go list -m does not download.
go mod download k8s.io/code-generator
CODEGEN_PKG=$(go list -m -f '{{.Dir}}' k8s.io/code-generator)
THIS_PKG=github.com/kubevirt/virt-advisor
BOILERPLATE="${SCRIPT_ROOT}/hack/boilerplate.go.txt"

# kube_codegen.sh installs the generators into GOBIN; keep them in _output.
export GOBIN="${SCRIPT_ROOT}/_output/codegen-bin"
mkdir -p "${GOBIN}"

source "${CODEGEN_PKG}/kube_codegen.sh"

# The internal option types, their declared checks, the fuzzer's defaults
# and the profiles' docs tables, from the option structs of v1alpha1 and
# their markers: first, as the generators below read the internal types.
go run ./hack/optionsgen

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"

# apimachinery's own types break some API rules; the list of known
# violations lets gen_openapi pass out of tree and catches new ones.
report_filename="${SCRIPT_ROOT}/hack/api-rules-violations.list"
update_report=""
if [[ "${UPDATE_API_KNOWN_VIOLATIONS:-}" == "true" ]]; then
    update_report="--update-report"
fi

# FleetConfig's rollout strategy has IntOrString fields (OCM's, verbatim).
kube::codegen::gen_openapi \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    --output-dir "${SCRIPT_ROOT}/pkg/generated/openapi" \
    --output-pkg "${THIS_PKG}/pkg/generated/openapi" \
    --report-filename "${report_filename}" \
    --output-model-name-file "zz_generated.model_name.go" \
    ${update_report:+"${update_report}"} \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"

kube::codegen::gen_client \
    --with-watch \
    --with-applyconfig \
    --applyconfig-openapi-schema <(go run ./hack/models-schema) \
    --output-dir "${SCRIPT_ROOT}/pkg/generated" \
    --output-pkg "${THIS_PKG}/pkg/generated" \
    --boilerplate "${BOILERPLATE}" \
    "${SCRIPT_ROOT}/pkg/apis"
