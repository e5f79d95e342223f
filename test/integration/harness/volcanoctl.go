package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/caldera-sched/caldera/internal/neighbour"
)

// Volcano's own job controller (vc-controller-manager) runs beside Caldera
// in the tests that say what a Volcano user gets: it is built from
// Volcano's Go module at the release test/neighbours/volcano pins (a module
// of its own, since Volcano pins an older Kubernetes with replace
// directives), and started as a process against the test apiserver, with
// that release's CRDs installed. Nothing here plays its part.

// volcanoModule is the tool module that pins Volcano's release, relative to
// the repository root; volcanoMain is the controller's main package.
const (
	volcanoModule = "test/neighbours/volcano"
	volcanoMain   = "volcano.sh/volcano/cmd/controller-manager"
)

// VolcanoControllers are the controllers of vc-controller-manager the tests
// run: jobs (vcjobs to PodGroups and pods), PodGroups for plain pods of the
// volcano scheduler name, Queues (their state and counts), and the garbage
// collector of finished jobs (ttlSecondsAfterFinished). The rest need CRDs
// no test installs (cron jobs, job flows, hypernodes, shards).
var VolcanoControllers = []string{"job-controller", "pg-controller", "queue-controller", "gc-controller"}

// volcanoCRDFiles are the release's CRDs the controllers above read and
// write, under config/crd/volcano/bases of Volcano's module.
var volcanoCRDFiles = []string{
	"batch.volcano.sh_jobs.yaml",
	"bus.volcano.sh_commands.yaml",
	"scheduling.volcano.sh_podgroups.yaml",
	"scheduling.volcano.sh_queues.yaml",
}

// The CRDs are gathered once per test process, like the binary, because
// Envs started in parallel install them from the one directory (a second
// copy could leave a file half written under a reader).
var (
	volcanoOnce   sync.Once
	volcanoBin    string
	volcanoCRDDir string
	volcanoErr    error
)

// buildVolcano builds vc-controller-manager into <root>/_output/neighbours
// and gathers the release's CRDs into a directory of their own beside it,
// once per test process. The build comes first: it downloads Volcano's
// module, where the CRDs are read from.
func buildVolcano(root string) (bin, crdDir string, err error) {
	volcanoOnce.Do(func() {
		mod := filepath.Join(root, volcanoModule)
		out := filepath.Join(root, neighbour.OutputDir)
		volcanoBin = filepath.Join(out, "vc-controller-manager")
		if volcanoErr = neighbour.Build(neighbour.Binary{Dir: mod, Main: volcanoMain, Out: volcanoBin}); volcanoErr != nil {
			return
		}
		volcanoCRDDir, volcanoErr = gatherVolcanoCRDs(mod, filepath.Join(out, "volcano-crds"))
	})
	return volcanoBin, volcanoCRDDir, volcanoErr
}

// gatherVolcanoCRDs copies volcanoCRDFiles from Volcano's module, as the
// tool module at mod resolves it, into dir and returns dir.
func gatherVolcanoCRDs(mod, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	list := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "volcano.sh/volcano")
	list.Dir = mod
	b, err := list.Output()
	if err != nil {
		return "", fmt.Errorf("locating volcano.sh/volcano's module: %v", err)
	}
	src := filepath.Join(strings.TrimSpace(string(b)), "config", "crd", "volcano", "bases")
	for _, f := range volcanoCRDFiles {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(dir, f), data, 0o644)
		}
		if err != nil {
			return "", fmt.Errorf("copying Volcano's CRD %s: %v", f, err)
		}
	}
	return dir, nil
}

// VolcanoController is a running vc-controller-manager.
type VolcanoController struct {
	proc    *neighbour.Process
	LogFile string
}

// StartVolcanoController starts Volcano's vc-controller-manager against e
// (which must have been started WithVolcanoRelease) with
// VolcanoControllers, leader election off, serving pods of the scheduler
// names given (Volcano's "volcano" when none). It is stopped when the test
// ends; its log is printed when the test failed.
func (e *Env) StartVolcanoController(t *testing.T, schedulerNames ...string) *VolcanoController {
	t.Helper()
	if !e.volcanoRelease {
		t.Fatal("StartVolcanoController: start the Env WithVolcanoRelease, so that the release's CRDs are installed")
	}
	bin, _, err := buildVolcano(e.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if len(schedulerNames) == 0 {
		schedulerNames = []string{"volcano"}
	}
	c := &VolcanoController{LogFile: filepath.Join(t.TempDir(), "vc-controller-manager.log")}
	args := []string{
		"--kubeconfig=" + e.Kubeconfig,
		"--leader-elect=false",
		"--controllers=" + strings.Join(VolcanoControllers, ","),
		"--kube-api-qps=200", "--kube-api-burst=400",
		"--v=3",
	}
	for _, n := range schedulerNames {
		args = append(args, "--scheduler-name="+n)
	}
	if c.proc, err = neighbour.Start(exec.Command(bin, args...), c.LogFile); err != nil {
		t.Fatalf("starting vc-controller-manager: %v", err)
	}
	t.Cleanup(func() {
		c.Stop()
		if t.Failed() {
			if b, err := os.ReadFile(c.LogFile); err == nil {
				t.Logf("vc-controller-manager log (last 8 KiB):\n%s", tail(b, 8<<10))
			}
		}
	})
	return c
}

// Stop ends the controller: SIGTERM, then SIGKILL after 10 s.
func (c *VolcanoController) Stop() { c.proc.Stop() }

// tail returns the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
