package enqueue

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// fakeAdmissions admits the pods named in ok and holds every other one with
// msg.
type fakeAdmissions struct {
	ok  map[string]bool
	msg string
}

func (f fakeAdmissions) MayEnqueue(pod *v1.Pod) (bool, string) {
	if f.ok[pod.Name] {
		return true, ""
	}
	return false, f.msg
}

func pod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name)}}
}

func TestPreEnqueue(t *testing.T) {
	e := &Enqueue{cache: fakeAdmissions{ok: map[string]bool{"admitted": true}, msg: "queue q: cpu request 4 exceeds remaining capability 2"}}
	for _, tc := range []struct {
		pod  string
		want fwk.Code
		msg  string
	}{
		{"admitted", fwk.Success, ""},
		// Unresolvable: no preemption can admit a group; only a pass can,
		// and the pass activates the pods it admits.
		{"pending", fwk.UnschedulableAndUnresolvable, "queue q: cpu request 4 exceeds remaining capability 2"},
	} {
		t.Run(tc.pod, func(t *testing.T) {
			st := e.PreEnqueue(context.Background(), pod(tc.pod))
			if st.Code() != tc.want || st.Message() != tc.msg {
				t.Errorf("PreEnqueue = %v %q, want %v %q", st.Code(), st.Message(), tc.want, tc.msg)
			}
		})
	}
}

func TestSelfUpdateHint(t *testing.T) {
	relabelled := pod("p")
	relabelled.Labels = map[string]string{"scheduling.caldera.dev/queue": "other"}
	for _, tc := range []struct {
		name string
		new  any
		want fwk.QueueingHint
	}{
		{"the pod's own update", relabelled, fwk.Queue},
		{"another pod's update", pod("other"), fwk.QueueSkip},
		{"not a pod", &v1.Node{}, fwk.QueueSkip},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := selfUpdate(klog.Background(), pod("p"), pod("p"), tc.new)
			if err != nil || got != tc.want {
				t.Errorf("selfUpdate = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestEventsToRegister(t *testing.T) {
	events, err := (&Enqueue{}).EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Admission passes activate what they admit; the only event that can
	// ungate a pod without one is the pod's own label update.
	if len(events) != 1 || events[0].Event.Resource != fwk.Pod || events[0].Event.ActionType != fwk.UpdatePodLabel || events[0].QueueingHintFn == nil {
		t.Errorf("events = %+v, want one Pod/UpdatePodLabel with a hint", events)
	}
}
