package harness

import (
	"context"
	"net/url"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/caldera-sched/caldera/internal/localcluster"
)

// WithRestartableAPIServer makes the Env's kube-apiserver restartable
// (Env.StopAPIServer, Env.StartAPIServer, Env.RestartAPIServer) with clients
// that survive the restart, as clients of a real cluster survive a restart of
// its apiserver:
//
//   - every client (Env.Config, Env.Kubeconfig, and so the schedulers) reaches
//     the apiserver through a TCP proxy whose address never changes (each
//     apiserver instance listens on a fresh port); while the apiserver is
//     stopped the proxy does not listen, so connections are refused as they
//     are by a host whose apiserver is down;
//   - every instance serves the same self-signed certificate for 127.0.0.1
//     (internal/localcluster keeps its cert dir and checks it), so clients
//     keep trusting it;
//   - clients authenticate with a static token of a user in system:masters,
//     which every instance accepts.
//
// etcd is not restarted: a new apiserver serves the same data.
func WithRestartableAPIServer() EnvOption {
	return func(s *envSettings) { s.restartable = true }
}

// startFront starts the front proxy of a restartable apiserver, closed when
// t ends, and returns its address.
func (e *Env) startFront(t *testing.T) string {
	t.Helper()
	front, err := newProxy(e.cluster.APIServer().Addr)
	if err != nil {
		t.Fatalf("starting the apiserver's front proxy: %v", err)
	}
	t.Cleanup(front.Close)
	e.front = front
	return front.Addr()
}

// StopAPIServer stops the kube-apiserver of an Env started with
// WithRestartableAPIServer; etcd keeps running. Until StartAPIServer,
// connections to the apiserver's address are refused: every request fails and
// nothing can change.
func (e *Env) StopAPIServer(t *testing.T) {
	t.Helper()
	if !e.restartable {
		t.Fatalf("StopAPIServer: the Env was not started WithRestartableAPIServer")
	}
	began := time.Now()
	e.front.Sever()
	if err := e.cluster.StopAPIServer(); err != nil {
		t.Fatalf("stopping kube-apiserver: %v", err)
	}
	t.Logf("harness: kube-apiserver stopped in %v", time.Since(began).Round(time.Millisecond))
}

// StartAPIServer starts a new kube-apiserver on the Env's etcd after
// StopAPIServer, reachable at the same address with the same certificate and
// credentials, and waits until it serves every CRD again.
func (e *Env) StartAPIServer(t *testing.T) {
	t.Helper()
	if !e.restartable {
		t.Fatalf("StartAPIServer: the Env was not started WithRestartableAPIServer")
	}
	began := time.Now()
	if err := e.cluster.StartAPIServer(t.Context()); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	e.front.SetTarget(e.cluster.APIServer().Addr)
	if err := e.front.Restore(); err != nil {
		t.Fatalf("restoring the apiserver's front proxy: %v", err)
	}
	if err := localcluster.WaitCRDsServed(t.Context(), e.Config, e.CRDs); err != nil {
		t.Fatal(err)
	}
	t.Logf("harness: kube-apiserver started again in %v", time.Since(began).Round(time.Millisecond))
}

// RestartAPIServer is StopAPIServer then StartAPIServer.
func (e *Env) RestartAPIServer(t *testing.T) {
	t.Helper()
	e.StopAPIServer(t)
	e.StartAPIServer(t)
}

// CompactEtcd compacts etcd up to its current revision and returns that
// revision: a watch that resumes from an older resourceVersion is then
// answered 410 Gone (when the apiserver serves it from etcd, i.e. without its
// watch cache: --watch-cache=false) and the watcher must relist.
func (e *Env) CompactEtcd(t *testing.T) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	rev, err := e.cluster.CompactEtcd(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// NewProxy starts a TCP proxy to the kube-apiserver, closed when t ends, and
// writes a kubeconfig that reaches the apiserver through it (Proxy.Kubeconfig),
// e.g. for a scheduler (WithKubeconfig) whose connection a test cuts with
// Proxy.Sever while its own clients keep working.
func (e *Env) NewProxy(t *testing.T) *Proxy {
	t.Helper()
	u, err := url.Parse(e.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	p, err := newProxy(u.Host)
	if err != nil {
		t.Fatalf("starting a proxy to the apiserver: %v", err)
	}
	t.Cleanup(p.Close)
	cfg := rest.CopyConfig(e.Config)
	cfg.Host = "https://" + p.Addr()
	p.Kubeconfig = filepath.Join(t.TempDir(), "kubeconfig-proxy")
	if err := localcluster.WriteKubeconfig(cfg, "test", p.Kubeconfig); err != nil {
		t.Fatal(err)
	}
	return p
}
