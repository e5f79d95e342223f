package harness

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// WithRestartableAPIServer makes the Env's kube-apiserver restartable
// (Env.StopAPIServer, Env.StartAPIServer, Env.RestartAPIServer) with clients
// that survive the restart, as clients of a real cluster survive a restart of
// its apiserver:
//
//   - every client (Env.Config, Env.Kubeconfig, and so the schedulers) reaches
//     the apiserver through a TCP proxy whose address never changes (the test
//     server always listens on a fresh port); while the apiserver is stopped
//     the proxy does not listen, so connections are refused as they are by a
//     host whose apiserver is down;
//   - every instance serves the same certificate (the test server's fixture
//     for 127.0.0.1; StartAPIServer checks that it did not change), so
//     clients keep trusting it;
//   - clients authenticate with a static token (--token-auth-file) of a user
//     in system:masters, which every instance accepts (the test server's own
//     loopback token changes with each instance).
//
// etcd is not restarted: a new apiserver serves the same data.
func WithRestartableAPIServer() EnvOption {
	return func(s *envSettings) { s.restartable = true }
}

// prepareRestartable writes the token file of a restartable apiserver,
// starts its front proxy and returns the client configuration that reaches
// it (without the CA, known once the apiserver serves), and the apiserver
// flags.
func (e *Env) prepareRestartable(t *testing.T) (*rest.Config, []string) {
	t.Helper()
	tokenBytes := make([]byte, 16)
	if _, err := rand.Read(tokenBytes); err != nil {
		t.Fatal(err)
	}
	token := hex.EncodeToString(tokenBytes)
	tokenFile := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+`,harness-admin,harness-admin,"system:masters"`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	front, err := newProxy("")
	if err != nil {
		t.Fatalf("starting the apiserver's front proxy: %v", err)
	}
	t.Cleanup(front.Close)
	e.front = front
	cfg := &rest.Config{Host: "https://" + front.Addr(), BearerToken: token}
	return cfg, []string{"--token-auth-file=" + tokenFile}
}

// servingCert reads the certificate a test server serves to clients that
// reach it by IP (the fixture StartTestServer copies into its directory).
func servingCert(server *kubeapiservertesting.TestServer) ([]byte, error) {
	cert := server.ServerOpts.SecureServing.ServerCert
	path := cert.CertKey.CertFile
	if path == "" {
		path = filepath.Join(cert.CertDirectory, cert.PairName+".crt")
	}
	return os.ReadFile(path)
}

// startServer starts a kube-apiserver on the Env's etcd with the Env's flags.
// It runs under the context made for the Env's top-level test when the Env
// started, whose cancellation is one of the first cleanups registered and so
// one of the last to run: a server started later, for a subtest or after a
// restart, still serves the cleanups of the test's namespaces and nodes.
func (e *Env) startServer() (*kubeapiservertesting.TestServer, error) {
	e.apiMu.Lock()
	defer e.apiMu.Unlock()
	if e.server != nil {
		return nil, errors.New("a kube-apiserver is already running")
	}
	server, err := kubeapiservertesting.StartTestServer(e.tctx, nil, e.flags, e.storage)
	if err != nil {
		return nil, err
	}
	e.server = &server
	if e.front != nil {
		crt, err := servingCert(e.server)
		if err != nil {
			return nil, fmt.Errorf("reading the serving certificate: %w", err)
		}
		if e.servingCert == nil {
			e.servingCert = crt
		} else if !bytes.Equal(crt, e.servingCert) {
			return nil, errors.New("the restarted kube-apiserver serves another certificate than the first one: clients would not trust it")
		}
		u, err := url.Parse(server.ClientConfig.Host)
		if err != nil {
			return nil, err
		}
		e.front.SetTarget(u.Host)
		if err := e.front.Restore(); err != nil {
			return nil, err
		}
	}
	return e.server, nil
}

// stopServer tears the running kube-apiserver down, if one runs.
func (e *Env) stopServer() {
	e.apiMu.Lock()
	defer e.apiMu.Unlock()
	if e.front != nil {
		e.front.Sever()
	}
	if e.server != nil {
		e.server.TearDownFn()
		e.server = nil
	}
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
	e.stopServer()
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
	if _, err := e.startServer(); err != nil {
		t.Fatalf("restarting kube-apiserver: %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, len(e.CRDs))
	for i, crd := range e.CRDs {
		wg.Go(func() { errs[i] = e.probeCRD(t.Context(), crd) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
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
	resp, err := e.etcd.V3Client.Client.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("reading etcd's revision: %v", err)
	}
	rev := resp.Header.Revision
	if _, err := e.etcd.V3Client.Client.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		t.Fatalf("compacting etcd at revision %d: %v", rev, err)
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
	if err := writeKubeconfig(cfg, p.Kubeconfig); err != nil {
		t.Fatalf("writing the proxy's kubeconfig: %v", err)
	}
	return p
}
