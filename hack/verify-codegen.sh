#!/usr/bin/env bash
# Fails when the generated API code or CRDs (see hack/update-codegen.sh) do not
# match the API types in the working tree. It regenerates into a temporary copy
# of the inputs and compares, so it never modifies the tree, works on
# uncommitted edits as well as on a fresh clone, and also reports generated
# files that should no longer exist.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
cd "$ROOT"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Everything the generators read, and everything they write.
inputs=(go.mod go.sum hack pkg/apis manifests/crds)
compared=(pkg/apis manifests/crds)
tar -cf - "${inputs[@]}" | tar -xf - -C "$tmp"

if ! "$ROOT/hack/update-codegen.sh" "$tmp" >"$tmp.log" 2>&1; then
	cat "$tmp.log" >&2
	rm -f "$tmp.log"
	echo "verify-codegen: generation failed" >&2
	exit 1
fi
rm -f "$tmp.log"

stale=0
for path in "${compared[@]}"; do
	if ! diff -r -u "$path" "$tmp/$path"; then stale=1; fi
done
if [ "$stale" -ne 0 ]; then
	echo "verify-codegen: generated files are stale (diff above is tree -> expected): run make generate" >&2
	exit 1
fi
echo "verify-codegen: generated code and CRDs are up to date"
