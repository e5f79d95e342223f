package snapshot

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

func pod(name, phase string, labels map[string]string) v1.Pod {
	return v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: labels}, Status: v1.PodStatus{Phase: v1.PodPhase(phase)}}
}

// The server answers lists as the API server would for the selectors the
// cache uses, refuses writes, and 404s what it does not serve.
func TestServer(t *testing.T) {
	pods := &v1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, Items: []v1.Pod{
		pod("run", "Running", map[string]string{"g": "a"}),
		pod("done", "Succeeded", map[string]string{"g": "a"}),
		pod("lone", "Succeeded", nil),
	}}
	srv, err := Start(map[string]runtime.Object{"/api/v1/pods": pods})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cs, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		labels, fields string
		want           []string
	}{
		{"", "", []string{"run", "done", "lone"}},
		{"g", "", []string{"run", "done"}},
		{"!g", "", []string{"lone"}},
		{"g", "status.phase!=Running,status.phase!=Pending", []string{"done"}},
		{"", "status.phase=Succeeded", []string{"done", "lone"}},
	} {
		list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{LabelSelector: tc.labels, FieldSelector: tc.fields})
		if err != nil {
			t.Fatalf("list %q %q: %v", tc.labels, tc.fields, err)
		}
		var got []string
		for _, p := range list.Items {
			got = append(got, p.Name)
		}
		if !slices.Equal(got, tc.want) || list.ResourceVersion != "1" {
			t.Errorf("list %q %q: %v at rv %q, want %v at rv 1", tc.labels, tc.fields, got, list.ResourceVersion, tc.want)
		}
	}
	if _, err := cs.CoreV1().Pods("ns").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x"}}, metav1.CreateOptions{}); err == nil {
		t.Errorf("a create was accepted by a read-only snapshot")
	}
	if _, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("nodes, not served: %v, want NotFound", err)
	}
	if err := srv.Set(map[string]runtime.Object{"/api/v1/pods": &v1.PodList{TypeMeta: pods.TypeMeta}}); err != nil {
		t.Fatal(err)
	}
	if list, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 || list.ResourceVersion != "2" {
		t.Errorf("after Set: %v items at rv %q (%v), want none at rv 2", len(list.Items), list.ResourceVersion, err)
	}
}
