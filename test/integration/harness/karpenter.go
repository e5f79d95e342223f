package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/caldera-sched/caldera/internal/karpenter"
	"github.com/caldera-sched/caldera/internal/localcluster"
	"github.com/caldera-sched/caldera/internal/neighbour"
)

// Karpenter's KWOK cloud provider runs beside Caldera in the tests that say
// how Caldera and a cluster autoscaler work together: a real Karpenter
// (provisioning, consolidation, its own scheduling simulation) whose
// "instances" are Node objects it creates itself. Those nodes have no
// kubelet; the KWOK controller (sigs.k8s.io/kwok), as in Karpenter's own
// e2e setup, plays it for the nodes annotated kwok.x-k8s.io/node=fake:
// it makes them Ready (then Karpenter initializes them and lifts its
// karpenter.sh/unregistered taint), keeps their Lease, and moves their
// pods to Running. internal/karpenter builds both from
// test/neighbours/karpenter and runs them as processes against the test
// apiserver (bin/caldera-sandbox --autoscaler does too); this file adds
// t.Fatal, t.Cleanup and the waits on the test's schedulers.

// KarpenterToolchain is the Go toolchain the tool module builds with.
const KarpenterToolchain = karpenter.Toolchain

// KWOKNodeAnnotation marks the nodes Karpenter's KWOK provider creates;
// NodePoolLabel names a Karpenter node's NodePool.
const (
	KWOKNodeAnnotation = karpenter.KWOKNodeAnnotation
	NodePoolLabel      = karpenter.NodePoolLabel
)

// The Karpenter resources the helpers below read and write.
var (
	NodePools       = karpenter.NodePools
	NodeClaims      = karpenter.NodeClaims
	KWOKNodeClasses = karpenter.KWOKNodeClasses
)

// KWOKInstanceType is an instance type Karpenter's KWOK provider offers
// (karpenter.InstanceType).
type KWOKInstanceType = karpenter.InstanceType

// KWOKZone is the one zone of the KWOK instance types.
const KWOKZone = karpenter.Zone

// DefaultKWOKInstanceTypes are 2, 4, 8 and 16 CPU machines with 4Gi per
// CPU, priced by CPU.
func DefaultKWOKInstanceTypes() []KWOKInstanceType { return karpenter.DefaultInstanceTypes() }

var (
	karpenterBuildOnce sync.Once
	karpenterBuilt     karpenter.Artifacts
	karpenterBuildErr  error
)

// buildKarpenter builds Karpenter's KWOK provider and the KWOK controller
// into <root>/_output/neighbours (the first build takes minutes; later
// ones find the binaries up to date) with their CRDs and stages, once per
// test process. neighbour.Build already builds each binary once; the once
// here is for the CRDs and stages, which tests in parallel read from the
// one directory while a second copy could be rewriting them.
func buildKarpenter(root string) (karpenter.Artifacts, error) {
	karpenterBuildOnce.Do(func() {
		karpenterBuilt, karpenterBuildErr = karpenter.Build(root, filepath.Join(root, neighbour.OutputDir))
	})
	return karpenterBuilt, karpenterBuildErr
}

// KarpenterOptions configures StartKarpenter.
type KarpenterOptions struct {
	// InstanceTypes are the machines the provider offers
	// (DefaultKWOKInstanceTypes when empty).
	InstanceTypes []KWOKInstanceType
	// BatchIdleDuration and BatchMaxDuration bound how long Karpenter
	// gathers pending pods before it provisions for them (its defaults are
	// 1s and 10s; here 1s and 3s unless set).
	BatchIdleDuration, BatchMaxDuration time.Duration
	// LogLevel is Karpenter's: debug (the default here), info or error.
	LogLevel string
}

// Karpenter is a running Karpenter KWOK provider and KWOK controller.
type Karpenter struct {
	// LogFile and KWOKLogFile receive the two processes' output.
	LogFile, KWOKLogFile string
	// InstanceTypes are the machines offered.
	InstanceTypes []KWOKInstanceType

	env   *Env
	procs []*karpenter.Process
}

