// Command caldera-sandbox runs a whole simulated cluster in one process: an
// embedded etcd, a real kube-apiserver, the Caldera scheduler and KWOK's
// controllers for fake nodes and pod lifecycles. `--demo` adds team queues, a
// stream of sample gangs and a live table of queue and gang status.
//
//	make demo                         # build and run with --demo
//	bin/caldera-sandbox --nodes 8     # then: kubectl --kubeconfig caldera-sandbox.kubeconfig get nodes
//
// It prints one line, `ready: kubeconfig=PATH`, once the cluster is usable,
// and stops cleanly on SIGINT or SIGTERM, removing its temporary directory.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

type sandboxOptions struct {
	nodes           int
	nodeCPU         string
	nodeMemory      string
	nodeGPUs        int
	kubeconfig      string
	schedulerConfig string
	crdDir          string
	// volcanoCRDs, when set, is a directory of Volcano's CRDs to install
	// too (make volcano-controller gathers its release's in
	// bin/volcano-crds); the scheduler then also serves the "volcano"
	// scheduler name, so that Volcano's job controller can run beside it.
	volcanoCRDs string
	demo        bool
	quiet       bool
	logFile     string
	verbosity   int
	controllers bool
	// jobRunTime is how long KWOK runs a Job's pod that carries no
	// completeAfterAnnotation before completing it; 0: until deleted.
	jobRunTime time.Duration
	// autoscaler runs Karpenter beside the cluster (--autoscaler).
	autoscaler autoscalerOptions
}

func main() {
	os.Exit(run())
}

func run() int {
	o := sandboxOptions{}
	fs := flag.NewFlagSet("caldera-sandbox", flag.ExitOnError)
	fs.IntVar(&o.nodes, "nodes", 4, "number of simulated (KWOK) nodes")
	fs.StringVar(&o.nodeCPU, "node-cpu", "8", "allocatable cpu of each node")
	fs.StringVar(&o.nodeMemory, "node-memory", "32Gi", "allocatable memory of each node")
	fs.IntVar(&o.nodeGPUs, "node-gpus", 0, "nvidia.com/gpu extended resources on each node")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "write an admin kubeconfig here (default ./caldera-sandbox.kubeconfig, removed on exit)")
	fs.StringVar(&o.schedulerConfig, "scheduler-config", "", "KubeSchedulerConfiguration file (default <repo>/manifests/scheduler/config.yaml)")
	fs.StringVar(&o.crdDir, "crds", "", "directory of CRD YAML files to install (default <repo>/manifests/crds)")
	fs.StringVar(&o.volcanoCRDs, "volcano-crds", "", "also install the Volcano CRDs in this directory (make volcano-controller writes bin/volcano-crds) and serve the scheduler name volcano with a copy of the first profile, for Volcano's own job controller (docs/migrating-from-volcano.md)")
	fs.BoolVar(&o.demo, "demo", false, "create team queues, stream sample gangs into them and show a live status table")
	fs.BoolVar(&o.quiet, "quiet", false, "print only the ready line and errors (no demo table)")
	fs.StringVar(&o.logFile, "log-file", "", "write the components' logs (apiserver, scheduler, KWOK) to this file (default: discarded)")
	fs.IntVar(&o.verbosity, "v", 0, "log verbosity of the components, with --log-file")
	fs.DurationVar(&o.jobRunTime, "job-run-time", 20*time.Second, "how long a Job's pod runs before KWOK completes it, unless its "+completeAfterAnnotation+" annotation says otherwise; 0: until deleted")
	fs.BoolVar(&o.controllers, "controllers", true, "run kube-controller-manager's workload controllers (Jobs, StatefulSets, Deployments, garbage collection, ...), so that workloads make their pods; false: bare pods only")
	fs.BoolVar(&o.autoscaler.enabled, "autoscaler", false, "run Karpenter's KWOK cloud provider (make karpenter builds it) with a NodePool of 2-16 cpu instance types: pods that do not fit get nodes, empty nodes are consolidated away; --nodes defaults to 1")
	fs.StringVar(&o.autoscaler.dir, "karpenter-dir", "", "with --autoscaler: directory holding karpenter-kwok and karpenter-crds/ (default <repo>/bin, where make karpenter writes them)")
	fs.StringVar(&o.autoscaler.cpuLimit, "autoscaler-cpu-limit", "64", "with --autoscaler: the NodePool's cpu limit (spec.limits.cpu)")
	fs.DurationVar(&o.autoscaler.consolidateAfter, "consolidate-after", 5*time.Second, "with --autoscaler: how long a Karpenter node must be unchanged before it may be consolidated")
	fs.StringVar(&o.autoscaler.logFile, "karpenter-log", "", "with --autoscaler: write Karpenter's log here (default: in the temporary directory, removed on exit)")
	_ = fs.Parse(os.Args[1:])
	if o.autoscaler.enabled && !flagSet(fs, "nodes") {
		// One static node, so that most work needs Karpenter's.
		o.nodes = 1
	}

	if err := o.complete(); err != nil {
		fmt.Fprintln(os.Stderr, "caldera-sandbox:", err)
		return 2
	}
	logs, err := setupLogging(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "caldera-sandbox:", err)
		return 2
	}
	defer func() { _ = logs.Close() }()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		// After the first signal, a second one kills the process at once.
		<-ctx.Done()
		stop()
	}()
	if err := sandbox(ctx, o); err != nil {
		if ctx.Err() != nil {
			// Interrupted while starting: everything is stopped and removed.
			return 0
		}
		fmt.Fprintln(os.Stderr, "caldera-sandbox:", err)
		return 1
	}
	return 0
}

