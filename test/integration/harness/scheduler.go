package harness

import (
	"context"
	"errors"
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
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/featuregate"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedappconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/pkg/scheduler"
	internalcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/localscheduler"
	"github.com/caldera-sched/caldera/pkg/plugins/registry"
)

const (
	// configzName is the global configz entry that app.Run registers and
	// that must be released before another scheduler can run in the process.
	configzName = "componentconfig"
	// leaseNamespace holds the leader-election Leases of test schedulers.
	leaseNamespace = metav1.NamespaceSystem
	// startTimeout bounds the wait for a new scheduler to become ready.
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

type pluginArgs struct {
	plugin string
	args   map[string]any
}

type schedulerSettings struct {
	configFile  string
	pluginArgs  []pluginArgs
	leaseName   string
	registry    []app.Option
	registrySet bool
	edits       []func(cfg map[string]any) error
	kubeconfig  string
	raw         bool
	gates       string
}

// WithPluginArgs merges args into the pluginConfig args of pluginName in every
// profile (adding a pluginConfig entry where a profile has none). Nested maps
// are merged key by key; any other value replaces the existing one.
func WithPluginArgs(pluginName string, args map[string]any) SchedulerOption {
	return func(s *schedulerSettings) {
		s.pluginArgs = append(s.pluginArgs, pluginArgs{plugin: pluginName, args: args})
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

// WithRegistry replaces registry.Options() as the out-of-tree plugin registry
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
// scheduler's config file. Edits run after every other modification.
func WithConfigEdit(edit func(cfg map[string]any) error) SchedulerOption {
	return func(s *schedulerSettings) { s.edits = append(s.edits, edit) }
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

	env       *Env
	t         *testing.T
	cancel    context.CancelFunc
	done      chan struct{}
	runErr    error // set before done is closed
	cancelled bool  // set before done is closed: Run returned after cancel
	endpoints kubernetes.Interface
	stopOnce  sync.Once
	plugins   *registry.Plugins // nil when started WithRegistry
}

// StartScheduler starts the real kube-scheduler in-process and waits until it
// is ready (its informers synced and its event handlers caught up), so pods
// created after it returns are seen by it.
//
// The configuration comes from <repo>/manifests/scheduler/config.yaml (or
// WithConfigFile), modified and written to a temporary file: leader election
// off (WithLeaderElection turns it on), clientConnection pointing at the test
// apiserver, and WithPluginArgs/WithConfigEdit applied. Plugins come from
// registry.Options() unless WithRegistry replaces them.
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
	registryOptions := settings.registry
	var plugins *registry.Plugins
	if !settings.registrySet {
		// As caldera-scheduler's command does (cmd/scheduler).
		plugins = registry.New()
		registryOptions = plugins.Options()
	}

	configFile := filepath.Join(t.TempDir(), "scheduler-config.yaml")
	if settings.raw {
		if err := copyFile(settings.configFile, configFile); err != nil {
			t.Fatalf("copying scheduler config %s: %v", settings.configFile, err)
		}
	} else if err := e.writeSchedulerConfig(settings, configFile); err != nil {
		return nil, fmt.Errorf("preparing scheduler config from %s: %w", settings.configFile, err)
	}

	logger := ktesting.NewLogger(t, ktesting.NewConfig(ktesting.Verbosity(schedulerVerbosity())))
	ctx, cancel := context.WithCancel(klog.NewContext(context.Background(), logger))
	s := &Scheduler{
		ConfigFile: configFile,
		env:        e,
		t:          t,
		cancel:     cancel,
		done:       make(chan struct{}),
	}

	began := time.Now()
	startMu.Lock()
	defer startMu.Unlock()

	// Two schedulers that both schedule would race for the same pods; only
	// leader-elected peers may run side by side.
	for _, other := range e.runningSchedulers() {
		if settings.leaseName == "" || other.Identity() == "" {
			cancel()
			t.Fatalf("StartScheduler: another scheduler is still running; Stop it first (only leader-elected schedulers may run side by side)")
		}
	}

	schedOpts, err := localscheduler.Options(configFile, e.Kubeconfig)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("scheduler options: %w", err)
	}
	s.Port = schedOpts.SecureServing.BindPort

	cc, sched, err := app.Setup(ctx, schedOpts, registryOptions...)
	if err != nil {
		cancel()
		if l := schedOpts.SecureServing.Listener; l != nil {
			_ = l.Close()
		}
		return nil, fmt.Errorf("app.Setup: %w", err)
	}
	s.Config, s.Sched = cc, sched
	if plugins != nil {
		plugins.FollowLeaderElection(cc)
		s.plugins = plugins
	}

	serverCert, _ := cc.SecureServing.Cert.CurrentCertKeyContent()
	endpointsConfig, err := cc.SecureServing.NewClientConfig(serverCert)
	if err != nil {
		cancel()
		_ = cc.SecureServing.Listener.Close()
		return nil, fmt.Errorf("scheduler endpoints client config: %w", err)
	}
	endpointsConfig.ServerName = "127.0.0.1" // the self-signed cert names IPv4 loopback only
	s.endpoints, err = kubernetes.NewForConfig(endpointsConfig)
	if err != nil {
		cancel()
		_ = cc.SecureServing.Listener.Close()
		return nil, fmt.Errorf("scheduler endpoints client: %w", err)
	}

	// A scheduler still running (a leader-election peer) holds the configz
	// entry; app.Run would fail to register its own. Release it: /configz then
	// shows the newest scheduler.
	configz.Delete(configzName)
	go s.run(ctx)
	t.Cleanup(s.Stop)

	if err := s.waitReady(ctx); err != nil {
		s.Stop()
		return nil, fmt.Errorf("scheduler did not become ready: %w", err)
	}
	e.mu.Lock()
	e.running[s] = struct{}{}
	e.mu.Unlock()
	t.Logf("harness: scheduler ready in %v (config %s, leader election %v)", time.Since(began).Round(time.Millisecond), settings.configFile, settings.leaseName != "")
	return s, nil
}

// run runs app.Run until ctx is cancelled.
func (s *Scheduler) run(ctx context.Context) {
	defer close(s.done)
	defer func() {
		s.cancelled = ctx.Err() != nil
		r := recover()
		if r == nil {
			return
		}
		// With leader election app.Run ends in os.Exit(0) once its context is
		// cancelled; go test turns that into this panic. Anything else is real.
		if msg, ok := r.(string); ok && s.cancelled && strings.Contains(msg, "unexpected call to os.Exit(0)") {
			s.runErr = nil
			return
		}
		panic(r)
	}()
	s.runErr = app.Run(ctx, s.Config, s.Sched)
}

// waitReady polls the scheduler's /readyz until it answers 200, failing early
// if app.Run returns.
func (s *Scheduler) waitReady(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, startTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.done:
			return false, fmt.Errorf("app.Run returned: %v", s.runErr)
		default:
		}
		status := 0
		body, _ := s.endpoints.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Raw()
		if status == 200 {
			return true, nil
		}
		last = fmt.Sprintf("status %d: %s", status, body)
		return false, nil
	})
	if err != nil && last != "" {
		return fmt.Errorf("%w (last /readyz: %s)", err, last)
	}
	return err
}

