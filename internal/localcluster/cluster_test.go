package localcluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCluster starts a cluster, installs the repository's CRDs, runs the
// scheduler on it, restarts the apiserver (same certificate, same
// credentials, same data, CRDs served again) and compacts etcd.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd, kube-apiserver and kube-scheduler")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// A caller's own --token-auth-file: its user and the admin both work.
	userTokens := filepath.Join(dir, "user-tokens.csv")
	if err := os.WriteFile(userTokens, []byte(`user-token,someone,uid-1,"system:masters"`), 0o600); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	c, err := Start(ctx, Options{Dir: dir, APIServerFlags: []string{"--token-auth-file=" + userTokens}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("Stop: %v", err)
		}
	}()
	t.Logf("cluster started in %v", time.Since(began).Round(time.Millisecond))

	cfg := c.Config()
	crds, err := InstallCRDs(ctx, cfg, filepath.Join(root, "manifests", "crds"))
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) == 0 {
		t.Fatal("no CRDs installed")
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}
	if _, err := client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	user := rest.AnonymousClientConfig(cfg)
	user.BearerToken = "user-token"
	if _, err := kubernetes.NewForConfigOrDie(user).CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("the caller's token: %v", err)
	}

	// A kubeconfig, and a scheduler that reads it.
	kubeconfig := filepath.Join(dir, "kubeconfig")
	if err := WriteKubeconfig(cfg, "test", kubeconfig); err != nil {
		t.Fatal(err)
	}
	fromFile, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kubernetes.NewForConfigOrDie(fromFile).CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("through the kubeconfig: %v", err)
	}
	schedConfig := filepath.Join(dir, "scheduler.yaml")
	if err := RewriteSchedulerConfig(filepath.Join(root, "manifests", "scheduler", "config.yaml"), schedConfig,
		SchedulerConfigChanges{Kubeconfig: kubeconfig, QPS: 500, Burst: 1000}); err != nil {
		t.Fatal(err)
	}
	s, err := StartScheduler(ctx, SchedulerOptions{ConfigFile: schedConfig, Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	if s.Plugins == nil || s.Plugins.Cache() == nil {
		t.Error("the scheduler runs without Caldera's shared cache")
	}
	if err := s.Stop(); err != nil {
		t.Errorf("stopping the scheduler: %v", err)
	}

	// Restart: a new port, the same certificate and token, the same data.
	first := c.APIServer().Addr
	cert := c.ServingCert()
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	if c.APIServer() != nil || c.Config() != nil {
		t.Error("a stopped cluster still names an apiserver")
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err == nil {
		t.Error("a request succeeded while the apiserver was stopped")
	}
	began = time.Now()
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver restarted in %v", time.Since(began).Round(time.Millisecond))
	if !bytes.Equal(c.ServingCert(), cert) {
		t.Error("the restarted apiserver serves another certificate")
	}
	// The old configuration, pointed at the new address, is trusted and
	// accepted: its CA and token are those of the first instance.
	moved := rest.CopyConfig(cfg)
	moved.Host = c.Config().Host
	t.Logf("apiserver moved from %s to %s", first, moved.Host)
	if _, err := kubernetes.NewForConfigOrDie(moved).CoreV1().Namespaces().Get(ctx, "kept", metav1.GetOptions{}); err != nil {
		t.Errorf("after the restart: %v", err)
	}
	if err := WaitCRDsServed(ctx, moved, crds); err != nil {
		t.Error(err)
	}

	if rev, err := c.CompactEtcd(ctx); err != nil || rev <= 0 {
		t.Errorf("CompactEtcd = %d, %v", rev, err)
	}
}