// serveVolcanoName adds a copy of the first profile under the scheduler
// name Volcano's job controller gives its pods, as the chart's
// volcano.schedulerName does.
func serveVolcanoName(cfg *configv1.KubeSchedulerConfiguration) error {
	if len(cfg.Profiles) == 0 {
		return errors.New("the scheduler configuration has no profile to serve volcano with")
	}
	alias := *cfg.Profiles[0].DeepCopy()
	alias.SchedulerName = ptr.To("volcano")
	cfg.Profiles = append(cfg.Profiles, alias)
	return nil
}

// complete fills defaults and checks flags.
func (o *sandboxOptions) complete() error {
	if o.nodes < 0 {
		return errors.New("--nodes must not be negative")
	}
	for _, q := range []string{o.nodeCPU, o.nodeMemory} {
		if _, err := resource.ParseQuantity(q); err != nil {
			return fmt.Errorf("invalid quantity %q: %w", q, err)
		}
	}
	if o.schedulerConfig == "" || o.crdDir == "" {
		root, err := localcluster.RepoRoot()
		if err != nil {
			return fmt.Errorf("%w: pass --scheduler-config and --crds, or run from inside the Caldera repository", err)
		}
		if o.schedulerConfig == "" {
			o.schedulerConfig = filepath.Join(root, "manifests", "scheduler", "config.yaml")
		}
		if o.crdDir == "" {
			o.crdDir = filepath.Join(root, "manifests", "crds")
		}
	}
	return o.autoscaler.complete(localcluster.RepoRoot)
}

// flagSet says whether name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// setupLogging sends klog (apiserver, scheduler) to --log-file or nowhere;
// nothing is written to stderr but fatal errors.
func setupLogging(o sandboxOptions) (io.Closer, error) {
	kfs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(kfs)
	_ = kfs.Set("logtostderr", "false")
	_ = kfs.Set("alsologtostderr", "false")
	_ = kfs.Set("stderrthreshold", "FATAL")
	_ = kfs.Set("v", fmt.Sprint(o.verbosity))
	var w io.WriteCloser = nopCloser{io.Discard}
	if o.logFile != "" {
		f, err := os.OpenFile(o.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		w = f
	}
	logOutput = w
	// klog writes a line to its own severity's output and every lower one:
	// one writer, at INFO, gets each line once.
	klog.SetOutputBySeverity("INFO", w)
	for _, sev := range []string{"WARNING", "ERROR", "FATAL"} {
		klog.SetOutputBySeverity(sev, io.Discard)
	}
	return w, nil
}

var logOutput io.Writer = io.Discard

// kubeconfigName names the cluster, user and context of the sandbox's
// kubeconfigs.
const kubeconfigName = "caldera-sandbox"

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// stderrWriter writes KWOK's logs where klog's go.
type stderrWriter struct{}

func (stderrWriter) Write(p []byte) (int, error) { return logOutput.Write(p) }

// sandbox runs the cluster until ctx is cancelled.
func sandbox(ctx context.Context, o sandboxOptions) (err error) {
	began := time.Now()
	tmp, err := os.MkdirTemp("", "caldera-sandbox-")
	if err != nil {
		return err
	}
	defer func() {
		if rmErr := os.RemoveAll(tmp); rmErr != nil && err == nil {
			err = rmErr
		}
	}()

	// The control plane outlives everything that talks to it: it stops
	// last, and not before the scheduler and KWOK have.
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		Dir:            tmp,
		APIServerFlags: []string{"--authorization-mode=RBAC"},
	})
	if err != nil {
		return err
	}
	defer reportStop(cluster.Stop)
	r := &sandboxRun{
		o:                  o,
		began:              began,
		tmp:                tmp,
		cluster:            cluster,
		api:                cluster.APIServer(),
		adminConfig:        cluster.Config(),
		internalKubeconfig: filepath.Join(tmp, "kubeconfig"),
	}
	return r.startAndServe(ctx)
}

