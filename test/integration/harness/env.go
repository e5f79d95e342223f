// Package harness runs Caldera's integration tests against a real, in-process
// control plane: an embedded etcd, a real kube-apiserver and the real
// kube-scheduler started from Caldera's KubeSchedulerConfiguration.
//
// A test package starts ONE environment in a top-level test and runs its
// scenarios as subtests of it:
//
//	func TestGang(t *testing.T) {
//		env := harness.Start(t)
//		env.StartScheduler(t)
//		t.Run("binds a complete gang", func(t *testing.T) {
//			ns := env.Namespace(t)
//			env.AddNodes(t, 2, "4", "8Gi")
//			...
//		})
//	}
//
// Nodes are cluster-scoped and every scenario shares the same scheduler, so
// scenarios must not run in parallel (do not call t.Parallel in them).
//
// StartScheduler runs the scheduler in the test process (app.Setup and
// app.Run, wired as caldera-scheduler's command wires them);
// StartSchedulerProcess runs caldera-scheduler's command itself as a child
// process, for tests that kill it (see RunSchedulerProcess).
//
// There is no kubelet, no controller-manager and no namespace controller:
// pods never leave Pending unless a test sets their phase (SetPodPhase), and
// the harness deletes pods with a zero grace period.
package harness

import (
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubetesting "k8s.io/kubernetes/test/utils/ktesting"
	pgclientset "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

// DefaultSchedulerName is the scheduler name of Caldera's profile; pods built
// with Pod use it unless PodBuilder.Scheduler says otherwise.
const DefaultSchedulerName = "caldera-scheduler"

// activeEnvs counts live environments in this process; see Start.
var activeEnvs atomic.Int32

// Env is a running control plane shared by the scenarios of one test package.
type Env struct {
	// Config reaches the test kube-apiserver with full privileges. It speaks
	// JSON, so clientsets of custom resources can be built from it too.
	Config *rest.Config
	// Client is a typed client for core Kubernetes APIs.
	Client kubernetes.Interface
	// PGClient is a typed client for scheduling.x-k8s.io (PodGroup).
	PGClient pgclientset.Interface
	// Dynamic is a dynamic client for any resource, CRDs included.
	Dynamic dynamic.Interface
	// APIExt is a client for CustomResourceDefinitions.
	APIExt apiextclientset.Interface
	// RepoRoot is the root of the repository (see the function RepoRoot).
	RepoRoot string
	// Kubeconfig is a kubeconfig file that points at the test kube-apiserver.
	Kubeconfig string
	// CRDs are the CustomResourceDefinitions installed from manifests/crds
	// (and manifests/crds/volcano with WithVolcanoCRDs).
	CRDs []*apiextensionsv1.CustomResourceDefinition

	priorityClasses sync.Map // name -> struct{}: PriorityClasses known to exist

	mu      sync.Mutex
	running map[*Scheduler]struct{} // schedulers started and not yet stopped

	// The control plane (internal/localcluster) and, for a restartable
	// apiserver, the proxy that gives it a stable address (apiserver.go).
	cluster     *localcluster.Cluster
	restartable bool
	front       *Proxy
	// volcano: Volcano's CRDs are installed (WithVolcanoCRDs or
	// WithVolcanoRelease); volcanoRelease: those of the release whose
	// controller StartVolcanoController runs.
	volcano, volcanoRelease bool
}

// volcanoPodGroups is Volcano's PodGroup resource; volcanoJobs its jobs
// (vcjobs).
var (
	volcanoPodGroups = schema.GroupVersionResource{Group: "scheduling.volcano.sh", Version: "v1beta1", Resource: "podgroups"}
	volcanoJobs      = schema.GroupVersionResource{Group: "batch.volcano.sh", Version: "v1alpha1", Resource: "jobs"}
)

// Start starts etcd and a kube-apiserver in-process, installs every CRD in
// <repo>/manifests/crds/*.yaml and waits until each one can serve creates.
// Everything is torn down in t.Cleanup. Call it once per test package, from a
// top-level test, and run scenarios as subtests: starting a control plane
// costs a few seconds, so only one Env may be live in a process at a time.
func Start(t *testing.T) *Env {
	t.Helper()
	return StartWith(t)
}

// EnvOption changes how StartWith starts the control plane.
type EnvOption func(*envSettings)

type envSettings struct {
	apiserverFlags []string
	qps            float32
	burst          int
	restartable    bool
	controllers    []string
	withKCM        bool
	volcano        bool
	volcanoRelease bool
}

// WithVolcanoCRDs installs Volcano's PodGroup and Queue CRDs
// (manifests/crds/volcano) too, as the component components/volcano does.
func WithVolcanoCRDs() EnvOption {
	return func(s *envSettings) { s.volcano = true }
}

// WithVolcanoRelease installs the CRDs of the Volcano release that
// StartVolcanoController runs (jobs, commands, PodGroups and Queues, as
// that release defines them: fields newer than Caldera's Volcano types
// included), building its controller first.
func WithVolcanoRelease() EnvOption {
	return func(s *envSettings) { s.volcano, s.volcanoRelease = true, true }
}

// WithControllers runs kube-controller-manager in-process with the named
// controllers (localcluster.BatchControllers when none are named), so that
// Jobs, StatefulSets and the rest make their pods as in a real cluster. A
// test that uses it deletes its workloads, not their pods: the
// controllers would make the pods again.
func WithControllers(names ...string) EnvOption {
	return func(s *envSettings) { s.withKCM, s.controllers = true, names }
}

// WithAPIServerFlags passes extra flags to the test kube-apiserver, after the
// control plane's own (internal/localcluster; a flag given here wins), e.g.
// WithAPIServerFlags("--authorization-mode=RBAC"). Env.Config keeps full
// privileges in every mode: it authenticates as a member of system:masters.
func WithAPIServerFlags(flags ...string) EnvOption {
	return func(s *envSettings) { s.apiserverFlags = append(s.apiserverFlags, flags...) }
}

// UpstreamGangGates are the feature gates under which the API server
// serves Kubernetes' own PodGroups (scheduling.k8s.io/v1beta1, beta and off
// by default in 1.37) and the Job controller makes them for Jobs
// (WorkloadWithJob, alpha).
const UpstreamGangGates = "GenericWorkload=true,WorkloadWithJob=true"

// WithUpstreamGangAPI starts the API server with UpstreamGangGates and
// scheduling.k8s.io/v1beta1 enabled. The test apiserver copies its
// --feature-gates into the process-wide gate (internal/localcluster), so
// the in-process kube-controller-manager (WithControllers) runs with them,
// and so would an in-process scheduler: a test that wants a scheduler
// with its own defaults starts it as a process (StartSchedulerProcess).
func WithUpstreamGangAPI() EnvOption {
	return WithAPIServerFlags("--feature-gates="+UpstreamGangGates, "--runtime-config=scheduling.k8s.io/v1beta1=true")
}

// defaultClientQPS and defaultClientBurst are the client rate of Env.Config
// unless WithClientQPS says otherwise.
const (
	defaultClientQPS   = 1000
	defaultClientBurst = 10000
)

// WithClientQPS sets the QPS and burst of Env.Config and the clients built
// from it (default 1000 and 10000). Benchmarks raise them, as upstream's
// scheduler_perf does (5000), so that creating objects is not throttled by
// the client.
func WithClientQPS(qps float32, burst int) EnvOption {
	return func(s *envSettings) { s.qps, s.burst = qps, burst }
}

// StartWith is Start with options; StartWith(t) is Start(t).
func StartWith(t *testing.T, opts ...EnvOption) *Env {
	t.Helper()
	settings := &envSettings{qps: defaultClientQPS, burst: defaultClientBurst}
	for _, o := range opts {
		o(settings)
	}
	if n := activeEnvs.Add(1); n != 1 {
		activeEnvs.Add(-1)
		t.Fatalf("harness.Start: another Env is already running in this process; start one Env per test package in a top-level test and run scenarios as its subtests")
	}
	t.Cleanup(func() { activeEnvs.Add(-1) })

	began := time.Now()
	root := RepoRoot(t)
	// The control plane logs through the test (shown when it fails or with
	// -v), as Kubernetes' own integration tests log; made first, so that it
	// outlives every cleanup that stops a component.
	ctx := kubetesting.Init(t)
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir:            t.TempDir(),
		APIServerFlags: settings.apiserverFlags,
		QPS:            settings.qps,
		Burst:          settings.burst,
	})
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	// Registered first so that it runs last, after the scenarios' cleanups
	// (namespaces, nodes) that still need the apiserver.
	t.Cleanup(func() {
		if err := cluster.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})

	env := &Env{
		RepoRoot:    root,
		running:     map[*Scheduler]struct{}{},
		cluster:     cluster,
		restartable: settings.restartable,
	}
	cfg := cluster.Config()
	if settings.restartable {
		cfg.Host = "https://" + env.startFront(t)
	}
	env.Config = cfg
	env.Client = kubernetes.NewForConfigOrDie(cfg)
	env.PGClient = pgclientset.NewForConfigOrDie(cfg)
	env.Dynamic = dynamic.NewForConfigOrDie(cfg)
	env.APIExt = apiextclientset.NewForConfigOrDie(cfg)

	env.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig")
	if err := localcluster.WriteKubeconfig(cfg, "test", env.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	if env.CRDs, err = localcluster.InstallCRDs(ctx, cfg, filepath.Join(root, "manifests", "crds")); err != nil {
		t.Fatalf("installing CRDs: %v", err)
	}
	if settings.volcano {
		dir := filepath.Join(root, "manifests", "crds", "volcano")
		if settings.volcanoRelease {
			if _, dir, err = buildVolcano(root); err != nil {
				t.Fatal(err)
			}
		}
		vc, err := localcluster.InstallCRDs(ctx, cfg, dir)
		if err != nil {
			t.Fatalf("installing Volcano's CRDs: %v", err)
		}
		env.CRDs = append(env.CRDs, vc...)
		env.volcano, env.volcanoRelease = true, settings.volcanoRelease
	}
	if settings.withKCM {
		if settings.restartable {
			t.Fatal("harness: WithControllers with a restartable apiserver is not supported")
		}
		kcm, err := cluster.StartControllers(ctx, settings.controllers...)
		if err != nil {
			t.Fatalf("starting kube-controller-manager: %v", err)
		}
		t.Cleanup(func() {
			if err := kcm.Stop(); err != nil {
				t.Errorf("stopping kube-controller-manager: %v", err)
			}
		})
	}
	t.Logf("harness: control plane ready in %v (%d CRDs)", time.Since(began).Round(time.Millisecond), len(env.CRDs))
	return env
}

// RepoRoot returns the root of the Caldera repository the test runs in (the
// nearest directory at or above the working directory holding
// manifests/scheduler/config.yaml).
func RepoRoot(t testing.TB) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}
