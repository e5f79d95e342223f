package harness

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedappconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"

	"github.com/caldera-sched/caldera/internal/localcluster"
	"github.com/caldera-sched/caldera/pkg/cache"
)

const (
	// leaseNamespace holds the leader-election Leases of test schedulers.
	leaseNamespace = metav1.NamespaceSystem
	// startTimeout bounds the wait for a scheduler process to become ready.
	startTimeout = 60 * time.Second
	// stopTimeout bounds the wait for app.Run to return after cancellation.
	stopTimeout = 30 * time.Second
	// cacheTimeout bounds waits for schedulers' caches to catch up.
	cacheTimeout = 30 * time.Second
	// verbosityEnv sets the log verbosity of test schedulers (default 2).
	verbosityEnv = "CALDERA_SCHED_V"
)

// startMu serializes scheduler start-up: app.Run registers a process-global
// configz entry, so only one scheduler may be between "configz released" and
// "ready" at a time.
var startMu sync.Mutex

// SchedulerOption changes how StartScheduler configures a scheduler.
type SchedulerOption func(*schedulerSettings)

type schedulerSettings struct {
	configFile  string
	pluginArgs  []localcluster.PluginArgs
	leaseName   string
	registry    []app.Option
	registrySet bool
	edits       []func(*configv1.KubeSchedulerConfiguration) error
	kubeconfig  string
	raw         bool
	gates       string
	// startTimeout, when set, replaces startTimeout for a scheduler
	// process's first /readyz.
	startTimeout time.Duration
}

// WithPluginArgs merges args into the pluginConfig args of pluginName in every
// profile (adding a pluginConfig entry where a profile has none). Nested maps
// are merged key by key; any other value replaces the existing one.
func WithPluginArgs(pluginName string, args map[string]any) SchedulerOption {
	return func(s *schedulerSettings) {
		s.pluginArgs = append(s.pluginArgs, localcluster.PluginArgs{Plugin: pluginName, Args: args})
	}
}

// WithLeaderElection turns leader election on, on a Lease named leaseName in
// kube-system, with the configuration's timing (manifests/: a 1 s retry
// period, so a standby takes over quickly once the leader releases the Lease,
// which Stop does) or a 500ms retry period when it sets none.
//
// app.Run calls os.Exit(0) when a leader-elected scheduler is stopped; under
// `go test` (which passes -test.paniconexit0) that call panics instead, and
// the harness recovers that panic (client-go still logs it, with a stack
// trace, as "Observed a panic"). Tests using this option therefore fail fast
// when the test binary runs without -test.paniconexit0. A leader that loses
// its Lease without being stopped exits the whole test process, as the real
// binary would: stop schedulers before anything that could break renewal.
func WithLeaderElection(leaseName string) SchedulerOption {
	return func(s *schedulerSettings) { s.leaseName = leaseName }
}

// WithConfigFile loads the KubeSchedulerConfiguration from path instead of the
// repository's manifests/scheduler/config.yaml. A relative path is relative to
// the test's working directory (its package directory).
func WithConfigFile(path string) SchedulerOption {
	return func(s *schedulerSettings) { s.configFile = path }
}

// WithRawConfigFile hands the scheduler the file at path exactly as it is:
// no harness modification (client connection, leader election, plugin args,
// edits), so it may be malformed. A scheduler started from it reaches no
// apiserver; it is meant for TryStartScheduler tests of configuration errors.
func WithRawConfigFile(path string) SchedulerOption {
	return func(s *schedulerSettings) {
		s.configFile = path
		s.raw = true
	}
}

// WithRegistry replaces Caldera's plugins (registry.New().Options()) as the out-of-tree plugin registry
// options passed to app.Setup. With no arguments no out-of-tree plugin is
// registered.
func WithRegistry(opts ...app.Option) SchedulerOption {
	return func(s *schedulerSettings) {
		s.registry = opts
		s.registrySet = true
	}
}

// WithKubeconfig makes the scheduler reach the apiserver with the kubeconfig
// at path (clientConnection.kubeconfig) instead of Env.Kubeconfig, e.g. with a
// ServiceAccount's token to run it under RBAC. The delegated authentication
// and authorization of its secure port keep using Env.Kubeconfig.
func WithKubeconfig(path string) SchedulerOption {
	return func(s *schedulerSettings) { s.kubeconfig = path }
}

