package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	"sigs.k8s.io/yaml"

	"github.com/caldera-sched/caldera/pkg/localscheduler"
	"github.com/caldera-sched/caldera/pkg/plugins/registry"
)

// scheduler is the Caldera kube-scheduler running in this process.
type scheduler struct {
	done chan struct{}
	err  error
}

// startScheduler runs kube-scheduler with Caldera's plugins from the
// KubeSchedulerConfiguration in srcConfig, rewritten (to dir) to use
// kubeconfig and no leader election, and waits until it is ready.
func startScheduler(ctx context.Context, srcConfig, kubeconfig, configOut string) (*scheduler, error) {
	data, err := os.ReadFile(srcConfig)
	if err != nil {
		return nil, fmt.Errorf("reading scheduler config: %w", err)
	}
	cfg := map[string]any{}
	if err := yaml.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", srcConfig, err)
	}
	conn := subMap(cfg, "clientConnection")
	conn["kubeconfig"] = kubeconfig
	conn["qps"] = 500
	conn["burst"] = 1000
	subMap(cfg, "leaderElection")["leaderElect"] = false
	out, err := yaml.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(configOut, out, 0o600); err != nil {
		return nil, err
	}

	opts, err := localscheduler.Options(configOut, kubeconfig)
	if err != nil {
		return nil, err
	}
	listener := opts.SecureServing.Listener

	plugins := registry.New()
	cc, sched, err := app.Setup(ctx, opts, plugins.Options()...)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("setting up the scheduler: %w", err)
	}
	plugins.FollowLeaderElection(cc)
	serverCert, _ := cc.SecureServing.Cert.CurrentCertKeyContent()
	endpointsConfig, err := cc.SecureServing.NewClientConfig(serverCert)
	if err != nil {
		_ = listener.Close()
		return nil, err
	}
	endpointsConfig.ServerName = "127.0.0.1"
	endpoints, err := kubernetes.NewForConfig(endpointsConfig)
	if err != nil {
		_ = listener.Close()
		return nil, err
	}

	s := &scheduler{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.err = app.Run(ctx, cc, sched)
	}()
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-s.done:
			return false, fmt.Errorf("scheduler stopped: %v", s.err)
		default:
		}
		status := 0
		_, _ = endpoints.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Raw()
		return status == 200, nil
	})
	if err != nil {
		return s, fmt.Errorf("scheduler not ready: %w", err)
	}
	return s, nil
}

func subMap(m map[string]any, key string) map[string]any {
	sub, ok := m[key].(map[string]any)
	if !ok {
		sub = map[string]any{}
		m[key] = sub
	}
	return sub
}
