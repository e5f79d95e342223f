package status

import (
	"errors"
	"fmt"
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/caldera-sched/caldera/pkg/disruption"
)

// A running gang's member gets the annotations that keep autoscalers from
// scaling its node down, only those it lacks (a user's own value stays),
// and nothing else of the pod changes; a pod gone meanwhile is not retried,
// a failed patch is.
func TestProtectPods(t *testing.T) {
	member := func(name string, annotations map[string]string) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Annotations: annotations,
			Labels: map[string]string{"app": "train"}}, Spec: v1.PodSpec{NodeName: "n1"}}
	}
	bare := member("bare", map[string]string{"note": "kept"})
	optedOut := member("opted-out", map[string]string{disruption.KarpenterDoNotDisrupt: "false"})
	gone := member("gone", nil)
	failing := member("failing", nil)
	pods := kfake.NewSimpleClientset(bare.DeepCopy(), optedOut.DeepCopy(), failing.DeepCopy())
	pods.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.(k8stesting.PatchAction).GetName() == "failing" {
			return true, nil, errors.New("etcdserver: request timed out")
		}
		return false, nil, nil
	})
	src := &fakeSource{ready: true, protect: []*v1.Pod{bare, optedOut, gone, failing}}
	w := New(src, Clients{Pods: pods})
	w.ProtectPods(t.Context())

	want := map[string]map[string]string{
		"bare":      {"note": "kept", disruption.KarpenterDoNotDisrupt: "true", disruption.ClusterAutoscalerSafeToEvict: "false"},
		"opted-out": {disruption.KarpenterDoNotDisrupt: "false", disruption.ClusterAutoscalerSafeToEvict: "false"},
		"failing":   nil,
	}
	for name, a := range want {
		got, err := pods.CoreV1().Pods("ns").Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(got.Annotations, a) {
			t.Errorf("pod %s annotations %v, want %v", name, got.Annotations, a)
		}
		if got.Labels["app"] != "train" || got.Spec.NodeName != "n1" {
			t.Errorf("pod %s: the patch changed more than annotations: %+v", name, got)
		}
	}
	if len(src.reprotect) != 1 || src.reprotect[0].Name != "failing" {
		t.Errorf("handed back %v, want only the pod whose patch failed", src.reprotect)
	}
}

// A restart finds every running gang member unannotated at once: one pass
// patches protectPerPass of them, so that the writer and the scheduler's
// binds, which share the client's rate limit, are not held up; the rest
// are patched in the passes after.
func TestProtectPodsBoundedPerPass(t *testing.T) {
	const queued = 2*protectPerPass + 5
	var objs []runtime.Object
	var members []*v1.Pod
	for i := range queued {
		p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprint("m", i)}, Spec: v1.PodSpec{NodeName: "n1"}}
		objs = append(objs, p.DeepCopy())
		members = append(members, p)
	}
	pods := kfake.NewSimpleClientset(objs...)
	src := &fakeSource{ready: true, protect: members}
	w := New(src, Clients{Pods: pods})
	patches := func() int {
		n := 0
		for _, a := range pods.Actions() {
			if a.GetVerb() == "patch" {
				n++
			}
		}
		return n
	}
	for pass, want := range []int{protectPerPass, 2 * protectPerPass, queued, queued} {
		w.ProtectPods(t.Context())
		if got := patches(); got != want {
			t.Fatalf("after pass %d: %d patches, want %d", pass+1, got, want)
		}
	}
}
