// Package localcluster runs a Kubernetes control plane and Caldera's
// scheduler inside the calling process: an embedded etcd, a real
// kube-apiserver built from its ordinary flags, the repository's CRDs and
// kube-scheduler with Caldera's plugins. It is the one owner of that start-up
// for the sandbox binary (cmd/sandbox), the integration harness
// (test/integration/harness) and the benchmarks (test/perf, through the
// harness), so it must not import "testing": errors are returned, with
// context, and the callers decide what they mean.
//
// See README.md in this directory for what it owns and who uses it.
package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/rest"
)

const (
	// defaultQPS and defaultBurst are the client rate of Cluster.Config
	// unless Options says otherwise: far above client-go's 5/10, so that
	// creating objects is not throttled by the client.
	defaultQPS   = 500
	defaultBurst = 1000
	// adminUser is the static-token user of Cluster.Config, a member of
	// system:masters.
	adminUser = "caldera-admin"
)

// Options configures Start.
type Options struct {
	// Dir holds everything the cluster writes: etcd's data and log, the
	// apiserver's certificates, service-account key and token file. It must
	// exist; the caller removes it after Stop.
	Dir string
	// APIServerFlags are kube-apiserver flags given after the cluster's own,
	// so a flag given here wins (e.g. --authorization-mode=RBAC). A
	// --token-auth-file given here is merged with the cluster's admin token,
	// so Config keeps working.
	APIServerFlags []string
	// QPS and Burst are the client rate of Config (default 500 and 1000).
	QPS   float32
	Burst int
}

// Cluster is an embedded etcd and a kube-apiserver on it, both in this
// process. The apiserver can be stopped and started again on the same etcd
// (StopAPIServer, StartAPIServer): every instance serves the same
// certificate and accepts the same admin token, so clients built from Config
// keep working across a restart once they reach the new instance's address.
type Cluster struct {
	// Dir is Options.Dir.
	Dir string

	opts Options
	// baseCtx carries the values (the logger) of the context Start was
	// given, without its cancellation: an apiserver started later, after a
	// restart, runs under it too, until StopAPIServer or Stop.
	baseCtx   context.Context
	etcd      *etcdServer
	certDir   string
	saKey     string
	tokenFile string
	token     string

	mu          sync.Mutex
	api         *APIServer // nil while stopped
	servingCert []byte     // what the first instance served; later ones must match
	restore     func() error
}

// Start starts etcd and a kube-apiserver under opts.Dir and waits until the
// apiserver is ready (/readyz answers 200 and the default namespace exists).
// ctx bounds the start-up; the cluster runs until Stop, with ctx's values
// (its klog logger) but not its cancellation. On error everything started is
// stopped again.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	if opts.Dir == "" {
		return nil, errors.New("localcluster: Options.Dir is required")
	}
	if opts.QPS == 0 {
		opts.QPS, opts.Burst = defaultQPS, defaultBurst
	}
	c := &Cluster{
		Dir:       opts.Dir,
		opts:      opts,
		baseCtx:   context.WithoutCancel(ctx),
		certDir:   filepath.Join(opts.Dir, "certs"),
		saKey:     filepath.Join(opts.Dir, "sa.key"),
		tokenFile: filepath.Join(opts.Dir, "tokens.csv"),
	}
	if err := c.writeCredentials(); err != nil {
		return nil, err
	}
	etcd, err := startEtcd(opts.Dir)
	if err != nil {
		return nil, err
	}
	c.etcd = etcd
	if err := c.StartAPIServer(ctx); err != nil {
		return nil, errors.Join(err, c.Stop())
	}
	return c, nil
}

// writeCredentials writes what every apiserver instance of the cluster
// shares, once: the directory of its self-signed serving certificate (the
// apiserver generates it there on its first start and reuses it after), the
// service-account signing key (tokens issued before a restart stay valid)
// and the static admin token.
func (c *Cluster) writeCredentials() error {
	if err := os.MkdirAll(c.certDir, 0o700); err != nil {
		return err
	}
	if err := writeRSAKey(c.saKey); err != nil {
		return fmt.Errorf("writing the service-account key: %w", err)
	}
	tokenBytes := make([]byte, 16)
	if _, err := rand.Read(tokenBytes); err != nil {
		return err
	}
	c.token = hex.EncodeToString(tokenBytes)
	return os.WriteFile(c.tokenFile, []byte(c.adminTokenLine()), 0o600)
}

// adminTokenLine is the admin's line of a --token-auth-file.
func (c *Cluster) adminTokenLine() string {
	return c.token + "," + adminUser + "," + adminUser + `,"system:masters"` + "\n"
}

// Config returns a new client configuration that reaches the running
// apiserver directly, as a member of system:masters (a static bearer token),
// trusting its serving certificate. It speaks JSON, so clientsets of custom
// resources (PodGroup, Queue) can be built from it; the loopback default of
// protobuf cannot encode them. It returns nil while the apiserver is stopped.
func (c *Cluster) Config() *rest.Config {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api == nil {
		return nil
	}
	return c.newConfig(c.api.Addr)
}

// newConfig is Config for the instance at addr; c.mu is held (servingCert).
func (c *Cluster) newConfig(addr string) *rest.Config {
	cfg := &rest.Config{
		Host:            "https://" + addr,
		BearerToken:     c.token,
		TLSClientConfig: rest.TLSClientConfig{CAData: append([]byte(nil), c.servingCert...)},
		QPS:             c.opts.QPS,
		Burst:           c.opts.Burst,
	}
	cfg.ContentType = "application/json"
	cfg.AcceptContentTypes = "application/json"
	return cfg
}

// ServingCert returns the PEM certificate (and CA) every apiserver instance
// of the cluster serves, for clients that reach it through another address
// of 127.0.0.1 (a proxy).
func (c *Cluster) ServingCert() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]byte(nil), c.servingCert...)
}

// APIServer returns the running apiserver instance, or nil while it is
// stopped.
func (c *Cluster) APIServer() *APIServer {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.api
}

// CompactEtcd compacts etcd up to its current revision and returns that
// revision: a watch that resumes from an older resourceVersion is then
// answered 410 Gone (when the apiserver serves it from etcd, i.e. with
// --watch-cache=false) and the watcher must relist.
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	return c.etcd.compact(ctx)
}

// Stop stops the apiserver, if one runs, then etcd, and restores the
// process's feature gates that the apiserver's --feature-gates changed. It
// is safe to call after a failed Start.
func (c *Cluster) Stop() error {
	errs := []error{c.StopAPIServer()}
	if c.etcd != nil {
		errs = append(errs, c.etcd.close())
		c.etcd = nil
	}
	c.mu.Lock()
	restore := c.restore
	c.restore = nil
	c.mu.Unlock()
	if restore != nil {
		errs = append(errs, restore())
	}
	return errors.Join(errs...)
}

// apiserverStopTimeout bounds the wait for a cancelled apiserver to return.
const apiserverStopTimeout = 60 * time.Second
