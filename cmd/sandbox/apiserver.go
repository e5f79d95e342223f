package main

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/wait"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/cmd/kube-apiserver/app"
	"k8s.io/kubernetes/cmd/kube-apiserver/app/options"
)

// apiServer is a kube-apiserver running in this process.
type apiServer struct {
	// Config reaches the apiserver as an admin (system:masters).
	Config *rest.Config
	done   chan struct{}
	err    error
}

// startAPIServer builds a kube-apiserver from its ordinary flags and runs it
// until ctx is cancelled. Certificates, the service-account key and the token
// file live under dir.
func startAPIServer(ctx context.Context, dir, etcdURL string) (*apiServer, error) {
	certDir := filepath.Join(dir, "certs")
	if err := os.MkdirAll(certDir, 0o700); err != nil {
		return nil, err
	}
	saKey := filepath.Join(dir, "sa.key")
	if err := writeRSAKey(saKey); err != nil {
		return nil, err
	}
	tokenBytes := make([]byte, 16)
	if _, err := rand.Read(tokenBytes); err != nil {
		return nil, err
	}
	token := hex.EncodeToString(tokenBytes)
	tokenFile := filepath.Join(dir, "tokens.csv")
	if err := os.WriteFile(tokenFile, []byte(token+",caldera-admin,caldera-admin,system:masters\n"), 0o600); err != nil {
		return nil, err
	}

	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	port := listener.Addr().(*net.TCPAddr).Port

	featureGate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	effectiveVersion := utilcompatibility.DefaultKubeEffectiveVersionForTest()
	effectiveVersion.SetEmulationVersion(featureGate.EmulationVersion())
	effectiveVersion.SetMinCompatibilityVersion(featureGate.MinCompatibilityVersion())
	globals := basecompatibility.NewComponentGlobalsRegistry()
	if err := globals.Register(basecompatibility.DefaultKubeComponent, effectiveVersion, featureGate); err != nil {
		_ = listener.Close()
		return nil, err
	}

	s := options.NewServerRunOptions()
	s.GenericServerRunOptions.ComponentGlobalsRegistry = globals
	fs := pflag.NewFlagSet("kube-apiserver", pflag.ContinueOnError)
	for _, f := range s.Flags().FlagSets {
		fs.AddFlagSet(f)
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--cert-dir=" + certDir,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--service-account-key-file=" + saKey,
		"--service-account-signing-key-file=" + saKey,
		"--service-account-issuer=https://caldera-sandbox.local",
		"--token-auth-file=" + tokenFile,
		"--authorization-mode=RBAC",
		"--disable-admission-plugins=ServiceAccount,TaintNodesByCondition",
		"--endpoint-reconciler-type=none",
		"--service-cluster-ip-range=10.0.0.0/24",
	}
	if err := fs.Parse(args); err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("kube-apiserver flags: %w", err)
	}
	s.SecureServing.Listener = listener
	s.SecureServing.BindPort = port
	if err := globals.Set(); err != nil {
		_ = listener.Close()
		return nil, err
	}

	completed, err := s.Complete(ctx)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("completing kube-apiserver options: %w", err)
	}
	if errs := completed.Validate(); len(errs) != 0 {
		_ = listener.Close()
		return nil, fmt.Errorf("kube-apiserver options: %v", errs)
	}
	config, err := app.NewConfig(completed)
	if err != nil {
		_ = listener.Close()
		return nil, err
	}
	cc, err := config.Complete()
	if err != nil {
		_ = listener.Close()
		return nil, err
	}
	server, err := app.CreateServerChain(cc)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("creating kube-apiserver: %w", err)
	}

	a := &apiServer{done: make(chan struct{})}
	go func() {
		defer close(a.done)
		prepared, err := server.PrepareRun()
		if err != nil {
			a.err = err
			return
		}
		a.err = prepared.Run(ctx)
	}()

	ca, err := os.ReadFile(filepath.Join(certDir, "apiserver.crt"))
	if err != nil {
		return a, fmt.Errorf("reading the apiserver's self-signed certificate: %w", err)
	}
	a.Config = &rest.Config{
		Host:            fmt.Sprintf("https://127.0.0.1:%d", port),
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             500,
		Burst:           1000,
	}
	a.Config.ContentType = "application/json"
	a.Config.AcceptContentTypes = "application/json"
	client, err := kubernetes.NewForConfig(a.Config)
	if err != nil {
		return a, err
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case <-a.done:
			return false, fmt.Errorf("kube-apiserver stopped: %v", a.err)
		default:
		}
		status := 0
		body, _ := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&status).Raw()
		if status == 200 {
			return true, nil
		}
		last = string(body)
		return false, nil
	})
	if err != nil {
		return a, fmt.Errorf("kube-apiserver not ready: %w (last /readyz: %s)", err, last)
	}
	return a, nil
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

// writeKubeconfig writes an admin kubeconfig for cfg to path.
func writeKubeconfig(cfg *rest.Config, path string) error {
	kc := clientcmdapi.NewConfig()
	kc.Clusters["caldera-sandbox"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
	}
	kc.AuthInfos["caldera-admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["caldera-sandbox"] = &clientcmdapi.Context{Cluster: "caldera-sandbox", AuthInfo: "caldera-admin", Namespace: "default"}
	kc.CurrentContext = "caldera-sandbox"
	return clientcmd.WriteToFile(*kc, path)
}
