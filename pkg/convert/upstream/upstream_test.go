package upstream

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	sched "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

func TestGroupName(t *testing.T) {
	pod := &v1.Pod{}
	if _, ok := GroupName(pod); ok {
		t.Errorf("a pod without spec.schedulingGroup joins a group")
	}
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("train")}
	if n, ok := GroupName(pod); !ok || n != "train" {
		t.Errorf("GroupName = %q, %v; want train", n, ok)
	}
}

func TestPodGroup(t *testing.T) {
	in := &sched.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", Labels: map[string]string{qapi.QueueLabel: "team"},
			Annotations: map[string]string{DisruptAllAnnotation: "true"}},
		Spec: sched.PodGroupSpec{SchedulingPolicy: sched.PodGroupSchedulingPolicy{Gang: &sched.GangSchedulingPolicy{MinCount: 4}}},
	}
	out := PodGroup(in)
	if !IsUpstream(out) || out.Spec.MinMember != 4 || out.Labels[qapi.QueueLabel] != "team" {
		t.Errorf("model = %+v; want upstream's, minMember 4, queue team", out)
	}
	if DisruptsAll(out) {
		t.Errorf("a user's copy of the disruption annotation made the group one victim")
	}
	if in.Annotations[DisruptAllAnnotation] != "true" {
		t.Errorf("PodGroup changed the informer's object")
	}
	in.Spec.DisruptionMode = &sched.DisruptionMode{All: &sched.AllDisruptionMode{}}
	if !DisruptsAll(PodGroup(in)) {
		t.Errorf("disruptionMode all is not one victim")
	}
	in.Spec.DisruptionMode = &sched.DisruptionMode{Single: &sched.SingleDisruptionMode{}}
	if DisruptsAll(PodGroup(in)) {
		t.Errorf("disruptionMode single is one victim")
	}
	basic := &sched.PodGroup{Spec: sched.PodGroupSpec{SchedulingPolicy: sched.PodGroupSchedulingPolicy{Basic: &sched.BasicSchedulingPolicy{}}}}
	if got := PodGroup(basic).Spec.MinMember; got != 1 {
		t.Errorf("basic policy: minMember %d, want 1", got)
	}
}

func TestConditionsKeepUpstreamsAndChangeOnlyOnChange(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	theirs := metav1.Condition{Type: sched.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: sched.PodGroupReasonUnschedulable, LastTransitionTime: t0}
	refused := Conditions([]metav1.Condition{theirs}, Progress{Why: "queue q: cpu request 3 exceeds remaining capability 1"}, 1, t0)
	if c := meta.FindStatusCondition(refused, sched.PodGroupInitiallyScheduled); c == nil || *c != theirs {
		t.Errorf("upstream's condition = %+v, want it untouched", c)
	}
	a := meta.FindStatusCondition(refused, ConditionAdmitted)
	if a == nil || a.Status != metav1.ConditionFalse || a.Reason != ReasonNotAdmitted || a.Message != "queue q: cpu request 3 exceeds remaining capability 1" {
		t.Errorf("Admitted = %+v, want False NotAdmitted with the verdict", a)
	}
	t1 := metav1.NewTime(t0.Add(time.Minute))
	if again := Conditions(refused, Progress{Why: "queue q: cpu request 3 exceeds remaining capability 1"}, 1, t1); !equalConditions(again, refused) {
		t.Errorf("an unchanged verdict changed the conditions: %+v", again)
	}
	admitted := Conditions(refused, Progress{Admitted: true, Why: "waiting for minCount 4 members, 2 exist"}, 1, t1)
	if a := meta.FindStatusCondition(admitted, ConditionAdmitted); a.Status != metav1.ConditionTrue || !a.LastTransitionTime.Equal(&t1) {
		t.Errorf("Admitted = %+v, want True since t1", a)
	}
	if w := meta.FindStatusCondition(admitted, ConditionWaiting); w.Status != metav1.ConditionTrue || w.Reason != ReasonWaiting {
		t.Errorf("Waiting = %+v, want True Waiting", w)
	}
	placed := Conditions(admitted, Progress{Admitted: true}, 1, t1)
	if w := meta.FindStatusCondition(placed, ConditionWaiting); w.Status != metav1.ConditionFalse || w.Reason != ReasonPlaced {
		t.Errorf("Waiting = %+v, want False Placed", w)
	}
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
