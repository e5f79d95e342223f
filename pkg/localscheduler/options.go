// Package localscheduler builds kube-scheduler app options for a scheduler
// run inside another process (the sandbox, the integration and benchmark
// harnesses): its own feature-gate and version registry, HTTPS on a free
// loopback port, and authn/authz delegated to the cluster of a kubeconfig.
package localscheduler

import (
	"fmt"
	"net"

	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// Options returns app options that read configFile and serve HTTPS on a free
// 127.0.0.1 port. A fresh ComponentGlobalsRegistry means consecutive
// schedulers in one process share no feature-gate or version state.
// Authentication and authorization are delegated to the cluster kubeconfig
// reaches (never to an in-cluster config of the host), and /metrics and
// /configz are open.
func Options(configFile, kubeconfig string) (*options.Options, error) {
	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	globals := basecompatibility.NewComponentGlobalsRegistry()
	if err := globals.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		return nil, err
	}
	opts := options.NewOptionsWithComponentGlobalsRegistry(globals)
	if err := opts.ComponentGlobalsRegistry.Set(); err != nil {
		return nil, err
	}
	opts.ConfigFile = configFile

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listening for the scheduler's secure port: %w", err)
	}
	opts.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	opts.SecureServing.Listener = listener
	opts.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	opts.Authentication.SkipInClusterLookup = true
	opts.Authentication.RemoteKubeConfigFile = kubeconfig
	opts.Authorization.RemoteKubeConfigFile = kubeconfig
	opts.Authorization.AlwaysAllowPaths = append(opts.Authorization.AlwaysAllowPaths, "/metrics", "/metrics/*", "/configz")
	return opts, nil
}