// Stop cancels the scheduler's context, waits for app.Run to return and
// releases the process-global configz entry so another scheduler can start.
// It is idempotent and also runs in t.Cleanup of the test that started it.
func (s *Scheduler) Stop() {
	s.stopOnce.Do(func() {
		s.env.mu.Lock()
		delete(s.env.running, s)
		s.env.mu.Unlock()
		s.cancel()
		timer := time.NewTimer(stopTimeout)
		defer timer.Stop()
		select {
		case <-s.done:
		case <-timer.C:
			s.t.Errorf("scheduler did not stop within %v", stopTimeout)
			return
		}
		configz.Delete(configzName)
		if !s.cancelled {
			s.t.Errorf("scheduler exited before it was stopped: %v", s.runErr)
		}
	})
}

// CalderaCache returns the scheduler's shared Caldera cache (pkg/cache), the
// one its SIGUSR1 dump would show, or nil when it has none: no Caldera plugin
// in its configuration, or WithRegistry replaced Caldera's plugins.
func (s *Scheduler) CalderaCache() *cache.Cache {
	if s.plugins == nil {
		return nil
	}
	return s.plugins.Cache()
}

// Done is closed when app.Run has returned.
func (s *Scheduler) Done() <-chan struct{} { return s.done }

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
	body, err := s.endpoints.CoreV1().RESTClient().Get().AbsPath(path).Do(t.Context()).StatusCode(&status).Raw()
	if err != nil && status == 0 {
		t.Fatalf("GET %s from scheduler: %v", path, err)
	}
	return status, body
}

