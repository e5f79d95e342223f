package harness

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/component-base/cli"

	"github.com/caldera-sched/caldera/internal/localcluster"
	"github.com/caldera-sched/caldera/pkg/command"
)

// processEnv marks a re-executed test binary that must run caldera-scheduler.
const processEnv = "CALDERA_HARNESS_SCHEDULER_PROCESS"

// RunSchedulerProcess runs caldera-scheduler's command (pkg/command, the one
// cmd/scheduler runs) with the process's arguments and exits, when the test
// binary was started by StartSchedulerProcess; otherwise it returns at once.
// A package that uses StartSchedulerProcess calls it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		harness.RunSchedulerProcess()
//		os.Exit(m.Run())
//	}
//
// Re-executing the test binary runs the real command, flags and all, in a
// process of its own without building the 100 MB binary in every test run.
func RunSchedulerProcess() {
	if os.Getenv(processEnv) != "1" {
		return
	}
	profileStart()
	os.Exit(cli.Run(command.New()))
}

// cpuProfileEnv names a directory: a scheduler process started with it set
// writes a CPU profile of its first cpuProfileSeconds (25 s), start-up
// included, to cpu-<pid>.pprof there. Benchmarks whose scheduler runs as a
// process (W5's restart) set it to see where a start's time goes, which
// the scheduler's own /debug/pprof, reachable only once it serves, misses.
// The profile is written when the time is up, so the process must live that
// long: the harness kills it with SIGKILL, which leaves no time to flush.
const (
	cpuProfileEnv     = "CALDERA_SCHED_CPU_PROFILE_DIR"
	cpuProfileSeconds = 25
)

// profileStart starts the CPU profile cpuProfileEnv asks for; a failure is
// reported on standard error and the scheduler runs unprofiled.
func profileStart() {
	dir := os.Getenv(cpuProfileEnv)
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, fmt.Sprintf("cpu-%d.pprof", os.Getpid())))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", cpuProfileEnv, err)
		return
	}
	time.AfterFunc(cpuProfileSeconds*time.Second, func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	})
}

// SchedulerProcess is caldera-scheduler running as a separate OS process, so a
// test can kill it without any cleanup (SIGKILL) or signal it (SIGUSR1 dumps
// its cache).
type SchedulerProcess struct {
	// ConfigFile is the KubeSchedulerConfiguration the process runs with.
	ConfigFile string
	// Port is the process's secure (HTTPS) port on 127.0.0.1.
	Port int
	// LogFile receives the process's standard output and error.
	LogFile string
	// DumpDir is where SIGUSR1 writes cache dumps (CALDERA_DUMP_DIR).
	DumpDir string

	cmd  *exec.Cmd
	done chan struct{}
	err  error // set before done is closed
}

// StartSchedulerProcess starts caldera-scheduler as a child process of the
// test binary (see RunSchedulerProcess) with the configuration StartScheduler
// would use (the same options apply, except WithRegistry and WithRawConfigFile;
// WithFeatureGates becomes the process's --feature-gates),
// and waits until it answers /readyz. The process is killed, if still running,
// when the test ends; its log is printed when the test failed.
func (e *Env) StartSchedulerProcess(t *testing.T, opts ...SchedulerOption) *SchedulerProcess {
	t.Helper()
	settings := &schedulerSettings{
		configFile: filepath.Join(e.RepoRoot, "manifests", "scheduler", "config.yaml"),
	}
	for _, o := range opts {
		o(settings)
	}
	if settings.registrySet || settings.raw {
		t.Fatalf("StartSchedulerProcess: WithRegistry and WithRawConfigFile apply to in-process schedulers only")
	}
	dir := t.TempDir()
	p := &SchedulerProcess{
		ConfigFile: filepath.Join(dir, "scheduler-config.yaml"),
		LogFile:    filepath.Join(dir, "scheduler.log"),
		DumpDir:    filepath.Join(dir, "dumps"),
		done:       make(chan struct{}),
	}
	if err := os.Mkdir(p.DumpDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := e.writeSchedulerConfig(settings, p.ConfigFile); err != nil {
		t.Fatalf("preparing scheduler config from %s: %v", settings.configFile, err)
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	p.Port = port

	logFile, err := os.Create(p.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(self,
		"--config="+p.ConfigFile,
		"--bind-address=127.0.0.1",
		"--secure-port="+strconv.Itoa(port),
		// Delegated authn/authz reach the test apiserver, never an in-cluster
		// config; the probes below, /metrics and the profiles (served since
		// enableProfiling defaults to true; test/perf reads the held heap
		// from /debug/pprof/heap) need no credentials.
		"--authentication-kubeconfig="+e.Kubeconfig,
		"--authorization-kubeconfig="+e.Kubeconfig,
		"--authentication-skip-lookup",
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*",
		"--v="+strconv.Itoa(schedulerVerbosity()),
	)
	if settings.gates != "" {
		p.cmd.Args = append(p.cmd.Args, "--feature-gates="+settings.gates)
	}
	p.cmd.Env = append(os.Environ(), processEnv+"=1", "CALDERA_DUMP_DIR="+p.DumpDir)
	p.cmd.Stdout, p.cmd.Stderr = logFile, logFile
	began := time.Now()
	if err := p.cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("starting the scheduler process: %v", err)
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = logFile.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Kill(t)
		if t.Failed() {
			p.logTail(t)
			p.keepLog(t)
		}
	})
	if err := p.waitReady(t.Context(), cmp.Or(settings.startTimeout, startTimeout)); err != nil {
		p.Kill(t)
		p.logTail(t)
		t.Fatalf("scheduler process did not become ready: %v", err)
	}
	t.Logf("harness: scheduler process %d ready in %v (config %s, leader election %v)",
		p.cmd.Process.Pid, time.Since(began).Round(time.Millisecond), settings.configFile, settings.leaseName != "")
	return p
}

// Pid is the process's id.
func (p *SchedulerProcess) Pid() int { return p.cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *SchedulerProcess) Done() <-chan struct{} { return p.done }

// Kill sends SIGKILL (no cleanup of any kind: no Lease release, no Unreserve,
// no flush) and waits until the process is gone. It is idempotent.
func (p *SchedulerProcess) Kill(t testing.TB) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	if err := p.cmd.Process.Kill(); err != nil {
		t.Logf("killing scheduler process %d: %v", p.Pid(), err)
	}
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		t.Errorf("scheduler process %d did not exit within %v of SIGKILL", p.Pid(), stopTimeout)
	}
}

