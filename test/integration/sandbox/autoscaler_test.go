package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/caldera-sched/caldera/internal/karpenter"
	"github.com/caldera-sched/caldera/test/integration/harness"
)

// TestSandboxAutoscaler runs `caldera-sandbox --autoscaler` (one static
// 8-cpu node, Karpenter's KWOK provider with its NodePool) and creates a
// 10-cpu pod of Caldera's profile: Caldera marks it unschedulable,
// Karpenter launches a node for it, the sandbox's KWOK makes the node
// Ready and Caldera binds the pod there (about 30 s with the builds).
//
// With CALDERA_SANDBOX_CONSOLIDATION=1 it then deletes the pod and waits
// until Karpenter has consolidated the empty node away. That is opt-in
// because it adds 25-40 s (Karpenter validates an empty node for 15 s and
// polls every 10 s) and test/integration/autoscaler checks the same
// Karpenter's consolidation on every run.
func TestSandboxAutoscaler(t *testing.T) {
	root := harness.RepoRoot(t)
	began := time.Now()
	// Its own output directory: the autoscaler package's tests build into
	// _output/neighbours, perhaps at the same time.
	a, err := karpenter.Build(root, filepath.Join(root, "_output", "neighbours-sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("Karpenter built in %v", time.Since(began).Round(time.Millisecond))
	sb := startSandbox(t, "--autoscaler", "--karpenter-dir", a.Dir, "--consolidate-after", "1s")
	cfg, err := clientcmd.BuildConfigFromFlags("", sb.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client := kubernetes.NewForConfigOrDie(cfg)
	ctx := t.Context()

	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil || len(nodes.Items) != 1 {
		t.Fatalf("want the one static node at start, got %v (%v)", nodeNames(nodes), err)
	}
	pod := sandboxPod("big", "10")
	if _, err := client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	created := time.Now()
	var got *corev1.Pod
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err = client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		return err == nil && got.Spec.NodeName != "" && got.Status.Phase == corev1.PodRunning, nil
	})
	if err != nil {
		t.Fatalf("pod not Running on a node within 60s: node %q, phase %q", got.Spec.NodeName, got.Status.Phase)
	}
	node, err := client.CoreV1().Nodes().Get(ctx, got.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if node.Labels[karpenter.NodePoolLabel] != "default" {
		t.Fatalf("pod bound to %s, not a node of Karpenter's NodePool default (labels %v)", node.Name, node.Labels)
	}
	t.Logf("pod created -> Running on Karpenter's %s node %s: %v",
		node.Labels[corev1.LabelInstanceTypeStable], node.Name, time.Since(created).Round(time.Millisecond))

	if os.Getenv("CALDERA_SANDBOX_CONSOLIDATION") == "1" {
		waitConsolidated(t, client, pod)
	} else {
		t.Log("consolidation not checked: CALDERA_SANDBOX_CONSOLIDATION=1 checks it (25-40 s more)")
	}
	sb.stop(t)
}

// waitConsolidated deletes pod and waits until Karpenter has no node left.
func waitConsolidated(t *testing.T, client kubernetes.Interface, pod *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	if err := client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	deleted := time.Now()
	var nodes *corev1.NodeList
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: karpenter.NodePoolLabel})
		if err != nil {
			return false, nil
		}
		nodes = list
		return len(list.Items) == 0, nil
	})
	if err != nil {
		t.Fatalf("Karpenter's nodes %v not consolidated away within 90s of the pod's deletion", nodeNames(nodes))
	}
	t.Logf("pod deleted -> node consolidated away: %v", time.Since(deleted).Round(time.Millisecond))
}

// nodeNames names the nodes of list (nil: none).
func nodeNames(list *corev1.NodeList) []string {
	var out []string
	if list != nil {
		for _, n := range list.Items {
			out = append(out, n.Name)
		}
	}
	return out
}