// StartKarpenter installs Karpenter's CRDs in e (once per Env), then starts
// the KWOK controller and Karpenter's KWOK provider against e's apiserver
// and waits until both are ready. Karpenter runs with leader election off,
// no webhooks (the provider has none) and its metrics and health ports on
// free ports. Both are stopped when the test ends, after the NodePools made
// with CreateNodePool have had their nodes removed; their logs are printed
// when the test failed. It creates no NodePool: Karpenter provisions
// nothing until CreateNodePool.
func (e *Env) StartKarpenter(t *testing.T, opts KarpenterOptions) *Karpenter {
	t.Helper()
	began := time.Now()
	b, err := buildKarpenter(e.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	built := time.Since(began)
	if err := e.installKarpenterCRDs(t, b.CRDDir); err != nil {
		t.Fatal(err)
	}
	crds := time.Since(began)
	if len(opts.InstanceTypes) == 0 {
		opts.InstanceTypes = DefaultKWOKInstanceTypes()
	}
	if opts.LogLevel == "" {
		opts.LogLevel = "debug"
	}
	dir := t.TempDir()
	k := &Karpenter{
		LogFile:       filepath.Join(dir, "karpenter.log"),
		KWOKLogFile:   filepath.Join(dir, "kwok.log"),
		InstanceTypes: opts.InstanceTypes,
		env:           e,
	}
	// Registered first, so it runs last: after the NodePools' cleanups,
	// which need both processes to take their nodes away.
	t.Cleanup(func() { k.stop(t) })

	// KWOK first, so that Karpenter's first node is Ready at once.
	stages, err := b.Stages()
	if err != nil {
		t.Fatal(err)
	}
	kwok, err := karpenter.StartKWOK(t.Context(), karpenter.KWOKOptions{
		Binary: b.KWOK, Kubeconfig: e.Kubeconfig, Stages: stages, Dir: dir, LogFile: k.KWOKLogFile,
	})
	if err != nil {
		t.Fatal(err)
	}
	k.procs = append(k.procs, kwok)
	kwokReady := time.Since(began)

	p, err := karpenter.StartKarpenter(t.Context(), karpenter.Options{
		Binary:            b.Karpenter,
		Kubeconfig:        e.Kubeconfig,
		Dir:               dir,
		LogFile:           k.LogFile,
		InstanceTypes:     opts.InstanceTypes,
		BatchIdleDuration: opts.BatchIdleDuration,
		BatchMaxDuration:  opts.BatchMaxDuration,
		LogLevel:          opts.LogLevel,
	})
	if err != nil {
		t.Fatal(err)
	}
	k.procs = append(k.procs, p)
	round := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("harness: Karpenter ready in %v (binaries %v, CRDs %v, KWOK ready %v; logs %s, %s)",
		round(time.Since(began)), round(built), round(crds), round(kwokReady), k.LogFile, k.KWOKLogFile)
	return k
}

// stop stops Karpenter, then KWOK, and prints their logs if t failed.
func (k *Karpenter) stop(t *testing.T) {
	for _, p := range slices.Backward(k.procs) {
		p.Stop()
	}
	if !t.Failed() {
		return
	}
	for _, f := range []string{k.KWOKLogFile, k.LogFile} {
		if data, err := os.ReadFile(f); err == nil {
			t.Logf("%s (last 16 KiB):\n%s", filepath.Base(f), tail(data, 16<<10))
		}
	}
}

var karpenterCRDsOnce sync.Map // *Env -> *sync.Once

// installKarpenterCRDs installs the CRDs in crdDir once per Env.
func (e *Env) installKarpenterCRDs(t *testing.T, crdDir string) error {
	once, _ := karpenterCRDsOnce.LoadOrStore(e, &sync.Once{})
	var err error
	once.(*sync.Once).Do(func() {
		var crds []*apiextensionsv1.CustomResourceDefinition
		crds, err = localcluster.InstallCRDs(t.Context(), e.Config, crdDir)
		if err != nil {
			err = fmt.Errorf("installing Karpenter's CRDs: %w", err)
			return
		}
		e.CRDs = append(e.CRDs, crds...)
	})
	return err
}

// NodePoolOptions configures CreateNodePool (karpenter.NodePoolOptions:
// name, CPU limit, consolidation, instance types, registration delay).
type NodePoolOptions = karpenter.NodePoolOptions

// CreateNodePool creates a KWOKNodeClass and a NodePool using it, and
// waits until Karpenter reports the NodePool Ready. When the test ends it
// deletes the NodePool and waits until Karpenter has taken its nodes away
// (every running scheduler's cache included); a node still there after
// that wait is stripped of its finalizers and deleted.
func (k *Karpenter) CreateNodePool(t *testing.T, opts NodePoolOptions) {
	t.Helper()
	opts, err := karpenter.CreateNodePool(t.Context(), k.env.Dynamic, opts, 30*time.Second)
	// Registered even on failure: what was created must go (deleting
	// tolerates NotFound).
	t.Cleanup(func() { k.deleteNodePool(t, opts.Name) })
	if err != nil {
		t.Fatal(err)
	}
}

// deleteNodePool deletes NodePool name (Karpenter then drains and removes
// its nodes) and its KWOKNodeClass, and waits for the nodes to go.
func (k *Karpenter) deleteNodePool(t *testing.T, name string) {
	e := k.env
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Dynamic.Resource(NodePools).Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting NodePool %s: %v", name, err)
	}
	selector := NodePoolLabel + "=" + name
	gone := func() bool {
		nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
		return err == nil && len(nodes.Items) == 0
	}
	for !gone() && ctx.Err() == nil {
		time.Sleep(250 * time.Millisecond)
	}
	if !gone() {
		// Karpenter did not finish: take the nodes and claims away.
		k.forceDelete(t, selector)
	}
	if err := e.Dynamic.Resource(KWOKNodeClasses).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting KWOKNodeClass %s: %v", name, err)
	}
	wctx, wcancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer wcancel()
	e.waitSchedulerCaches(t, wctx, func(d *internalcache.Dump) bool {
		for _, ni := range d.Nodes {
			if n := ni.Node(); n != nil && n.Labels[NodePoolLabel] == name {
				return false
			}
		}
		return true
	}, "the removal of NodePool "+name+"'s nodes")
}

