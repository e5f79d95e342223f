#!/usr/bin/env bash
# Regenerates, from scratch, everything derived from Caldera's API types:
#   - zz_generated.deepcopy.go in every API package    (k8s.io/code-generator deepcopy-gen)
#   - pkg/apis/generated/{applyconfiguration,clientset/versioned,listers,informers/externalversions}
#                                                      (applyconfiguration-, client-, lister-, informer-gen)
#   - manifests/crds/<group>_<plural>.yaml for Caldera's own groups (controller-gen)
# Previous output is deleted first so files of removed types do not linger.
# The PodGroup CRD in manifests/crds is copied by `make crds`, not generated here.
#
# The generators are pinned in hack/tools/go.mod (Go `tool` directives) and run
# with `go tool -modfile=hack/tools/go.mod`, so the main module's graph stays
# free of them. Only Go and the module proxy are needed.
#
# Usage: hack/update-codegen.sh [repo-root]   (default: this script's repository)
set -euo pipefail

ROOT=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)}
cd "$ROOT"

GO=${GO:-go}
MODULE=github.com/caldera-sched/caldera
APIS_DIR=pkg/apis
GEN_DIR=$APIS_DIR/generated
GEN_PKG=$MODULE/$GEN_DIR
CRD_DIR=manifests/crds
BOILERPLATE=hack/boilerplate.go.txt
TOOLS_MODFILE=hack/tools/go.mod

tool() { "$GO" tool -modfile="$TOOLS_MODFILE" "$@"; }

# API packages: directories under pkg/apis/<group>/<version> with a
# +groupName doc comment. Client packages only for those with +genclient types.
api_dirs=()
client_dirs=()
while IFS= read -r dir; do
	case "$(basename "$dir")" in v[0-9]*) ;; *) continue ;; esac
	api_dirs+=("$dir")
	if grep -qsE '^\s*//\s*\+genclient\b' "$dir"/*.go; then
		client_dirs+=("$dir")
	fi
done < <(grep -rlE '^//\s*\+groupName=' --include='*.go' "$APIS_DIR" | grep -v "^$GEN_DIR/" | xargs -n1 dirname | LC_ALL=C sort -u)
if [ ${#api_dirs[@]} -eq 0 ]; then
	echo "no API packages with +groupName under $APIS_DIR" >&2
	exit 1
fi
api_pkgs=("${api_dirs[@]/#/$MODULE/}")
client_pkgs=("${client_dirs[@]/#/$MODULE/}")

# Our CRDs are named <group>_<plural>.yaml; collect the groups to delete them.
groups=()
for dir in "${api_dirs[@]}"; do
	groups+=("$(sed -nE 's|^//\s*\+groupName=([^ ]+).*|\1|p' "$dir"/*.go | head -n1)")
done

echo "generate: removing old output"
rm -rf "$GEN_DIR"
for dir in "${api_dirs[@]}"; do rm -f "$dir"/zz_generated.*.go; done
for group in "${groups[@]}"; do rm -f "$CRD_DIR/${group}"_*.yaml; done

echo "generate: deepcopy"
tool deepcopy-gen \
	--go-header-file "$BOILERPLATE" \
	--output-file zz_generated.deepcopy.go \
	"${api_pkgs[@]}"

if [ ${#client_pkgs[@]} -gt 0 ]; then
	inputs=()
	for dir in "${client_dirs[@]}"; do inputs+=(--input "${dir#"$APIS_DIR"/}"); done

	echo "generate: applyconfigurations"
	tool applyconfiguration-gen \
		--go-header-file "$BOILERPLATE" \
		--output-dir "$GEN_DIR/applyconfiguration" \
		--output-pkg "$GEN_PKG/applyconfiguration" \
		"${client_pkgs[@]}"

	echo "generate: clientset"
	tool client-gen \
		--go-header-file "$BOILERPLATE" \
		--output-dir "$GEN_DIR/clientset" \
		--output-pkg "$GEN_PKG/clientset" \
		--clientset-name versioned \
		--apply-configuration-package "$GEN_PKG/applyconfiguration" \
		--input-base "$MODULE/$APIS_DIR" \
		"${inputs[@]}"

	echo "generate: listers"
	tool lister-gen \
		--go-header-file "$BOILERPLATE" \
		--output-dir "$GEN_DIR/listers" \
		--output-pkg "$GEN_PKG/listers" \
		"${client_pkgs[@]}"

	echo "generate: informers"
	tool informer-gen \
		--go-header-file "$BOILERPLATE" \
		--output-dir "$GEN_DIR/informers" \
		--output-pkg "$GEN_PKG/informers" \
		--versioned-clientset-package "$GEN_PKG/clientset/versioned" \
		--listers-package "$GEN_PKG/listers" \
		"${client_pkgs[@]}"
fi

echo "generate: CRDs"
paths=()
for dir in "${api_dirs[@]}"; do paths+=("paths=./$dir"); done
tool controller-gen crd:crdVersions=v1 "${paths[@]}" output:crd:artifacts:config="$CRD_DIR"
chmod 644 "$CRD_DIR"/*.yaml
