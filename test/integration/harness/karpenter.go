package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

// Karpenter's KWOK cloud provider runs beside Caldera in the tests that say
// how Caldera and a cluster autoscaler work together: a real Karpenter
// (provisioning, consolidation, its own scheduling simulation) whose
// "instances" are Node objects it creates itself. Those nodes have no
// kubelet; the KWOK controller (sigs.k8s.io/kwok), as in Karpenter's own
// e2e setup, plays it for the nodes annotated kwok.x-k8s.io/node=fake:
// it makes them Ready (then Karpenter initializes them and lifts its
// karpenter.sh/unregistered taint), keeps their Lease, and moves their
// pods to Running. Both are built from test/neighbours/karpenter, a module
// of its own, and run as processes against the test apiserver.

// karpenterModule is the tool module that pins Karpenter's and KWOK's
// releases, relative to the repository root; karpenterMain and kwokMain
// are their main packages.
const (
	karpenterModule = "test/neighbours/karpenter"
	karpenterMain   = "sigs.k8s.io/karpenter/kwok"
	kwokMain        = "sigs.k8s.io/kwok/cmd/kwok"
)

// KarpenterToolchain is the Go toolchain the tool module builds with:
// Karpenter v1.15.0 declares go 1.26.9, newer than the Go the repository
// builds with, so its build alone sets GOTOOLCHAIN (the module proxy
// serves the toolchain).
const KarpenterToolchain = "go1.27.3"

// KWOKNodeAnnotation marks the nodes Karpenter's KWOK provider creates
// (annotation and label, value "fake"); the KWOK controller manages the
// nodes with that annotation. NodePoolLabel names a Karpenter node's
// NodePool.
const (
	KWOKNodeAnnotation = "kwok.x-k8s.io/node"
	NodePoolLabel      = "karpenter.sh/nodepool"
)

// The Karpenter resources the helpers below read and write.
var (
	NodePools       = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodepools"}
	NodeClaims      = schema.GroupVersionResource{Group: "karpenter.sh", Version: "v1", Resource: "nodeclaims"}
	KWOKNodeClasses = schema.GroupVersionResource{Group: "karpenter.kwok.sh", Version: "v1alpha1", Resource: "kwoknodeclasses"}
)

// karpenterCRDFiles are the CRDs Karpenter's controllers watch (the
// KWOK chart installs the same), relative to Karpenter's module.
var karpenterCRDFiles = []string{
	"pkg/apis/crds/karpenter.sh_nodepools.yaml",
	"pkg/apis/crds/karpenter.sh_nodeclaims.yaml",
	"pkg/apis/crds/karpenter.sh_nodeoverlays.yaml",
	"pkg/apis/crds/autoscaling.x-k8s.io_capacitybuffers.yaml",
	"kwok/apis/crds/karpenter.kwok.sh_kwoknodeclasses.yaml",
}

// kwokStageFiles are KWOK's "fast" stages (kustomize/stage/fast, which
// Karpenter's hack/install-kwok.sh applies): nodes Ready at once with a
// Lease heartbeat, pods Running once bound, Job pods completed, deleted
// pods removed. Relative to kustomize/stage of KWOK's module.
var kwokStageFiles = []string{
	"node/fast/node-initialize.yaml",
	"node/heartbeat-with-lease/node-heartbeat-with-lease.yaml",
	"pod/fast/pod-ready.yaml",
	"pod/fast/pod-complete.yaml",
	"pod/fast/pod-delete.yaml",
}

// karpenterBuild is what buildKarpenter made.
type karpenterBuild struct {
	karpenter, kwok string // binaries
	crdDir          string // karpenterCRDFiles, flat
	stages          []byte // kwokStageFiles, one multi-document YAML
}

var (
	karpenterBuildOnce sync.Once
	karpenterBuilt     karpenterBuild
	karpenterBuildErr  error
)

// buildKarpenter builds Karpenter's KWOK provider and the KWOK controller
// into <root>/_output/neighbours with KarpenterToolchain (the first build
// takes minutes; later ones find the binaries up to date) and gathers the
// CRDs and stages, once per test process.
func buildKarpenter(root string) (karpenterBuild, error) {
	karpenterBuildOnce.Do(func() {
		karpenterBuilt, karpenterBuildErr = doBuildKarpenter(root)
	})
	return karpenterBuilt, karpenterBuildErr
}