// WithConfigEdit lets a test change the decoded configuration (JSON-style
// maps, slices, strings, float64s and bools) before it is written to the
// scheduler's config file. Edits run after every other modification, in
// order with WithoutPlugin and WithSchedulerQPS. The map is the typed
// configuration encoded as JSON (so it holds every field the type encodes,
// zero values included), and the edited map is decoded back strictly: a
// field kube-scheduler does not know fails the start, as kube-scheduler
// would fail it.
func WithConfigEdit(edit func(cfg map[string]any) error) SchedulerOption {
	return func(s *schedulerSettings) {
		s.edits = append(s.edits, func(cfg *configv1.KubeSchedulerConfiguration) error {
			return localcluster.EditAsMap(cfg, edit)
		})
	}
}

// WithSchedulerQPS sets the scheduler's client QPS and burst
// (clientConnection), replacing the configuration's and the harness's
// default of 500 and 1000; benchmarks raise them.
func WithSchedulerQPS(qps float32, burst int32) SchedulerOption {
	return func(s *schedulerSettings) {
		s.edits = append(s.edits, func(cfg *configv1.KubeSchedulerConfiguration) error {
			cfg.ClientConnection.QPS, cfg.ClientConnection.Burst = qps, burst
			return nil
		})
	}
}

// WithFeatureGates runs the scheduler with kube-scheduler's feature gates
// set as gates says ("Name=true,Other=false", the --feature-gates syntax).
// A scheduler process (StartSchedulerProcess) gets --feature-gates=gates.
// An in-process scheduler reads the test process's gates, which the test
// apiserver's --feature-gates set for the test's duration
// (WithAPIServerFlags): StartScheduler checks that they already are as
// gates says and refuses to start otherwise, so one profile can name its
// gates for both kinds of start.
func WithFeatureGates(gates string) SchedulerOption {
	return func(s *schedulerSettings) { s.gates = gates }
}

// WithStartTimeout lets a scheduler (in-process or a process) take up to d to become ready
// (default 60 s). A benchmark whose scheduler starts on thousands of nodes
// and pods needs longer on 2 shared cores than a test should ever wait.
func WithStartTimeout(d time.Duration) SchedulerOption {
	return func(s *schedulerSettings) { s.startTimeout = d }
}

// checkProcessGates returns an error unless every gate of gates (the
// --feature-gates syntax) has that value in this process's feature gate.
func checkProcessGates(gates string) error {
	want, err := parseFeatureGates(gates)
	if err != nil {
		return err
	}
	known := utilfeature.DefaultMutableFeatureGate.GetAll()
	for name, on := range want {
		if _, ok := known[name]; !ok {
			return fmt.Errorf("unknown feature gate %q", name)
		}
		if got := utilfeature.DefaultFeatureGate.Enabled(name); got != on {
			return fmt.Errorf("feature gate %s is %v in the test process, want %v: an in-process scheduler reads the process's gates, which WithAPIServerFlags(\"--feature-gates=...\") sets", name, got, on)
		}
	}
	return nil
}

// parseFeatureGates parses "Name=true,Other=false".
func parseFeatureGates(gates string) (map[featuregate.Feature]bool, error) {
	out := map[featuregate.Feature]bool{}
	for kv := range strings.SplitSeq(gates, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		on, err := strconv.ParseBool(value)
		if !ok || name == "" || err != nil {
			return nil, fmt.Errorf("feature gates %q: want Name=true|false[,...]", gates)
		}
		out[featuregate.Feature(name)] = on
	}
	return out, nil
}

// Scheduler is a kube-scheduler running in-process through app.Setup and
// app.Run.
type Scheduler struct {
	// ConfigFile is the effective KubeSchedulerConfiguration file, as written
	// by the harness.
	ConfigFile string
	// Config is the completed configuration that app.Setup returned.
	Config *schedappconfig.CompletedConfig
	// Sched is the scheduler instance that app.Run runs.
	Sched *scheduler.Scheduler
	// Port is the scheduler's secure (HTTPS) port on 127.0.0.1.
	Port int

	env      *Env
	t        *testing.T
	sched    *localcluster.Scheduler
	stopOnce sync.Once
}

