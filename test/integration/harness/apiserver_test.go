package harness

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRestartableAPIServer checks the harness's fault tools: a proxy that
// can be cut and restored, a kube-apiserver restarted on the same etcd behind
// the same address (the Env's clients keep working, the data is still there,
// the CRDs are served again) and an etcd compaction.
func TestRestartableAPIServer(t *testing.T) {
	env := StartWith(t, WithRestartableAPIServer())
	ns := env.Namespace(t)
	get := func(c kubernetes.Interface) error {
		_, err := c.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		return err
	}

	p := env.NewProxy(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	viaProxy := kubernetes.NewForConfigOrDie(cfg)
	if err := get(viaProxy); err != nil {
		t.Fatalf("through the proxy: %v", err)
	}
	p.Sever()
	if err := get(viaProxy); err == nil {
		t.Fatal("a request through a severed proxy succeeded")
	}
	if err := get(env.Client); err != nil {
		t.Fatalf("the Env's own client is not behind the proxy: %v", err)
	}
	if err := p.Restore(); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 10*time.Second, func() (bool, error) { return get(viaProxy) == nil, nil }, "the restored proxy to forward")

	env.StopAPIServer(t)
	if err := get(env.Client); err == nil {
		t.Fatal("a request succeeded while the apiserver was stopped")
	}
	env.StartAPIServer(t)
	// The same client object, the same data, the CRDs served.
	if err := get(env.Client); err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	env.CreatePodGroup(t, PodGroup(ns, "after-restart", 1))
	WaitFor(t, 10*time.Second, func() (bool, error) { return get(viaProxy) == nil, nil }, "the proxy to reach the new apiserver")

	if rev := env.CompactEtcd(t); rev <= 0 {
		t.Fatalf("compacted at revision %d", rev)
	}
}
