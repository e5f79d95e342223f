package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"

	"github.com/caldera-sched/caldera/internal/karpenter"
	"github.com/caldera-sched/caldera/internal/localcluster"
)

// autoscalerOptions are the flags of --autoscaler: Karpenter's KWOK cloud
// provider (a real cluster autoscaler) beside the sandbox.
type autoscalerOptions struct {
	enabled bool
	// dir holds karpenter-kwok and karpenter-crds/ as `make karpenter`
	// writes them (default <repo>/bin).
	dir string
	// cpuLimit is the NodePool's spec.limits.cpu.
	cpuLimit string
	// consolidateAfter is how long one of its nodes must be unchanged
	// before Karpenter may consolidate it.
	consolidateAfter time.Duration
	// logFile receives Karpenter's log (default: the temporary directory).
	logFile string
}

// autoscalerNodePool names the NodePool and KWOKNodeClass the sandbox
// creates.
const autoscalerNodePool = "default"

// complete checks the flags and finds the binaries; root finds the
// default directory. Missing binaries are an error that names `make
// karpenter`, before anything starts.
func (a *autoscalerOptions) complete(root func() (string, error)) error {
	if !a.enabled {
		return nil
	}
	if _, err := resource.ParseQuantity(a.cpuLimit); err != nil {
		return fmt.Errorf("invalid --autoscaler-cpu-limit %q: %w", a.cpuLimit, err)
	}
	if a.consolidateAfter < time.Second {
		return fmt.Errorf("--consolidate-after %v: Karpenter takes whole seconds, at least 1s", a.consolidateAfter)
	}
	if a.dir == "" {
		r, err := root()
		if err != nil {
			return fmt.Errorf("%w: pass --karpenter-dir, or run from inside the Caldera repository", err)
		}
		a.dir = filepath.Join(r, "bin")
	}
	return karpenter.ArtifactsIn(a.dir).CheckKarpenter()
}

// installAutoscalerCRDs installs Karpenter's CRDs (NodePool, NodeClaim,
// KWOKNodeClass, ...), with the sandbox's own.
func installAutoscalerCRDs(ctx context.Context, cfg *rest.Config, a autoscalerOptions) error {
	if !a.enabled {
		return nil
	}
	if _, err := localcluster.InstallCRDs(ctx, cfg, karpenter.ArtifactsIn(a.dir).CRDDir); err != nil {
		return fmt.Errorf("installing Karpenter's CRDs: %w", err)
	}
	return nil
}

// startAutoscaler starts Karpenter's KWOK provider with the admin
// kubeconfig and creates its NodePool. The sandbox's own KWOK controllers
// manage every node, Karpenter's too (they make them Ready and their pods
// Running), so no second KWOK runs: two would fight over the same nodes.
// The caller stops the returned process before the apiserver.
func startAutoscaler(ctx context.Context, c *clients, kubeconfig, tmp string, a autoscalerOptions, quiet bool) (*karpenter.Process, error) {
	began := time.Now()
	logFile := a.logFile
	if logFile == "" {
		logFile = filepath.Join(tmp, "karpenter.log")
	}
	types := karpenter.DefaultInstanceTypes()
	p, err := karpenter.StartKarpenter(ctx, karpenter.Options{
		Binary:        karpenter.ArtifactsIn(a.dir).Karpenter,
		Kubeconfig:    kubeconfig,
		Dir:           tmp,
		LogFile:       logFile,
		InstanceTypes: types,
	})
	if err != nil {
		return nil, err
	}
	pool, err := karpenter.CreateNodePool(ctx, c.dynamic, karpenter.NodePoolOptions{
		Name:             autoscalerNodePool,
		CPULimit:         a.cpuLimit,
		ConsolidateAfter: a.consolidateAfter,
	}, 30*time.Second)
	if err != nil {
		p.Stop()
		return nil, err
	}
	if !quiet {
		fmt.Fprintf(os.Stderr, "caldera-sandbox: Karpenter (KWOK provider) up in %v: NodePool %s, cpu limit %s, %s consolidation after %v; log %s\n",
			time.Since(began).Round(100*time.Millisecond), pool.Name, pool.CPULimit, pool.ConsolidationPolicy, pool.ConsolidateAfter, logFile)
		fmt.Fprintf(os.Stderr, "caldera-sandbox: instance types: %s\n", describeInstanceTypes(types))
	}
	return p, nil
}

// describeInstanceTypes is one line naming each type with its size and
// price.
func describeInstanceTypes(types []karpenter.InstanceType) string {
	var parts []string
	for _, it := range types {
		parts = append(parts, fmt.Sprintf("%s (%s cpu, %s, $%.2f/h)", it.Name, it.CPU, it.Memory, it.Price))
	}
	return strings.Join(parts, ", ")
}

// autoscalerExited is the error for Karpenter's exit while the sandbox
// runs, with the end of its log: the log may be in the temporary
// directory, which goes with the sandbox.
func autoscalerExited(p *karpenter.Process) error {
	data, _ := os.ReadFile(p.LogFile)
	if len(data) > 4<<10 {
		data = data[len(data)-4<<10:]
	}
	return fmt.Errorf("karpenter exited: %v; the end of its log:\n%s", p.Err(), data)
}