// StartScheduler starts the real kube-scheduler in-process and waits until it
// is ready (its informers synced and its event handlers caught up), so pods
// created after it returns are seen by it.
//
// The configuration comes from <repo>/manifests/scheduler/config.yaml (or
// WithConfigFile), modified and written to a temporary file: leader election
// off (WithLeaderElection turns it on), clientConnection pointing at the test
// apiserver, and WithPluginArgs/WithConfigEdit applied. Plugins come from
// registry.New().Options() unless WithRegistry replaces them.
//
// The scheduler stops in t.Cleanup; Stop stops it earlier, so a test can
// restart it. Normally only one scheduler runs at a time (two are fine with
// leader election, where only the leader schedules).
func (e *Env) StartScheduler(t *testing.T, opts ...SchedulerOption) *Scheduler {
	t.Helper()
	s, err := e.TryStartScheduler(t, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TryStartScheduler is StartScheduler returning the startup error (a bad
// configuration file, invalid plugin args, a scheduler that never became
// ready) instead of failing the test, for tests that expect the scheduler to
// refuse to start. Misuse of the harness still fails the test.
func (e *Env) TryStartScheduler(t *testing.T, opts ...SchedulerOption) (*Scheduler, error) {
	t.Helper()
	settings := &schedulerSettings{
		configFile: filepath.Join(e.RepoRoot, "manifests", "scheduler", "config.yaml"),
	}
	for _, o := range opts {
		o(settings)
	}
	if settings.gates != "" {
		if err := checkProcessGates(settings.gates); err != nil {
			t.Fatalf("StartScheduler: %v", err)
		}
	}
	if settings.leaseName != "" {
		if f := flag.Lookup("test.paniconexit0"); f == nil || f.Value.String() != "true" {
			t.Fatalf("WithLeaderElection needs -test.paniconexit0 (go test sets it): app.Run calls os.Exit(0) when a leader-elected scheduler stops")
		}
	}
	configFile := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if settings.raw {
		if err := copyFile(settings.configFile, configFile); err != nil {
			t.Fatalf("copying scheduler config %s: %v", settings.configFile, err)
		}
	} else if err := e.writeSchedulerConfig(settings, configFile); err != nil {
		return nil, fmt.Errorf("preparing scheduler config from %s: %w", settings.configFile, err)
	}

	began := time.Now()
	startMu.Lock()
	defer startMu.Unlock()

	// Two schedulers that both schedule would race for the same pods; only
	// leader-elected peers may run side by side.
	for _, other := range e.runningSchedulers() {
		if settings.leaseName == "" || other.Identity() == "" {
			t.Fatalf("StartScheduler: another scheduler is still running; Stop it first (only leader-elected schedulers may run side by side)")
		}
	}

	// Not the test's context: the scheduler runs until Stop, which
	// t.Cleanup calls after t.Context() is cancelled.
	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(schedulerVerbosity())))
	ls, err := localcluster.StartScheduler(klog.NewContext(context.Background(), logger), localcluster.SchedulerOptions{
		ConfigFile:     configFile,
		Kubeconfig:     e.Kubeconfig,
		Registry:       settings.registry,
		CustomRegistry: settings.registrySet,
		ReadyTimeout:   settings.startTimeout,
	})
	if err != nil {
		return nil, err
	}
	s := &Scheduler{
		ConfigFile: configFile,
		Config:     ls.Config,
		Sched:      ls.Sched,
		Port:       ls.Port,
		env:        e,
		t:          t,
		sched:      ls,
	}
	t.Cleanup(s.Stop)
	e.mu.Lock()
	e.running[s] = struct{}{}
	e.mu.Unlock()
	t.Logf("harness: scheduler ready in %v (config %s, leader election %v)", time.Since(began).Round(time.Millisecond), settings.configFile, settings.leaseName != "")
	return s, nil
}

// Stop cancels the scheduler's context, waits for app.Run to return and
// releases the process-global configz entry so another scheduler can start.
// It is idempotent and also runs in t.Cleanup of the test that started it.
func (s *Scheduler) Stop() {
	s.stopOnce.Do(func() {
		s.env.mu.Lock()
		delete(s.env.running, s)
		s.env.mu.Unlock()
		if err := s.sched.Stop(); err != nil {
			s.t.Error(err)
		}
	})
}

// CalderaCache returns the scheduler's shared Caldera cache (pkg/cache), the
// one its SIGUSR1 dump would show, or nil when it has none: no Caldera plugin
// in its configuration, or WithRegistry replaced Caldera's plugins.
func (s *Scheduler) CalderaCache() *cache.Cache {
	if s.sched.Plugins == nil {
		return nil
	}
	return s.sched.Plugins.Cache()
}

// Done is closed when app.Run has returned.
func (s *Scheduler) Done() <-chan struct{} { return s.sched.Done() }

// Identity is the scheduler's leader-election identity, or "" when leader
// election is off.
func (s *Scheduler) Identity() string {
	if s.Config.LeaderElection == nil {
		return ""
	}
	return s.Config.LeaderElection.Lock.Identity()
}

// WaitLeading waits until this scheduler holds its leader-election Lease.
func (s *Scheduler) WaitLeading(t *testing.T, timeout time.Duration) {
	t.Helper()
	id := s.Identity()
	if id == "" {
		t.Fatalf("WaitLeading: scheduler runs without leader election")
	}
	le := s.Config.ComponentConfig.LeaderElection
	holder := ""
	waitFor(t, timeout, func() (bool, error) {
		lease, err := s.env.Client.CoordinationV1().Leases(le.ResourceNamespace).Get(t.Context(), le.ResourceName, metav1.GetOptions{})
		if err != nil {
			return false, ignoreNotFound(err)
		}
		holder = ""
		if lease.Spec.HolderIdentity != nil {
			holder = *lease.Spec.HolderIdentity
		}
		return holder == id, nil
	}, func() string {
		return fmt.Sprintf("scheduler %s to hold Lease %s/%s (holder: %q)", id, le.ResourceNamespace, le.ResourceName, holder)
	})
}

// Get fetches one of the scheduler's own HTTP endpoints (/readyz, /metrics,
// /configz, ...) and returns its status code and body.
func (s *Scheduler) Get(t *testing.T, path string) (int, []byte) {
	t.Helper()
	status := 0
	body, err := s.sched.Endpoints.CoreV1().RESTClient().Get().AbsPath(path).Do(t.Context()).StatusCode(&status).Raw()
	if err != nil && status == 0 {
		t.Fatalf("GET %s from scheduler: %v", path, err)
	}
	return status, body
}

// writeSchedulerConfig loads the source configuration, applies the harness's
// modifications (internal/localcluster's typed rewrite) and writes the
// result to path.
func (e *Env) writeSchedulerConfig(settings *schedulerSettings, path string) error {
	ch := localcluster.SchedulerConfigChanges{
		Kubeconfig:        e.Kubeconfig,
		QPS:               500,
		Burst:             1000,
		KeepConfiguredQPS: true,
		PluginArgs:        settings.pluginArgs,
		Edits:             settings.edits,
	}
	if settings.kubeconfig != "" {
		ch.Kubeconfig = settings.kubeconfig
	}
	if settings.leaseName != "" {
		// Quick retries unless the configuration sets its own timing (the
		// shipped one does, for its failover target).
		ch.LeaderElection = &localcluster.LeaderElection{
			ResourceName:       settings.leaseName,
			ResourceNamespace:  leaseNamespace,
			DefaultRetryPeriod: 500 * time.Millisecond,
		}
	}
	return localcluster.RewriteSchedulerConfig(settings.configFile, path, ch)
}

// copyFile copies src to dst, readable only by the test's user.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o600)
}

