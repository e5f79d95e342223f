package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedappconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/pkg/scheduler"

	"github.com/caldera-sched/caldera/pkg/plugins/registry"
)

const (
	// schedulerReadyTimeout bounds the wait for a new scheduler's /readyz.
	schedulerReadyTimeout = 60 * time.Second
	// schedulerStopTimeout bounds the wait for app.Run to return after
	// Stop cancelled it.
	schedulerStopTimeout = 30 * time.Second
	// configzName is the process-global configz entry app.Run registers: it
	// must be released before another scheduler can run in the process.
	configzName = "componentconfig"
)

// SchedulerOptions configures StartScheduler.
type SchedulerOptions struct {
	// ConfigFile is the KubeSchedulerConfiguration to run, as written by
	// RewriteSchedulerConfig (its clientConnection reaches the cluster).
	ConfigFile string
	// Kubeconfig reaches the cluster for the delegated authentication and
	// authorization of the scheduler's secure port.
	Kubeconfig string
	// Registry replaces Caldera's plugins (registry.New().Options(), as
	// cmd/scheduler registers them) when CustomRegistry is set; an empty
	// Registry then registers no out-of-tree plugin.
	Registry       []app.Option
	CustomRegistry bool
	// ReadyTimeout bounds the wait for /readyz (default 60 s).
	ReadyTimeout time.Duration
}

// Scheduler is kube-scheduler running in this process through app.Setup and
// app.Run, wired as caldera-scheduler's command wires them.
type Scheduler struct {
	// Config is the completed configuration app.Setup returned.
	Config *schedappconfig.CompletedConfig
	// Sched is the scheduler app.Run runs.
	Sched *scheduler.Scheduler
	// Port is the scheduler's secure (HTTPS) port on 127.0.0.1.
	Port int
	// Plugins are Caldera's plugins (their shared cache), nil with a
	// custom registry.
	Plugins *registry.Plugins
	// Endpoints reaches the scheduler's own HTTPS endpoints (/readyz,
	// /metrics, /configz), trusting its self-signed certificate.
	Endpoints kubernetes.Interface

	cancel    context.CancelFunc
	done      chan struct{}
	err       error // set before done is closed
	cancelled bool  // set before done is closed: app.Run returned after Stop
	stopOnce  sync.Once
	stopErr   error
}

// StartScheduler sets the scheduler up from o, runs it until Stop and waits
// until it is ready (its informers synced and its event handlers caught up,
// so that objects created after it returns are seen). ctx bounds the wait
// and is the scheduler's parent context: its logger is the scheduler's, and
// cancelling it stops the scheduler as Stop does. On error nothing keeps
// running. Only one scheduler may be starting in a process at a time (see
// configzName); callers serialize starts.
func StartScheduler(ctx context.Context, o SchedulerOptions) (*Scheduler, error) {
	opts, err := schedulerOptions(o.ConfigFile, o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("scheduler options: %w", err)
	}
	listener := opts.SecureServing.Listener
	s := &Scheduler{Port: opts.SecureServing.BindPort, done: make(chan struct{})}
	registryOptions := o.Registry
	if !o.CustomRegistry {
		s.Plugins = registry.New()
		registryOptions = s.Plugins.Options()
	}
	runCtx, cancel := context.WithCancel(ctx)
	s.cancel = cancel
	fail := func(err error) (*Scheduler, error) {
		cancel()
		_ = listener.Close()
		return nil, err
	}

	cc, sched, err := app.Setup(runCtx, opts, registryOptions...)
	if err != nil {
		return fail(fmt.Errorf("app.Setup: %w", err))
	}
	s.Config, s.Sched = cc, sched
	if s.Plugins != nil {
		s.Plugins.FollowLeaderElection(cc)
		if err := s.Plugins.Start(runCtx); err != nil {
			return fail(fmt.Errorf("starting Caldera's plugins: %w", err))
		}
	}
	serverCert, _ := cc.SecureServing.Cert.CurrentCertKeyContent()
	endpointsConfig, err := cc.SecureServing.NewClientConfig(serverCert)
	if err != nil {
		return fail(fmt.Errorf("scheduler endpoints client config: %w", err))
	}
	endpointsConfig.ServerName = "127.0.0.1" // the self-signed cert names IPv4 loopback only
	if s.Endpoints, err = kubernetes.NewForConfig(endpointsConfig); err != nil {
		return fail(fmt.Errorf("scheduler endpoints client: %w", err))
	}

	// A scheduler still running (a leader-election standby) holds the
	// configz entry, and app.Run fails to register its own: release it, so
	// /configz shows the newest scheduler.
	configz.Delete(configzName)
	go s.run(runCtx)
	exited := func() error {
		select {
		case <-s.done:
			return fmt.Errorf("app.Run returned: %v", s.err)
		default:
			return nil
		}
	}
	if err := WaitReadyz(ctx, s.Endpoints.CoreV1().RESTClient(), cmp.Or(o.ReadyTimeout, schedulerReadyTimeout), exited); err != nil {
		return nil, errors.Join(fmt.Errorf("scheduler not ready: %w", err), s.Stop())
	}
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
		// With leader election app.Run ends in os.Exit(0) once its context
		// is cancelled; a test binary run with -test.paniconexit0 (go test
		// passes it) turns that call into this panic. Anything else is real.
		if msg, ok := r.(string); ok && s.cancelled && strings.Contains(msg, "unexpected call to os.Exit(0)") {
			s.err = nil
			return
		}
		panic(r)
	}()
	s.err = app.Run(ctx, s.Config, s.Sched)
}

// Done is closed when app.Run has returned.
func (s *Scheduler) Done() <-chan struct{} { return s.done }

// Err is what app.Run returned; valid once Done is closed.
func (s *Scheduler) Err() error { return s.err }

// Stop cancels the scheduler, waits for app.Run to return and releases the
// process-global configz entry so that another scheduler can start. It
// returns an error when app.Run does not return in time, or returned before
// Stop (the scheduler had died). It is idempotent: a second call returns the
// first one's result and, above all, does not release the configz entry of
// a scheduler started since.
func (s *Scheduler) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Scheduler) stop() error {
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(schedulerStopTimeout):
		return fmt.Errorf("scheduler did not stop within %v", schedulerStopTimeout)
	}
	configz.Delete(configzName)
	if !s.cancelled {
		return fmt.Errorf("scheduler exited before it was stopped: %v", s.err)
	}
	return nil
}