// Signal sends sig to the running process.
func (p *SchedulerProcess) Signal(t testing.TB, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signalling scheduler process %d: %v", p.Pid(), err)
	}
}

// Log returns what the process has written so far.
func (p *SchedulerProcess) Log(t testing.TB) []byte {
	t.Helper()
	data, err := os.ReadFile(p.LogFile)
	if err != nil {
		t.Fatalf("reading scheduler log: %v", err)
	}
	return data
}

func (p *SchedulerProcess) logTail(t testing.TB) {
	data, err := os.ReadFile(p.LogFile)
	if err != nil {
		return
	}
	const keep = 8 << 10
	if len(data) > keep {
		data = data[len(data)-keep:]
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			data = data[i+1:]
		}
	}
	t.Logf("last lines of scheduler process %d's log (%s):\n%s", p.Pid(), p.LogFile, data)
}

// keepLogEnv names a directory that receives the whole log of every scheduler
// process of a failed test: the tail printed above rarely reaches back to the
// decision that broke an invariant, and t.TempDir is gone after the run.
const keepLogEnv = "CALDERA_KEEP_LOGS"

func (p *SchedulerProcess) keepLog(t testing.TB) {
	dir := os.Getenv(keepLogEnv)
	if dir == "" {
		return
	}
	data, err := os.ReadFile(p.LogFile)
	if err == nil {
		err = os.MkdirAll(dir, 0o755)
	}
	name := filepath.Join(dir, fmt.Sprintf("%s-%d.log", strings.NewReplacer("/", "_", "=", "").Replace(t.Name()), p.Pid()))
	if err == nil {
		err = os.WriteFile(name, data, 0o644)
	}
	if err != nil {
		t.Logf("keeping scheduler log in %s: %v", dir, err)
		return
	}
	t.Logf("scheduler process %d's whole log: %s", p.Pid(), name)
}

// endpoints is a client of the process's secure port.
func (p *SchedulerProcess) endpoints() (*rest.RESTClient, error) {
	return rest.UnversionedRESTClientFor(&rest.Config{
		Host: fmt.Sprintf("https://127.0.0.1:%d", p.Port),
		// The scheduler's serving certificate is self-signed; only the
		// paths open without credentials (probes, /metrics) are read.
		TLSClientConfig: rest.TLSClientConfig{Insecure: true},
		Timeout:         2 * time.Second,
		QPS:             -1, // polls, not load: no client-side rate limit
		ContentConfig:   rest.ContentConfig{NegotiatedSerializer: scheme.Codecs.WithoutConversion()},
	})
}

// Get fetches path (e.g. /metrics) from the process's secure port and
// returns the status code and body.
func (p *SchedulerProcess) Get(t testing.TB, path string) (int, []byte) {
	t.Helper()
	client, err := p.endpoints()
	if err != nil {
		t.Fatal(err)
	}
	status := 0
	body, err := client.Get().AbsPath(path).Do(t.Context()).StatusCode(&status).Raw()
	if err != nil && status == 0 {
		t.Fatalf("GET %s from scheduler process %d: %v", path, p.Pid(), err)
	}
	return status, body
}

// waitReady polls /readyz until it answers 200 (for at most timeout); it fails early when the
// process exits.
func (p *SchedulerProcess) waitReady(ctx context.Context, timeout time.Duration) error {
	client, err := p.endpoints()
	if err != nil {
		return err
	}
	return localcluster.WaitReadyz(ctx, client, timeout, func() error {
		select {
		case <-p.done:
			return fmt.Errorf("the process exited: %v", p.err)
		default:
			return nil
		}
	})
}

// TokenKubeconfig writes a kubeconfig that reaches the test apiserver with a
// bearer token (e.g. one listed in a --token-auth-file given WithAPIServerFlags,
// so that each scheduler replica authenticates as a user of its own) and
// returns its path.
func (e *Env) TokenKubeconfig(t *testing.T, token string) string {
	t.Helper()
	cfg := rest.AnonymousClientConfig(e.Config)
	cfg.BearerToken = token
	path := filepath.Join(t.TempDir(), "kubeconfig-token")
	if err := localcluster.WriteKubeconfig(cfg, "test", path); err != nil {
		t.Fatal(err)
	}
	return path
}
