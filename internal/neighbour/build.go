package neighbour

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// OutputDir is where the integration harness builds the neighbours it runs
// (kube-scheduler, vc-controller-manager, Karpenter's KWOK provider, KWOK),
// relative to the repository root: out of bin/, which `make` fills for
// people, and ignored by git.
const OutputDir = "_output/neighbours"

// Binary is a main package to build: most often one of a tool module under
// test/neighbours, which pins another project's release in a go.mod of its
// own so that its dependencies never reach Caldera's.
type Binary struct {
	// Dir is the directory `go build` runs in, which picks the module: the
	// tool module's, or the repository root for a main package Caldera's
	// own module already requires.
	Dir string
	// Main is the main package's import path.
	Main string
	// Out is the path of the binary; its directory is created if need be.
	Out string
	// Env is added to the environment the build inherits (GOTOOLCHAIN for
	// a module that declares a newer Go, GOFLAGS, GOWORK), later entries
	// winning as in exec.Cmd.Env.
	Env []string
}

// built is one Out's build: the Binary it was asked for and how it ended,
// set before once.Do returns.
type built struct {
	once sync.Once
	bin  Binary
	err  error
}

// builds maps a cleaned Out path to its *built. Keyed by the output rather
// than by the package, because two builds writing one file at once would
// leave it torn, while one package built to two places is harmless.
var builds sync.Map

// Build builds b.Main into b.Out once per process: the first call for an
// Out runs `go build` (Go's build cache makes every build after a
// process's first a link at most) and later calls, from any goroutine,
// wait for it and return its result, error included, without building
// again. So parallel tests can each ask for the binary they start. A later
// call for the same Out but another Dir, Main or Env is an error rather
// than a silent reuse of the wrong binary. A failed build's error names the
// command, its directory and added environment, and holds its output.
func Build(b Binary) error {
	key := filepath.Clean(b.Out)
	v, _ := builds.LoadOrStore(key, &built{bin: b})
	e := v.(*built)
	e.once.Do(func() { e.err = run(b) })
	if !sameBuild(e.bin, b) {
		return fmt.Errorf("neighbour: %s is built from %s in %s %v, not from %s in %s %v",
			key, e.bin.Main, e.bin.Dir, e.bin.Env, b.Main, b.Dir, b.Env)
	}
	return e.err
}

// sameBuild says whether a and b build the same binary to the same place.
func sameBuild(a, b Binary) bool {
	return filepath.Clean(a.Dir) == filepath.Clean(b.Dir) && a.Main == b.Main &&
		filepath.Clean(a.Out) == filepath.Clean(b.Out) && slices.Equal(a.Env, b.Env)
}

// run runs the build itself.
func run(b Binary) error {
	if err := os.MkdirAll(filepath.Dir(b.Out), 0o755); err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", b.Out, b.Main)
	cmd.Dir = b.Dir
	if len(b.Env) > 0 {
		// A nil Env inherits the environment; a non-nil one replaces it.
		cmd.Env = append(os.Environ(), b.Env...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		env := ""
		if len(b.Env) > 0 {
			env = " (" + strings.Join(b.Env, " ") + ")"
		}
		return fmt.Errorf("`%s` in %s%s: %v\n%s", strings.Join(cmd.Args, " "), b.Dir, env, err, out)
	}
	return nil
}
