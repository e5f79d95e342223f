package localcluster

import (
	"fmt"
	"net"

	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
)

// schedulerOptions returns kube-scheduler app options for a scheduler run
// inside this process, reading configFile and serving HTTPS on a free
// 127.0.0.1 port, with component globals of its own (newComponentGlobals).
// Authentication and authorization are delegated to the cluster kubeconfig
// reaches (never to an in-cluster config of the host), and /metrics and
// /configz are open.
func schedulerOptions(configFile, kubeconfig string) (*options.Options, error) {
	globals, _, err := newComponentGlobals()
	if err != nil {
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
