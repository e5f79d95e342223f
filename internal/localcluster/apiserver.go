package localcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/featuregate"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

const (
	// apiserverReadyTimeout bounds the wait for a new apiserver's /readyz.
	apiserverReadyTimeout = 90 * time.Second
	// namespaceTimeout bounds the wait, after /readyz, for the default
	// namespace, which a post-start controller creates and which /readyz
	// does not wait for.
	namespaceTimeout = 30 * time.Second
)

// APIServer is one running kube-apiserver instance of a Cluster.
type APIServer struct {
	// Addr is the instance's host:port on 127.0.0.1; every instance listens
	// on a fresh port.
	Addr string

	cancel context.CancelFunc
	done   chan struct{}
	err    error // set before done is closed
}

// Done is closed when the instance has stopped, by StopAPIServer or on its
// own.
func (a *APIServer) Done() <-chan struct{} { return a.done }

// Err is why the instance stopped; valid once Done is closed.
func (a *APIServer) Err() error { return a.err }

// StartAPIServer starts a kube-apiserver on the cluster's etcd and waits
// until it is ready; Start calls it, and a caller calls it again after
// StopAPIServer. The new instance serves the certificate the first one
// served (an error says otherwise) and accepts the same admin token; it
// listens on a new port (Config and APIServer().Addr name it). It does not
// wait for CRDs: see WaitCRDsServed.
func (c *Cluster) StartAPIServer(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.api != nil {
		return errors.New("a kube-apiserver is already running")
	}
	api, err := c.startAPIServer(ctx)
	if err != nil {
		if api != nil {
			api.cancel()
			select {
			case <-api.done:
			case <-time.After(apiserverStopTimeout):
				err = fmt.Errorf("%w; and it did not stop within %v", err, apiserverStopTimeout)
			}
		}
		return err
	}
	c.api = api
	return nil
}

// startAPIServer builds, starts and waits for one instance; c.mu is held.
// On error after the server started it returns the instance for the caller
// to stop.
func (c *Cluster) startAPIServer(ctx context.Context) (*APIServer, error) {
	portMu.Lock()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	portMu.Unlock()
	if err != nil {
		return nil, fmt.Errorf("listening for kube-apiserver: %w", err)
	}
	closeListener := func() { _ = listener.Close() }
	s, err := c.apiServerOptions(listener)
	if err != nil {
		closeListener()
		return nil, err
	}

	runCtx, cancel := context.WithCancel(c.baseCtx)
	fail := func(err error) (*APIServer, error) {
		cancel()
		closeListener()
		return nil, err
	}
	cc, err := c.completeAPIServerConfig(runCtx, s)
	if err != nil {
		return fail(err)
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		return fail(fmt.Errorf("creating kube-apiserver: %w", err))
	}

	a := &APIServer{Addr: listener.Addr().String(), cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(a.done)
		prepared, err := server.PrepareRun()
		if err != nil {
			a.err = err
			return
		}
		a.err = prepared.Run(runCtx)
	}()
	if err := c.waitAPIServerReady(ctx, a); err != nil {
		return a, err
	}
	return a, nil
}

