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
	"github.com/caldera-sched/caldera/pkg/groupspec"
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

func TestSpec(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	in := &sched.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "ns", UID: "u", ResourceVersion: "3", CreationTimestamp: created,
			Labels: map[string]string{qapi.QueueLabel: "team"}},
		Spec: sched.PodGroupSpec{SchedulingPolicy: sched.PodGroupSchedulingPolicy{Gang: &sched.GangSchedulingPolicy{MinCount: 4}},
			PriorityClassName: "high"},
	}
	out := Spec(in)
	want := groupspec.Source{Dialect: groupspec.Upstream, APIVersion: APIVersion, Namespace: "ns", Name: "g", UID: "u",
		ResourceVersion: "3", Created: created.Time}
	if out.Source != want || out.Gang.MinMember != 4 || out.Queue != "team" || out.PriorityClassName != "high" {
		t.Errorf("spec = %+v; want upstream's, minMember 4, queue team, class high", out)
	}
	if out.Rules.DisruptAll || out.Rules.MembersAfterAdmission || out.Admitted {
		t.Errorf("rules %+v, admitted %v: want none", out.Rules, out.Admitted)
	}
	in.Spec.DisruptionMode = &sched.DisruptionMode{All: &sched.AllDisruptionMode{}}
	if !Spec(in).Rules.DisruptAll {
		t.Errorf("disruptionMode all is not one victim")
	}
	in.Spec.DisruptionMode = &sched.DisruptionMode{Single: &sched.SingleDisruptionMode{}}
	if Spec(in).Rules.DisruptAll {
		t.Errorf("disruptionMode single is one victim")
	}
	in.Annotations = map[string]string{qapi.AdmittedAtAnnotation: "2026-01-02T03:05:00Z"}
	if !Spec(in).Admitted {
		t.Errorf("Caldera's admitted-at annotation of this object is not read as admitted")
	}
	basic := &sched.PodGroup{Spec: sched.PodGroupSpec{SchedulingPolicy: sched.PodGroupSchedulingPolicy{Basic: &sched.BasicSchedulingPolicy{}}}}
	if got := Spec(basic).Gang.MinMember; got != 1 {
		t.Errorf("basic policy: minMember %d, want 1", got)
	}
}

func TestConditionsKeepUpstreamsAndChangeOnlyOnChange(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	theirs := metav1.Condition{Type: sched.PodGroupInitiallyScheduled, Status: metav1.ConditionFalse, Reason: sched.PodGroupReasonUnschedulable, LastTransitionTime: t0}
	refused := Conditions([]metav1.Condition{theirs}, groupspec.Progress{Why: "queue q: cpu request 3 exceeds remaining capability 1"}, 1, t0)
	if c := meta.FindStatusCondition(refused, sched.PodGroupInitiallyScheduled); c == nil || *c != theirs {
		t.Errorf("upstream's condition = %+v, want it untouched", c)
	}
	a := meta.FindStatusCondition(refused, ConditionAdmitted)
	if a == nil || a.Status != metav1.ConditionFalse || a.Reason != ReasonNotAdmitted || a.Message != "queue q: cpu request 3 exceeds remaining capability 1" {
		t.Errorf("Admitted = %+v, want False NotAdmitted with the verdict", a)
	}
	t1 := metav1.NewTime(t0.Add(time.Minute))
	if again := Conditions(refused, groupspec.Progress{Why: "queue q: cpu request 3 exceeds remaining capability 1"}, 1, t1); !equalConditions(again, refused) {
		t.Errorf("an unchanged verdict changed the conditions: %+v", again)
	}
	admitted := Conditions(refused, groupspec.Progress{Admitted: true, MinMember: 4, Members: 2}, 1, t1)
	if a := meta.FindStatusCondition(admitted, ConditionAdmitted); a.Status != metav1.ConditionTrue || !a.LastTransitionTime.Equal(&t1) {
		t.Errorf("Admitted = %+v, want True since t1", a)
	}
	if w := meta.FindStatusCondition(admitted, ConditionWaiting); w.Status != metav1.ConditionTrue || w.Reason != ReasonWaiting ||
		w.Message != "waiting for minCount 4 members, 2 exist" {
		t.Errorf("Waiting = %+v, want True Waiting", w)
	}
	placed := Conditions(admitted, groupspec.Progress{Admitted: true, MinMember: 4, Members: 4}, 1, t1)
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
