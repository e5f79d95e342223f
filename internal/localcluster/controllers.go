package localcluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/configz"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
)

// BatchControllers are the kube-controller-manager controllers a batch
// cluster relies on: Jobs and CronJobs and what they own, StatefulSets,
// Deployments and ReplicaSets, owner-reference garbage collection,
// namespace deletion, pod garbage collection, finished-Job clean-up,
// PodDisruptionBudget status, and EndpointSlices for headless Services
// (MPI, Ray and PyTorch workers find each other through them). Controllers
// for kubelets' nodes, service-account tokens and cloud providers stay off:
// no kubelet runs, and the admin credentials serve every controller.
var BatchControllers = []string{
	"job-controller",
	"cronjob-controller",
	"statefulset-controller",
	"replicaset-controller",
	"deployment-controller",
	"garbage-collector-controller",
	"namespace-controller",
	"pod-garbage-collector-controller",
	"ttl-after-finished-controller",
	"disruption-controller",
	"endpointslice-controller",
}

// Controllers is a kube-controller-manager running in this process.
type Controllers struct {
	cancel context.CancelFunc
	done   chan error
}

// StartControllers runs kube-controller-manager in-process against the
// cluster's apiserver, with the named controllers only (BatchControllers
// when none are named), built from its ordinary flags as its command
// builds it, with a feature-gate and version registry of its own. No
// leader election and no serving port: it is the only one, and nothing
// scrapes it. It returns once the manager has started; Stop ends it.
func (c *Cluster) StartControllers(ctx context.Context, controllers ...string) (*Controllers, error) {
	if len(controllers) == 0 {
		controllers = BatchControllers
	}
	kubeconfig := filepath.Join(c.Dir, "controller-manager.kubeconfig")
	if err := WriteKubeconfig(c.Config(), "local", kubeconfig); err != nil {
		return nil, err
	}
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, fmt.Errorf("kube-controller-manager options: %w", err)
	}
	globals, _, err := newComponentGlobals()
	if err != nil {
		return nil, err
	}
	s.ComponentGlobalsRegistry = globals
	all, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	named := s.Flags(all, disabled, aliases)
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	for _, f := range named.FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		// Every controller acts with the admin's credentials: no
		// service-account token controller runs to mint its own.
		"--use-service-account-credentials=false",
		// The sandbox and tests make many objects quickly; the default
		// (20 qps) would throttle Jobs creating their pods.
		"--kube-api-qps=200",
		"--kube-api-burst=400",
	}
	if err := fs.Parse(args); err != nil {
		return nil, fmt.Errorf("kube-controller-manager flags: %w", err)
	}
	s.ParsedFlags = &named
	if err := s.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	config, err := s.Config(cctx, all, disabled, aliases)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("kube-controller-manager config: %w", err)
	}
	m := &Controllers{cancel: cancel, done: make(chan error, 1)}
	go func() {
		m.done <- app.Run(cctx, config.Complete())
		close(m.done)
	}()
	// app.Run returns only on failure or when cctx ends; a moment without
	// either means it passed its start-up checks (the apiserver is
	// reachable, the controllers are built).
	err = wait.PollUntilContextTimeout(cctx, 100*time.Millisecond, time.Second, true, func(context.Context) (bool, error) {
		select {
		case err := <-m.done:
			if err == nil {
				err = errors.New("exited")
			}
			return false, err
		default:
			return false, nil
		}
	})
	if err != nil && !wait.Interrupted(err) {
		cancel()
		return nil, fmt.Errorf("kube-controller-manager: %w", err)
	}
	return m, nil
}

// Stop ends the controller manager and waits for it.
func (m *Controllers) Stop() error {
	m.cancel()
	err := <-m.done
	configz.Delete(app.ConfigzName)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}
