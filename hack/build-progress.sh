#!/usr/bin/env bash
# Progress of a long `go build -v`: reads its output (one package path per
# line as it is compiled), prints how many packages are done out of TOTAL
# and the time elapsed, every PROGRESS_EVERY seconds (default 20), and
# passes every other line (errors, warnings) through unchanged.
#
#   go build -v ... 2>&1 | hack/build-progress.sh WHAT TOTAL
#
# TOTAL is the number of packages the build may compile (`go list -deps`);
# those already in Go's build cache are not compiled again, so a build can
# end before it reaches TOTAL.
set -euo pipefail
what=$1 total=$2 every=${PROGRESS_EVERY:-20}

elapsed() { printf '%dm%02ds' $((SECONDS / 60)) $((SECONDS % 60)); }

SECONDS=0
n=0 last=0
while IFS= read -r line; do
	if [[ $line =~ ^[A-Za-z0-9._~+/-]+$ ]]; then
		n=$((n + 1))
		if ((SECONDS - last >= every)); then
			last=$SECONDS
			printf '>> %s: %d of at most %d packages compiled, %s elapsed\n' "$what" "$n" "$total" "$(elapsed)"
		fi
	else
		printf '%s\n' "$line"
	fi
done
printf '>> %s: %d packages compiled in %s\n' "$what" "$n" "$(elapsed)"