// forceDelete removes the finalizers of the NodeClaims and nodes matching
// selector and deletes them.
func (k *Karpenter) forceDelete(t *testing.T, selector string) {
	e := k.env
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if claims, err := e.Dynamic.Resource(NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
		for _, c := range claims.Items {
			_, _ = e.Dynamic.Resource(NodeClaims).Patch(ctx, c.GetName(), types.MergePatchType, patch, metav1.PatchOptions{})
			_ = e.Dynamic.Resource(NodeClaims).Delete(ctx, c.GetName(), metav1.DeleteOptions{})
		}
	}
	if nodes, err := e.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector}); err == nil {
		for _, n := range nodes.Items {
			_, _ = e.Client.CoreV1().Nodes().Patch(ctx, n.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			_ = e.Client.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{})
		}
	}
}

// Nodes returns the nodes Karpenter made for NodePool pool ("" for any).
// Like NodeClaims it may be called from a t.Cleanup.
func (k *Karpenter) Nodes(t *testing.T, pool string) []v1.Node {
	t.Helper()
	selector := NodePoolLabel
	if pool != "" {
		selector += "=" + pool
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	nodes, err := k.env.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing Karpenter's nodes: %v", err)
	}
	return nodes.Items
}

// WaitNoNodes waits until Karpenter has no node left for NodePool pool
// ("" for any), e.g. after the pods that needed them are gone and
// consolidation has removed the nodes. It may be called from a t.Cleanup.
func (k *Karpenter) WaitNoNodes(t *testing.T, pool string, timeout time.Duration) {
	t.Helper()
	var last []v1.Node
	waitForCtx(t, context.Background(), timeout, func() (bool, error) {
		last = k.Nodes(t, pool)
		return len(last) == 0, nil
	}, func() string {
		var names []string
		for _, n := range last {
			names = append(names, n.Name)
		}
		return fmt.Sprintf("Karpenter to remove its nodes %v", names)
	})
}

// NodeClaims returns Karpenter's NodeClaims for NodePool pool ("" for any).
func (k *Karpenter) NodeClaims(t *testing.T, pool string) []unstructured.Unstructured {
	t.Helper()
	selector := NodePoolLabel
	if pool != "" {
		selector += "=" + pool
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	claims, err := k.env.Dynamic.Resource(NodeClaims).List(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatalf("listing NodeClaims: %v", err)
	}
	return claims.Items
}

// NodeReady says whether node is Ready and carries none of the taints
// Karpenter puts on a node it has not initialized or is disrupting.
func NodeReady(node *v1.Node) bool { return karpenter.NodeReady(node) }