// sandboxRun is what the sandbox's start-up steps share once its control
// plane is up.
type sandboxRun struct {
	o     sandboxOptions
	began time.Time
	// tmp is the sandbox's temporary directory, removed on exit.
	tmp     string
	cluster *localcluster.Cluster
	// api is the apiserver instance the sandbox started with: its stopping
	// ends the sandbox.
	api         *localcluster.APIServer
	adminConfig *rest.Config
	// internalKubeconfig, in tmp, is the admin kubeconfig KWOK, the
	// scheduler and Karpenter read.
	internalKubeconfig string
	// c is set by prepareAPI.
	c *clients
}

// startAndServe starts everything on the control plane, each piece after
// what it needs, and serves until ctx is cancelled or a component stops.
// Its defers stop what it started in reverse order, before sandbox stops
// the control plane.
func (r *sandboxRun) startAndServe(ctx context.Context) error {
	edits, err := r.prepareAPI(ctx)
	if err != nil {
		return err
	}
	if err := r.c.createNodes(ctx, r.o); err != nil {
		return err
	}
	workCtx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	if err := startKWOK(workCtx, r.internalKubeconfig, r.o.logFile != "", r.o.jobRunTime); err != nil {
		return err
	}
	stopControllers, err := r.startControllers(workCtx, stopWork)
	if err != nil {
		return err
	}
	defer stopControllers()
	sched, err := r.startScheduler(workCtx, edits)
	if err != nil {
		return err
	}
	defer func() {
		stopWork()
		reportStop(sched.Stop)
	}()
	if err := r.c.waitNodesReady(ctx, r.o); err != nil {
		return err
	}
	ends := sandboxEnds{sched: sched, api: r.api}
	// Karpenter starts once the static nodes are settled (waitNodesReady
	// gives every node the static nodes' capacity) and stops first.
	if r.o.autoscaler.enabled {
		k, err := startAutoscaler(ctx, r.c, r.internalKubeconfig, r.tmp, r.o.autoscaler, r.o.quiet)
		if err != nil {
			return err
		}
		defer k.Stop()
		ends.autoscalerDone, ends.autoscalerErr = k.Done(), func() error { return autoscalerExited(k) }
	}
	return r.serve(ctx, workCtx, ends)
}

// prepareAPI writes the internal kubeconfig, builds the admin clients
// (r.c) and installs the CRDs. It returns the edits the scheduler's
// configuration needs for what it installed: Volcano's CRDs mean serving
// the "volcano" scheduler name too.
func (r *sandboxRun) prepareAPI(ctx context.Context) ([]func(*configv1.KubeSchedulerConfiguration) error, error) {
	if err := localcluster.WriteKubeconfig(r.adminConfig, kubeconfigName, r.internalKubeconfig); err != nil {
		return nil, err
	}
	c, err := newClients(r.adminConfig)
	if err != nil {
		return nil, err
	}
	r.c = c
	if _, err := localcluster.InstallCRDs(ctx, r.adminConfig, r.o.crdDir); err != nil {
		return nil, err
	}
	var edits []func(*configv1.KubeSchedulerConfiguration) error
	if r.o.volcanoCRDs != "" {
		if _, err := localcluster.InstallCRDs(ctx, r.adminConfig, r.o.volcanoCRDs); err != nil {
			return nil, fmt.Errorf("installing Volcano's CRDs from %s: %w", r.o.volcanoCRDs, err)
		}
		edits = append(edits, serveVolcanoName)
	}
	if err := installAutoscalerCRDs(ctx, r.adminConfig, r.o.autoscaler); err != nil {
		return nil, err
	}
	return edits, nil
}

