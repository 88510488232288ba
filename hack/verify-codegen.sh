#!/usr/bin/env bash
# Fails when the generated code differs from what hack/update-codegen.sh
# produces: it regenerates in a scratch copy of the tree and compares.
set -o errexit
set -o nounset
set -o pipefail

SCRIPT_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "${TMP}"' EXIT

cd "${SCRIPT_ROOT}"
git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "${TMP}" 2>/dev/null || true
(cd "${TMP}" && bash hack/update-codegen.sh >/dev/null)

status=0
for path in pkg/apis pkg/generated hack/api-rules-violations.list docs/profiles; do
    if ! diff -Naupr "${SCRIPT_ROOT}/${path}" "${TMP}/${path}"; then
        status=1
    fi
done
if [[ ${status} -ne 0 ]]; then
    echo "Generated code is out of date: run hack/update-codegen.sh" >&2
    exit 1
fi
echo "Generated code is up to date."