// writeSchedulerConfig loads the source configuration, applies the harness's
// modifications and writes the result to path.
func (e *Env) writeSchedulerConfig(settings *schedulerSettings, path string) error {
	data, err := os.ReadFile(settings.configFile)
	if err != nil {
		return err
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return err
	}

	conn := subMap(cfg, "clientConnection")
	conn["kubeconfig"] = e.Kubeconfig
	if settings.kubeconfig != "" {
		conn["kubeconfig"] = settings.kubeconfig
	}
	setDefault(conn, "qps", 500)
	setDefault(conn, "burst", 1000)

	le := subMap(cfg, "leaderElection")
	if settings.leaseName == "" {
		le["leaderElect"] = false
	} else {
		le["leaderElect"] = true
		le["resourceLock"] = "leases"
		le["resourceName"] = settings.leaseName
		le["resourceNamespace"] = leaseNamespace
		// Quick retries unless the configuration sets its own timing (the
		// shipped one does, for its failover target).
		setDefault(le, "retryPeriod", "500ms")
	}

	for _, pa := range settings.pluginArgs {
		if err := mergePluginArgs(cfg, pa.plugin, pa.args); err != nil {
			return err
		}
	}
	for _, edit := range settings.edits {
		if err := edit(cfg); err != nil {
			return err
		}
	}

	out, err := yaml.Marshal(cfg)
	if err != nil {
		return err
	}
	return os.WriteFile(path, out, 0o600)
}

// mergePluginArgs merges args into plugin's pluginConfig in every profile.
func mergePluginArgs(cfg map[string]any, plugin string, args map[string]any) error {
	profiles, _ := cfg["profiles"].([]any)
	if len(profiles) == 0 {
		return errors.New("WithPluginArgs: the configuration has no profiles")
	}
	for i, p := range profiles {
		profile, ok := p.(map[string]any)
		if !ok {
			return fmt.Errorf("profiles[%d] is not a map", i)
		}
		pluginConfig, _ := profile["pluginConfig"].([]any)
		found := false
		for _, pc := range pluginConfig {
			entry, ok := pc.(map[string]any)
			if !ok || entry["name"] != plugin {
				continue
			}
			found = true
			existing, _ := entry["args"].(map[string]any)
			if existing == nil {
				existing = map[string]any{}
			}
			entry["args"] = deepMerge(existing, args)
		}
		if !found {
			profile["pluginConfig"] = append(pluginConfig, map[string]any{
				"name": plugin,
				"args": deepMerge(map[string]any{}, args),
			})
		}
	}
	return nil
}

// deepMerge copies src into dst, recursing where both hold maps.
func deepMerge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		if sv, ok := v.(map[string]any); ok {
			dv, _ := dst[k].(map[string]any)
			if dv == nil {
				dv = map[string]any{}
			}
			dst[k] = deepMerge(dv, sv)
			continue
		}
		dst[k] = v
	}
	return dst
}

// subMap returns m[key] as a map, creating it when absent.
func subMap(m map[string]any, key string) map[string]any {
	sub, ok := m[key].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[key] = sub
	}
	return sub
}

func setDefault(m map[string]any, key string, v any) {
	if _, ok := m[key]; !ok {
		m[key] = v
	}
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
			case <-s.done:
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
	return WithConfigEdit(func(cfg map[string]any) error {
		profiles, _ := cfg["profiles"].([]any)
		for _, p := range profiles {
			prof, _ := p.(map[string]any)
			if prof == nil {
				continue
			}
			if points, ok := prof["plugins"].(map[string]any); ok {
				for _, v := range points {
					point, _ := v.(map[string]any)
					if list, ok := point["enabled"].([]any); ok {
						kept := list[:0]
						for _, e := range list {
							if m, _ := e.(map[string]any); m == nil || m["name"] != plugin {
								kept = append(kept, e)
							}
						}
						point["enabled"] = kept
					}
				}
			}
			if pcs, ok := prof["pluginConfig"].([]any); ok {
				kept := pcs[:0]
				for _, e := range pcs {
					if m, _ := e.(map[string]any); m == nil || m["name"] != plugin {
						kept = append(kept, e)
					}
				}
				prof["pluginConfig"] = kept
			}
		}
		return nil
	})
}