// startControllers runs kube-controller-manager's workload controllers
// unless --controllers=false. The returned func, for the caller to defer,
// cancels the work context and then stops them; it does nothing when they
// do not run.
func (r *sandboxRun) startControllers(workCtx context.Context, stopWork context.CancelFunc) (func(), error) {
	if !r.o.controllers {
		return func() {}, nil
	}
	kcm, err := r.cluster.StartControllers(workCtx)
	if err != nil {
		return nil, err
	}
	return func() {
		stopWork()
		reportStop(kcm.Stop)
	}, nil
}

// startScheduler writes the scheduler's configuration into the temporary
// directory, pointed at the internal kubeconfig at the control plane's own
// client rate (500 qps, burst 1000), and starts the scheduler on it.
func (r *sandboxRun) startScheduler(workCtx context.Context, edits []func(*configv1.KubeSchedulerConfiguration) error) (*localcluster.Scheduler, error) {
	schedConfig := filepath.Join(r.tmp, "scheduler-config.yaml")
	if err := localcluster.RewriteSchedulerConfig(r.o.schedulerConfig, schedConfig, localcluster.SchedulerConfigChanges{
		Kubeconfig: r.internalKubeconfig,
		QPS:        500,
		Burst:      1000,
		Edits:      edits,
	}); err != nil {
		return nil, err
	}
	return localcluster.StartScheduler(workCtx, localcluster.SchedulerOptions{ConfigFile: schedConfig, Kubeconfig: r.internalKubeconfig})
}

// serve writes the user's kubeconfig, says the sandbox is ready, starts
// the demo and waits until ctx is cancelled or a component stops.
func (r *sandboxRun) serve(ctx, workCtx context.Context, ends sandboxEnds) error {
	kubeconfig, removeKubeconfig, err := r.writeUserKubeconfig()
	if err != nil {
		return err
	}
	if removeKubeconfig {
		defer func() { _ = os.Remove(kubeconfig) }()
	}
	if ctx.Err() != nil {
		return nil
	}
	r.announceReady(kubeconfig)
	if r.o.demo {
		go runDemo(workCtx, r.c, r.o, kubeconfig)
	}
	if err := ends.wait(ctx); err != nil {
		return err
	}
	if !r.o.quiet {
		fmt.Fprintln(os.Stderr, "caldera-sandbox: shutting down")
	}
	return nil
}

// writeUserKubeconfig writes the admin kubeconfig for the user at
// --kubeconfig, else at ./caldera-sandbox.kubeconfig, which remove then
// says to delete on exit: a default file must not outlive its cluster.
// The path is made absolute when it can be, so that the ready line names
// it from anywhere.
func (r *sandboxRun) writeUserKubeconfig() (path string, remove bool, err error) {
	path, remove = r.o.kubeconfig, false
	if path == "" {
		path, remove = "caldera-sandbox.kubeconfig", true
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	if err := localcluster.WriteKubeconfig(r.adminConfig, kubeconfigName, path); err != nil {
		return "", false, err
	}
	return path, remove, nil
}

// announceReady prints the ready line callers wait for and, unless
// --quiet, how to reach the cluster.
func (r *sandboxRun) announceReady(kubeconfig string) {
	fmt.Printf("ready: kubeconfig=%s\n", kubeconfig)
	if !r.o.quiet {
		fmt.Fprintf(os.Stderr, "caldera-sandbox: %d nodes up in %v; try: kubectl --kubeconfig %s get nodes,podgroups,queues\n",
			r.o.nodes, time.Since(r.began).Round(100*time.Millisecond), kubeconfig)
	}
}

// sandboxEnds are the components whose stopping on their own ends the
// sandbox.
type sandboxEnds struct {
	sched *localcluster.Scheduler
	api   *localcluster.APIServer
	// autoscalerDone is nil without --autoscaler, and a nil channel never
	// fires; autoscalerErr is then not called.
	autoscalerDone <-chan struct{}
	autoscalerErr  func() error
}

// wait blocks until ctx is cancelled (nil) or a component stops (why).
func (e sandboxEnds) wait(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-e.sched.Done():
		return fmt.Errorf("scheduler stopped: %v", e.sched.Err())
	case <-e.api.Done():
		return fmt.Errorf("kube-apiserver stopped: %v", e.api.Err())
	case <-e.autoscalerDone:
		return e.autoscalerErr()
	}
}

// reportStop stops a component on the way out. Its error is printed, not
// returned, so that it cannot replace the error that ended the sandbox.
func reportStop(stop func() error) {
	if err := stop(); err != nil {
		fmt.Fprintln(os.Stderr, "caldera-sandbox:", err)
	}
}
