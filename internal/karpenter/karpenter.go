// Package karpenter runs Karpenter's KWOK cloud provider (a real cluster
// autoscaler whose "instances" are Node objects it creates itself) and,
// where nothing else plays the kubelet of those nodes, the KWOK controller,
// as processes against a local apiserver. The integration harness
// (test/integration/harness) and bin/caldera-sandbox --autoscaler share it:
// how the binaries are built and found, the instance types file, the
// processes' flags and environment, and the NodePool and KWOKNodeClass
// objects.
//
// Both binaries come from test/neighbours/karpenter, a module of its own
// (its dependencies never reach Caldera's go.mod), built with Toolchain:
// `make karpenter` writes them to bin/, the harness to _output/neighbours.
// The package imports no testing: the sandbox binary links it.
package karpenter

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/caldera-sched/caldera/internal/neighbour"
)

// Module is the tool module that pins Karpenter's and KWOK's releases,
// relative to the repository root; karpenterMain and kwokMain are their
// main packages.
const (
	Module        = "test/neighbours/karpenter"
	karpenterMain = "sigs.k8s.io/karpenter/kwok"
	kwokMain      = "sigs.k8s.io/kwok/cmd/kwok"
)

// Toolchain is the Go toolchain the tool module builds with: Karpenter
// v1.15.0 declares go 1.26.9, newer than the Go the repository builds
// with, so its build alone sets GOTOOLCHAIN (the module proxy serves the
// toolchain). The Makefile's KARPENTER_TOOLCHAIN is the same.
const Toolchain = "go1.27.3"

// KWOKNodeAnnotation marks the nodes Karpenter's KWOK provider creates
// (annotation and label, value "fake"); a KWOK controller started by
// StartKWOK manages the nodes with that annotation. NodePoolLabel names a
// Karpenter node's NodePool.
const (
	KWOKNodeAnnotation = "kwok.x-k8s.io/node"
	NodePoolLabel      = "karpenter.sh/nodepool"
)

// The Karpenter resources callers read and write.
var (
	NodePools       = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaims      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClasses = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

// crdFiles are the CRDs Karpenter's controllers watch (the KWOK chart
// installs the same), relative to Karpenter's module. The Makefile's
// KARPENTER_CRD_FILES lists the same files.
var crdFiles = []string{
	"pkg/apis/crds/karpenter.sh_nodepools.yaml",
	"pkg/apis/crds/karpenter.sh_nodeclaims.yaml",
	"pkg/apis/crds/karpenter.sh_nodeoverlays.yaml",
	"pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml",
	"kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
}

// stageFiles are KWOK's "fast" stages (kustomize/stage/fast, which
// Karpenter's hack/install-kwok.sh applies): nodes Ready at once with a
// Lease heartbeat, pods Running once bound, Job pods completed, deleted
// pods removed. Relative to kustomize/stage of KWOK's module; the
// Makefile's KWOK_STAGE_FILES lists the same files.
var stageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// Artifacts are the built binaries and the files they need, laid out as
// `make karpenter` lays them out in bin/: karpenter-kwok, kwok,
// karpenter-crds/ and kwok-stages/.
type Artifacts struct {
	// Dir holds everything below.
	Dir string
	// Karpenter and KWOK are the two binaries.
	Karpenter, KWOK string
	// CRDDir holds Karpenter's CRDs (crdFiles, flat).
	CRDDir string
	// StagesDir holds KWOK's stages (stageFiles, flat).
	StagesDir string
}

// ArtifactsIn is the layout of dir; it does not look at the files.
func ArtifactsIn(dir string) Artifacts {
	return Artifacts{
		Dir:       dir,
		Karpenter: filepath.Join(dir, "karpenter-kwok"),
		KWOK:      filepath.Join(dir, "kwok"),
		CRDDir:    filepath.Join(dir, "karpenter-crds"),
		StagesDir: filepath.Join(dir, "kwok-stages"),
	}
}

// CheckKarpenter says which of the Karpenter binary and its CRDs are
// missing from a (the KWOK binary and stages are not needed by a caller
// that plays the kubelet itself).
func (a Artifacts) CheckKarpenter() error {
	for _, f := range append([]string{a.Karpenter}, crdPaths(a.CRDDir)...) {
		if _, err := os.Stat(f); err != nil {
			return fmt.Errorf("%s is missing (run `make karpenter` in the repository to build Karpenter's KWOK provider and gather its CRDs)", f)
		}
	}
	return nil
}

// crdPaths are crdFiles' places in dir.
func crdPaths(dir string) []string {
	var out []string
	for _, f := range crdFiles {
		out = append(out, filepath.Join(dir, filepath.Base(f)))
	}
	return out
}

// Stages is KWOK's stages in a, as one multi-document YAML file.
func (a Artifacts) Stages() ([]byte, error) {
	var out []byte
	for _, f := range stageFiles {
		data, err := os.ReadFile(filepath.Join(a.StagesDir, filepath.Base(f)))
		if err != nil {
			return nil, fmt.Errorf("reading KWOK's stage: %w", err)
		}
		out = append(out, "---\n"...)
		out = append(out, data...)
	}
	return out, nil
}

// Build builds Karpenter's KWOK provider and the KWOK controller from the
// tool module of the repository at root into out with Toolchain (the first
// build takes minutes; later ones find the binaries up to date; each binary
// is built once per process, by neighbour.Build) and copies the CRDs and
// stages beside them, as `make karpenter` does for bin/.
func Build(root, out string) (Artifacts, error) {
	a := ArtifactsIn(out)
	mod := filepath.Join(root, Module)
	for _, d := range []string{a.CRDDir, a.StagesDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return a, err
		}
	}
	env := []string{"GOTOOLCHAIN=" + Toolchain}
	for bin, pkg := range map[string]string{a.Karpenter: karpenterMain, a.KWOK: kwokMain} {
		if err := neighbour.Build(neighbour.Binary{Dir: mod, Main: pkg, Out: bin, Env: env}); err != nil {
			return a, fmt.Errorf("building %s: %w", pkg, err)
		}
	}
	moduleDir := func(path string) (string, error) {
		list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", path)
		list.Dir = mod
		list.Env = append(os.Environ(), env...)
		out, err := list.Output()
		if err != nil {
			return "", fmt.Errorf("locating %s's module: %v", path, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	karp, err := moduleDir("sigs.k8s.io/karpenter")
	if err != nil {
		return a, err
	}
	if err := copyFlat(karp, crdFiles, a.CRDDir); err != nil {
		return a, fmt.Errorf("copying Karpenter's CRDs: %w", err)
	}
	kwok, err := moduleDir("sigs.k8s.io/kwok")
	if err != nil {
		return a, err
	}
	if err := copyFlat(filepath.Join(kwok, "kustomize", "stage"), stageFiles, a.StagesDir); err != nil {
		return a, fmt.Errorf("copying KWOK's stages: %w", err)
	}
	return a, nil
}

// copyFlat copies the files (relative to from) into dir, without their
// directories.
func copyFlat(from string, files []string, dir string) error {
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