func doBuildKarpenter(root string) (karpenterBuild, error) {
	mod := filepath.Join(root, karpenterModule)
	out := filepath.Join(root, "_output", "neighbours")
	b := karpenterBuild{
		karpenter: filepath.Join(out, "karpenter-kwok"),
		kwok:      filepath.Join(out, "kwok"),
		crdDir:    filepath.Join(out, "karpenter-crds"),
	}
	if err := os.MkdirAll(b.crdDir, 0o755); err != nil {
		return b, err
	}
	goCmd := func(args ...string) *exec.Cmd {
		c := exec.Command("go", args...)
		c.Dir = mod
		c.Env = append(os.Environ(), "GOTOOLCHAIN="+KarpenterToolchain)
		return c
	}
	for bin, pkg := range map[string]string{b.karpenter: karpenterMain, b.kwok: kwokMain} {
		if out, err := goCmd("build", "-o", bin, pkg).CombinedOutput(); err != nil {
			return b, fmt.Errorf("building %s in %s (GOTOOLCHAIN=%s): %v\n%s", pkg, mod, KarpenterToolchain, err, out)
		}
	}
	moduleDir := func(path string) (string, error) {
		out, err := goCmd("list", "-m", "-f", "{{.Dir}}", path).Output()
		if err != nil {
			return "", fmt.Errorf("locating %s's module: %v", path, err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	karp, err := moduleDir("sigs.k8s.io/karpenter")
	if err != nil {
		return b, err
	}
	for _, f := range karpenterCRDFiles {
		data, err := os.ReadFile(filepath.Join(karp, f))
		if err == nil {
			err = os.WriteFile(filepath.Join(b.crdDir, filepath.Base(f)), data, 0o644)
		}
		if err != nil {
			return b, fmt.Errorf("copying Karpenter's CRD %s: %v", f, err)
		}
	}
	kwok, err := moduleDir("sigs.k8s.io/kwok")
	if err != nil {
		return b, err
	}
	for _, f := range kwokStageFiles {
		data, err := os.ReadFile(filepath.Join(kwok, "kustomize", "stage", f))
		if err != nil {
			return b, fmt.Errorf("reading KWOK's stage %s: %v", f, err)
		}
		b.stages = append(b.stages, "---\n"...)
		b.stages = append(b.stages, data...)
	}
	return b, nil
}

// KWOKInstanceType is an instance type Karpenter's KWOK provider offers:
// one on-demand offering in zone KWOKZone, linux/amd64. The node Karpenter
// makes of it has CPU and Memory as capacity and, as allocatable, those
// less the provider's fixed kube-reserved (100m CPU, 10Mi memory).
type KWOKInstanceType struct {
	Name        string
	CPU, Memory string
	Price       float64 // per hour
}

// KWOKZone is the one zone of the KWOK instance types.
const KWOKZone = "test-zone-a"

// DefaultKWOKInstanceTypes are 2, 4, 8 and 16 CPU machines with 4Gi per
// CPU, priced by CPU.
func DefaultKWOKInstanceTypes() []KWOKInstanceType {
	var out []KWOKInstanceType
	for _, cpu := range []int{2, 4, 8, 16} {
		out = append(out, KWOKInstanceType{
			Name:   fmt.Sprintf("c-%dx-amd64-linux", cpu),
			CPU:    fmt.Sprint(cpu),
			Memory: fmt.Sprintf("%dGi", 4*cpu),
			Price:  0.05 * float64(cpu),
		})
	}
	return out
}

// instanceTypesJSON is the file --instance-types-file-path reads, in the
// format of the provider's embedded instance_types.json.
func instanceTypesJSON(its []KWOKInstanceType) ([]byte, error) {
	type req struct {
		Key      string   `json:"key"`
		Operator string   `json:"operator"`
		Values   []string `json:"values"`
	}
	type offering struct {
		Price        float64
		Available    bool
		Requirements []req
	}
	type instanceType struct {
		Name             string            `json:"name"`
		Offerings        []offering        `json:"offerings"`
		Architecture     string            `json:"architecture"`
		OperatingSystems []string          `json:"operatingSystems"`
		Resources        map[string]string `json:"resources"`
	}
	var out []instanceType
	for _, it := range its {
		out = append(out, instanceType{
			Name: it.Name,
			Offerings: []offering{{Price: it.Price, Available: true, Requirements: []req{
				{Key: "karpenter.sh/capacity-type", Operator: "In", Values: []string{"on-demand"}},
				{Key: v1.LabelTopologyZone, Operator: "In", Values: []string{KWOKZone}},
			}}},
			Architecture:     "amd64",
			OperatingSystems: []string{"linux"},
			Resources:        map[string]string{"cpu": it.CPU, "memory": it.Memory, "pods": "110"},
		})
	}
	return json.MarshalIndent(out, "", "  ")
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
	procs []*neighbourProcess
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
	if err := e.installKarpenterCRDs(t, b.crdDir); err != nil {
		t.Fatal(err)
	}
	crds := time.Since(began)
	if len(opts.InstanceTypes) == 0 {
		opts.InstanceTypes = DefaultKWOKInstanceTypes()
	}
	if opts.BatchIdleDuration == 0 {
		opts.BatchIdleDuration = time.Second
	}
	if opts.BatchMaxDuration == 0 {
		opts.BatchMaxDuration = 3 * time.Second
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
	t.Cleanup(func() {
		for _, p := range slices.Backward(k.procs) {
			p.stop()
		}
		if t.Failed() {
			for _, p := range k.procs {
				if data, err := os.ReadFile(p.logFile); err == nil {
					t.Logf("%s log (last 16 KiB):\n%s", p.name, tail(data, 16<<10))
				}
			}
		}
	})
	ports, err := localcluster.FreePorts(3)
	if err != nil {
		t.Fatal(err)
	}

	// KWOK first, so that Karpenter's first node is Ready at once.
	kwokConfig := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(kwokConfig, b.stages, 0o644); err != nil {
		t.Fatal(err)
	}
	kwokAddr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	k.start(t, "kwok", b.kwok, k.KWOKLogFile, nil,
		"--config="+kwokConfig,
		"--kubeconfig="+e.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KWOKNodeAnnotation+"=fake",
		"--node-ip=127.0.0.1",
		"--node-lease-duration-seconds=40",
		"--server-address="+kwokAddr,
		"--v=info",
	)
	k.waitHTTP(t, "kwok", "http://"+kwokAddr+"/healthz")
	kwokReady := time.Since(began)

	itFile := filepath.Join(dir, "instance-types.json")
	data, err := instanceTypesJSON(opts.InstanceTypes)
	if err == nil {
		err = os.WriteFile(itFile, data, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	k.start(t, "karpenter", b.karpenter, k.LogFile, []string{"KUBECONFIG=" + e.Kubeconfig},
		"--disable-leader-election",
		fmt.Sprintf("--metrics-port=%d", ports[1]),
		fmt.Sprintf("--health-probe-port=%d", ports[2]),
		"--instance-types-file-path="+itFile,
		"--batch-idle-duration="+opts.BatchIdleDuration.String(),
		"--batch-max-duration="+opts.BatchMaxDuration.String(),
		"--log-level="+opts.LogLevel,
	)
	k.waitHTTP(t, "karpenter", fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[2]))
	round := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	t.Logf("harness: Karpenter ready in %v (binaries %v, CRDs %v, KWOK ready %v; logs %s, %s)",
		round(time.Since(began)), round(built), round(crds), round(kwokReady), k.LogFile, k.KWOKLogFile)
	return k
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

// start starts one process in a process group of its own.
func (k *Karpenter) start(t *testing.T, name, bin, logPath string, env []string, args ...string) {
	t.Helper()
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	p := &neighbourProcess{name: name, logFile: logPath, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	k.procs = append(k.procs, p)
}

// waitHTTP waits up to a minute for url to answer 200, failing at once if
// the process exits.
func (k *Karpenter) waitHTTP(t *testing.T, name, url string) {
	t.Helper()
	p := k.procs[len(k.procs)-1]
	client := &http.Client{Timeout: 2 * time.Second}
	deadline := time.Now().Add(time.Minute)
	for {
		select {
		case <-p.done:
			t.Fatalf("%s exited before it was ready: %v (log %s)", name, p.err, p.logFile)
		default:
		}
		resp, err := client.Get(url)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready at %s within a minute (last: %v)", name, url, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// neighbourProcess is a child process of another project's binary.
type neighbourProcess struct {
	name, logFile string
	cmd           *exec.Cmd
	done          chan struct{}
	err           error // set before done is closed
}

// stop ends the process group: SIGTERM, then SIGKILL after 10 s.
func (p *neighbourProcess) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

// NodePoolOptions configures CreateNodePool.
type NodePoolOptions struct {
	// Name of the NodePool and of its KWOKNodeClass (default "default").
	Name string
	// CPULimit is spec.limits.cpu (default "64").
	CPULimit string
	// ConsolidationPolicy: WhenEmptyOrUnderutilized (default) or WhenEmpty.
	ConsolidationPolicy string
	// ConsolidateAfter: how long a node must have had no pod change before
	// Karpenter may consolidate it (default 5s). Karpenter then validates
	// its decision for 15 s and polls every 10 s, so an empty node goes
	// about 25-35 s after this.
	ConsolidateAfter time.Duration
	// InstanceTypes restricts the NodePool to these instance type names
	// (all offered ones when empty).
	InstanceTypes []string
	// RegistrationDelay is the KWOKNodeClass's nodeRegistrationDelay: how
	// long after a NodeClaim is launched its Node appears (default 0), as
	// a machine's boot time.
	RegistrationDelay time.Duration
}

// CreateNodePool creates a KWOKNodeClass and a NodePool using it, and
// waits until Karpenter reports the NodePool Ready. When the test ends it
// deletes the NodePool and waits until Karpenter has taken its nodes away
// (every running scheduler's cache included); a node still there after
// that wait is stripped of its finalizers and deleted.
func (k *Karpenter) CreateNodePool(t *testing.T, opts NodePoolOptions) {
	t.Helper()
	e := k.env
	if opts.Name == "" {
		opts.Name = "default"
	}
	if opts.CPULimit == "" {
		opts.CPULimit = "64"
	}
	if opts.ConsolidationPolicy == "" {
		opts.ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	}
	if opts.ConsolidateAfter == 0 {
		opts.ConsolidateAfter = 5 * time.Second
	}
	nodeClass := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.kwok.sh/v1alpha1",
		"kind":       "KWOKNodeClass",
		"metadata":   map[string]any{"name": opts.Name},
		"spec":       map[string]any{},
	}}
	if opts.RegistrationDelay > 0 {
		nodeClass.Object["spec"] = map[string]any{"nodeRegistrationDelay": durationString(opts.RegistrationDelay)}
	}
	requirements := []any{
		map[string]any{"key": v1.LabelArchStable, "operator": "In", "values": []any{"amd64"}},
		map[string]any{"key": v1.LabelOSStable, "operator": "In", "values": []any{"linux"}},
		map[string]any{"key": "karpenter.sh/capacity-type", "operator": "In", "values": []any{"on-demand"}},
	}
	if len(opts.InstanceTypes) > 0 {
		var names []any
		for _, n := range opts.InstanceTypes {
			names = append(names, n)
		}
		requirements = append(requirements, map[string]any{"key": v1.LabelInstanceTypeStable, "operator": "In", "values": names})
	}
	nodePool := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "karpenter.sh/v1",
		"kind":       "NodePool",
		"metadata":   map[string]any{"name": opts.Name},
		"spec": map[string]any{
			"template": map[string]any{"spec": map[string]any{
				"requirements": requirements,
				"nodeClassRef": map[string]any{"group": "karpenter.kwok.sh", "kind": "KWOKNodeClass", "name": opts.Name},
				"expireAfter":  "Never",
			}},
			"limits": map[string]any{"cpu": opts.CPULimit},
			"disruption": map[string]any{
				"consolidationPolicy": opts.ConsolidationPolicy,
				"consolidateAfter":    durationString(opts.ConsolidateAfter),
				"budgets":             []any{map[string]any{"nodes": "100%"}},
			},
		},
	}}
	if _, err := e.Dynamic.Resource(KWOKNodeClasses).Create(t.Context(), nodeClass, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating KWOKNodeClass %s: %v", opts.Name, err)
	}
	if _, err := e.Dynamic.Resource(NodePools).Create(t.Context(), nodePool, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating NodePool %s: %v", opts.Name, err)
	}
	t.Cleanup(func() { k.deleteNodePool(t, opts.Name) })
	WaitFor(t, 30*time.Second, func() (bool, error) {
		np, err := e.Dynamic.Resource(NodePools).Get(t.Context(), opts.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return conditionTrue(np, "Ready"), nil
	}, "NodePool "+opts.Name+" Ready")
}

// durationString is d as Karpenter's duration fields take it (whole
// seconds, e.g. "5s").
func durationString(d time.Duration) string {
	return fmt.Sprintf("%ds", int(d.Round(time.Second)/time.Second))
}

// conditionTrue says whether obj's status has condition typ True.
func conditionTrue(obj *unstructured.Unstructured, typ string) bool {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return m["status"] == "True"
		}
	}
	return false
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
func NodeReady(node *v1.Node) bool {
	for _, taint := range node.Spec.Taints {
		if strings.HasPrefix(taint.Key, "karpenter.sh/") {
			return false
		}
	}
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
