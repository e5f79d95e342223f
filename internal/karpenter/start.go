package karpenter

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

// Options configures StartKarpenter.
type Options struct {
	// Binary is Karpenter's KWOK provider (Artifacts.Karpenter).
	Binary string
	// Kubeconfig reaches the apiserver, with the rights of an admin.
	Kubeconfig string
	// Dir receives the instance types file and, unless LogFile says
	// otherwise, the log (karpenter.log).
	Dir     string
	LogFile string
	// InstanceTypes are the machines the provider offers
	// (DefaultInstanceTypes when empty).
	InstanceTypes []InstanceType
	// BatchIdleDuration and BatchMaxDuration bound how long Karpenter
	// gathers pending pods before it provisions for them (its defaults are
	// 1s and 10s; here 1s and 3s unless set), so that a scale-up follows
	// an unschedulable pod within seconds.
	BatchIdleDuration, BatchMaxDuration time.Duration
	// LogLevel is Karpenter's: debug, info (the default) or error.
	LogLevel string
	// ReadyTimeout bounds the wait for /readyz (default a minute).
	ReadyTimeout time.Duration
}

func (o *Options) complete() {
	if len(o.InstanceTypes) == 0 {
		o.InstanceTypes = DefaultInstanceTypes()
	}
	if o.BatchIdleDuration == 0 {
		o.BatchIdleDuration = time.Second
	}
	if o.BatchMaxDuration == 0 {
		o.BatchMaxDuration = 3 * time.Second
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.Dir, "karpenter.log")
	}
	if o.ReadyTimeout == 0 {
		o.ReadyTimeout = time.Minute
	}
}

// StartKarpenter starts Karpenter's KWOK provider against the apiserver of
// o.Kubeconfig and waits until it is ready. It runs with leader election
// off, no webhooks (the provider has none) and its metrics and health
// ports on free ports. Its CRDs must be installed (Artifacts.CRDDir); it
// provisions nothing until a NodePool exists. Stop the returned process
// before the apiserver, and after deleting the NodePools whose nodes should
// go.
func StartKarpenter(ctx context.Context, o Options) (*Process, error) {
	o.complete()
	ports, err := localcluster.FreePorts(2)
	if err != nil {
		return nil, err
	}
	itFile := filepath.Join(o.Dir, "instance-types.json")
	data, err := InstanceTypesJSON(o.InstanceTypes)
	if err == nil {
		err = os.WriteFile(itFile, data, 0o644)
	}
	if err != nil {
		return nil, fmt.Errorf("writing Karpenter's instance types: %w", err)
	}
	p, err := startProcess("karpenter", o.Binary, o.LogFile, []string{"KUBECONFIG=" + o.Kubeconfig},
		"--disable-leader-election",
		fmt.Sprintf("--metrics-port=%d", ports[0]),
		fmt.Sprintf("--health-probe-port=%d", ports[1]),
		"--instance-types-file-path="+itFile,
		"--batch-idle-duration="+o.BatchIdleDuration.String(),
		"--batch-max-duration="+o.BatchMaxDuration.String(),
		"--log-level="+o.LogLevel,
	)
	if err != nil {
		return nil, err
	}
	if err := p.waitHTTP(ctx, fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[1]), o.ReadyTimeout); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// KWOKOptions configures StartKWOK.
type KWOKOptions struct {
	// Binary is the KWOK controller (Artifacts.KWOK).
	Binary string
	// Kubeconfig reaches the apiserver, with the rights of an admin.
	Kubeconfig string
	// Stages is its stage configuration (Artifacts.Stages).
	Stages []byte
	// Dir receives the configuration file and, unless LogFile says
	// otherwise, the log (kwok.log).
	Dir     string
	LogFile string
}

// StartKWOK starts the KWOK controller for the nodes annotated
// KWOKNodeAnnotation=fake (Karpenter's) and waits until it is healthy: it
// makes them Ready, keeps their Lease and moves their pods to Running, as
// kubelets would. Start it before Karpenter, so that Karpenter's first
// node is Ready at once.
func StartKWOK(ctx context.Context, o KWOKOptions) (*Process, error) {
	if o.LogFile == "" {
		o.LogFile = filepath.Join(o.Dir, "kwok.log")
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	config := filepath.Join(o.Dir, "kwok.yaml")
	if err := os.WriteFile(config, o.Stages, 0o644); err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	p, err := startProcess("kwok", o.Binary, o.LogFile, nil,
		"--config="+config,
		"--kubeconfig="+o.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector="+KWOKNodeAnnotation+"=fake",
		"--node-ip=127.0.0.1",
		"--node-lease-duration-seconds=40",
		"--server-address="+addr,
		"--v=info",
	)
	if err != nil {
		return nil, err
	}
	if err := p.waitHTTP(ctx, "http://"+addr+"/healthz", time.Minute); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}