// apiServerOptions parses the instance's flags (the cluster's, then
// Options.APIServerFlags) into options that serve on listener, and makes
// the process-wide feature gate follow them. The caller closes listener on
// error.
func (c *Cluster) apiServerOptions(listener net.Listener) (*options.ServerRunOptions, error) {
	// A registry of its own, as kube-apiserver's command has; the
	// process-wide gate then follows its flags (applyFeatureGates).
	globals, featureGate, err := newComponentGlobals()
	if err != nil {
		return nil, err
	}

	s := options.NewServerRunOptions()
	s.GenericServerRunOptions.ComponentGlobalsRegistry = globals
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(append(c.apiServerArgs(), c.opts.APIServerFlags...)); err != nil {
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	if err := c.mergeTokenFile(s); err != nil {
		return nil, err
	}
	s.SecureServing.Listener = listener
	s.SecureServing.BindPort = listener.Addr().(*net.TCPAddr).Port
	if err := globals.Set(); err != nil {
		return nil, err
	}
	if err := c.applyFeatureGates(featureGate); err != nil {
		return nil, err
	}
	return s, nil
}

// apiServerArgs are the cluster's own kube-apiserver flags, which
// Options.APIServerFlags follow and so may override.
func (c *Cluster) apiServerArgs() []string {
	return []string{
		"--etcd-servers=" + c.etcd.url,
		"--cert-dir=" + c.certDir,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--service-account-key-file=" + c.saKey,
		"--service-account-signing-key-file=" + c.saKey,
		"--service-account-issuer=https://caldera-localcluster.local",
		"--token-auth-file=" + c.tokenFile,
		// ServiceAccount needs a token controller that does not run here;
		// TaintNodesByCondition would give every new Node a not-ready
		// NoSchedule taint that nothing removes.
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		// Nothing runs at the advertised address but this process.
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/16",
	}
}

// completeAPIServerConfig completes and validates s under runCtx, checks
// the serving certificate and builds the server's completed configuration.
func (c *Cluster) completeAPIServerConfig(runCtx context.Context, s *options.ServerRunOptions) (app.CompletedConfig, error) {
	completed, err := s.Complete(runCtx)
	if err != nil {
		return app.CompletedConfig{}, fmt.Errorf("completing kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		return app.CompletedConfig{}, fmt.Errorf("kube-apiserver options: %w", errors.Join(errs...))
	}
	if err := c.checkServingCert(); err != nil {
		return app.CompletedConfig{}, err
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		return app.CompletedConfig{}, err
	}
	return config.Complete()
}

// checkServingCert records the certificate the first instance serves and
// refuses another one later: clients built from Config trust only the
// first. Complete generated that self-signed certificate into the cert
// dir, or found the one the first instance generated there.
func (c *Cluster) checkServingCert() error {
	cert, err := os.ReadFile(filepath.Join(c.certDir, "apiserver.crt"))
	if err != nil {
		return fmt.Errorf("reading the apiserver's self-signed certificate: %w", err)
	}
	if c.servingCert == nil {
		c.servingCert = cert
	} else if !bytes.Equal(cert, c.servingCert) {
		return errors.New("the restarted kube-apiserver serves another certificate than the first one: clients would not trust it")
	}
	return nil
}

// waitAPIServerReady waits for /readyz, then for the default namespace,
// failing early if the instance stops.
func (c *Cluster) waitAPIServerReady(ctx context.Context, a *APIServer) error {
	client, err := kubernetes.NewForConfig(c.newConfig(a.Addr))
	if err != nil {
		return err
	}
	exited := func() error {
		select {
		case <-a.done:
			return fmt.Errorf("kube-apiserver stopped: %v", a.err)
		default:
			return nil
		}
	}
	if err := WaitReadyz(ctx, client.Discovery().RESTClient(), apiserverReadyTimeout, exited); err != nil {
		return fmt.Errorf("kube-apiserver not ready: %w", err)
	}
	var last error
	err = wait.PollUntilContextTimeout(ctx, readyzInterval, namespaceTimeout, true, func(ctx context.Context) (bool, error) {
		if err := exited(); err != nil {
			return false, err
		}
		_, last = client.CoreV1().Namespaces().Get(ctx, metav1.NamespaceDefault, metav1.GetOptions{})
		return last == nil, nil
	})
	if err != nil {
		if last != nil && !apierrors.IsNotFound(last) {
			err = fmt.Errorf("%w (last error: %v)", err, last)
		}
		return fmt.Errorf("kube-apiserver created no default namespace: %w", err)
	}
	return nil
}

// StopAPIServer stops the running apiserver and waits until it has
// returned; etcd keeps running. It is a no-op while the apiserver is
// stopped.
func (c *Cluster) StopAPIServer() error {
	c.mu.Lock()
	a := c.api
	c.api = nil
	c.mu.Unlock()
	if a == nil {
		return nil
	}
	a.cancel()
	select {
	case <-a.done:
	case <-time.After(apiserverStopTimeout):
		return fmt.Errorf("kube-apiserver did not stop within %v", apiserverStopTimeout)
	}
	if a.err != nil && !errors.Is(a.err, context.Canceled) {
		return fmt.Errorf("kube-apiserver: %w", a.err)
	}
	return nil
}

// mergeTokenFile keeps the admin token valid when the caller's flags named
// a --token-auth-file of their own (one user per scheduler replica, say):
// the apiserver reads one file, so it gets the admin's line and theirs.
func (c *Cluster) mergeTokenFile(s *options.ServerRunOptions) error {
	tf := s.Authentication.TokenFile
	if tf == nil || tf.TokenFile == c.tokenFile {
		return nil
	}
	theirs, err := os.ReadFile(tf.TokenFile)
	if err != nil {
		return fmt.Errorf("reading --token-auth-file: %w", err)
	}
	if len(theirs) > 0 && theirs[len(theirs)-1] != '\n' {
		theirs = append(theirs, '\n')
	}
	merged := filepath.Join(c.Dir, "tokens-merged.csv")
	if err := os.WriteFile(merged, append([]byte(c.adminTokenLine()), theirs...), 0o600); err != nil {
		return err
	}
	tf.TokenFile = merged
	return nil
}

// applyFeatureGates makes the process-wide feature gate follow what the
// apiserver's flags set in its own copy, until Stop: much of the apiserver
// (and an in-process scheduler) reads utilfeature.DefaultFeatureGate rather
// than its registry's copy. A restarted apiserver with the same flags finds
// nothing left to change. Changing the emulation version is not supported.
func (c *Cluster) applyFeatureGates(local featuregate.MutableVersionedFeatureGate) error {
	global := utilfeature.DefaultMutableFeatureGate
	if !local.EmulationVersion().EqualTo(global.EmulationVersion()) ||
		!local.MinCompatibilityVersion().EqualTo(global.MinCompatibilityVersion()) {
		return errors.New("kube-apiserver flags change the emulation version, which localcluster does not support")
	}
	overrides, original := map[string]bool{}, map[string]bool{}
	var unset []featuregate.Feature
	for f := range global.GetAll() {
		if on := local.Enabled(f); on != global.Enabled(f) {
			overrides[string(f)], original[string(f)] = on, !on
			if !global.ExplicitlySet(f) {
				unset = append(unset, f)
			}
		}
	}
	if len(overrides) == 0 {
		return nil
	}
	if err := global.SetFromMap(overrides); err != nil {
		return fmt.Errorf("setting the process's feature gates as kube-apiserver's flags say: %w", err)
	}
	previous := c.restore
	c.restore = func() error {
		// Restore all original values at once (dependencies between gates
		// are checked per call), then forget the ones that were unset.
		errs := []error{global.SetFromMap(original)}
		for _, f := range unset {
			errs = append(errs, global.ResetFeatureValueToDefault(f))
		}
		if previous != nil {
			errs = append(errs, previous())
		}
		return errors.Join(errs...)
	}
	return nil
}

// writeRSAKey writes a new 2048-bit RSA private key in PEM to path.
func writeRSAKey(path string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	return os.WriteFile(path, data, 0o600)
}