// schedulerVerbosity is the klog verbosity for test schedulers' logs.
func schedulerVerbosity() int {
	if v, err := strconv.Atoi(os.Getenv(verbosityEnv)); err == nil {
		return v
	}
	return 2
}

// runningSchedulers returns the schedulers started and not yet stopped.
func (e *Env) runningSchedulers() []*Scheduler {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]*Scheduler, 0, len(e.running))
	for s := range e.running {
		out = append(out, s)
	}
	return out
}

// waitSchedulerCaches waits until cond holds for the cache of every running
// scheduler. Objects reach a scheduler through separate watches per kind, so
// without this a pod created right after a node can be tried before the
// scheduler knows the node (and wait out a backoff), and a pod can be bound
// to a node deleted by the previous scenario.
func (e *Env) waitSchedulerCaches(t testing.TB, ctx context.Context, cond func(*internalcache.Dump) bool, msg string) {
	t.Helper()
	for _, s := range e.runningSchedulers() {
		waitForCtx(t, ctx, cacheTimeout, func() (bool, error) {
			select {
			case <-s.Done():
				return true, nil // stopped meanwhile: nothing to wait for
			default:
			}
			return cond(s.Sched.Cache.Dump()), nil
		}, func() string { return "the scheduler cache to see " + msg })
	}
}

// WithoutPlugin removes plugin from every extension point of every profile
// and drops its pluginConfig, e.g. to test gang semantics without queue
// admission in front of them.
func WithoutPlugin(plugin string) SchedulerOption {
	return func(s *schedulerSettings) {
		s.edits = append(s.edits, func(cfg *configv1.KubeSchedulerConfiguration) error {
			localcluster.RemovePlugin(cfg, plugin)
			return nil
		})
	}
}
