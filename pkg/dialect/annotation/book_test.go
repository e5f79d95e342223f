package annotation

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
)

var gangKey = types.NamespacedName{Namespace: "ns", Name: "job-train"}

// member is a pod of Job train (uid owner) asking for a gang of min.
func member(owner types.UID, ann map[string]string) *v1.Pod {
	yes := true
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Annotations: ann, Labels: map[string]string{qapi.QueueLabel: "team-a"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: owner, Controller: &yes}},
	}}
}

func asks(min, timeout string) map[string]string {
	a := map[string]string{qapi.GangMinMemberAnnotation: min}
	if timeout != "" {
		a[qapi.GangTimeoutSecondsAnnotation] = timeout
	}
	return a
}

// What a member is told, by what it says against the first member.
func TestBookAddTellsDisagreement(t *testing.T) {
	for _, tc := range []struct {
		name          string
		first, second map[string]string
		reason, about string
	}{
		{name: "agrees", first: asks("2", "30"), second: asks("2", "30")},
		{name: "other minimum", first: asks("2", ""), second: asks("3", ""), reason: ReasonGangAnnotationMismatch, about: "first member of gang ns/job-train said 2"},
		{name: "bad timeout", first: asks("2", ""), second: asks("2", "soon"), reason: ReasonGangAnnotationMismatch, about: `"soon", not a positive integer`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b Book
			if _, p := b.Add(gangKey, member("u1", tc.first), false); p.Reason != "" {
				t.Fatalf("first member told %+v", p)
			}
			_, p := b.Add(gangKey, member("u1", tc.second), false)
			if p.Reason != tc.reason || !strings.Contains(p.Message, tc.about) {
				t.Errorf("second member told %+v, want %s about %q", p, tc.reason, tc.about)
			}
		})
	}
}

// A gang lacking its PodGroup is handed out with what its first member
// said, not again until RecreateAfter, and no more once the PodGroup
// exists or the last member went.
func TestBookToCreate(t *testing.T) {
	var b Book
	t0 := time.Now()
	b.Add(gangKey, member("u1", asks("2", "30")), false)
	b.Add(gangKey, member("u1", asks("3", "")), false)
	got := b.ToCreate(t0)
	if len(got) != 1 || got[0].Key != gangKey || got[0].MinMember != 2 || *got[0].ScheduleTimeoutSeconds != 30 ||
		got[0].Queue != "team-a" || got[0].Owner.UID != "u1" {
		t.Fatalf("to create %+v", got)
	}
	if again := b.ToCreate(t0.Add(RecreateAfter - time.Second)); len(again) != 0 {
		t.Errorf("handed out again before RecreateAfter: %+v", again)
	}
	if again := b.ToCreate(t0.Add(RecreateAfter)); len(again) != 1 {
		t.Errorf("not handed out again after RecreateAfter: %+v", again)
	}
	b.SetPodGroup(gangKey, true)
	if got := b.ToCreate(t0.Add(time.Hour)); len(got) != 0 {
		t.Errorf("handed out with its PodGroup present: %+v", got)
	}
	b.SetPodGroup(gangKey, false)
	if got := b.ToCreate(t0.Add(time.Hour)); len(got) != 1 {
		t.Errorf("not handed out after its PodGroup was deleted: %+v", got)
	}
	b.Remove(gangKey)
	b.Remove(gangKey)
	if b.Has(gangKey) || len(b.ToCreate(t0.Add(2*time.Hour))) != 0 {
		t.Errorf("gang kept after its last member went")
	}
}

// A Job made again under its name: the gang follows the new Job's first
// live pod, and the old Job's terminating pods are leftovers.
func TestBookFollowsTheCurrentOwner(t *testing.T) {
	var b Book
	old := member("u1", asks("2", ""))
	b.Add(gangKey, old, true)
	old.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if b.Leftover(gangKey, old) {
		t.Errorf("the only owner's terminating pod is a leftover")
	}
	changed, _ := b.Add(gangKey, member("u2", asks("4", "")), true)
	if !changed {
		t.Errorf("a new Job's first pod did not change the gang's owner")
	}
	if !b.Leftover(gangKey, old) {
		t.Errorf("the old Job's terminating pod is not a leftover")
	}
	if b.Leftover(gangKey, member("u2", asks("4", ""))) {
		t.Errorf("a live pod is a leftover")
	}
	b.SetPodGroup(gangKey, false)
	if got := b.ToCreate(time.Now()); len(got) != 1 || got[0].Owner.UID != "u2" || got[0].MinMember != 4 {
		t.Errorf("to create %+v, want the new Job's gang of 4", got)
	}
}

// A pod that asks for a gang but gets none is told why.
func TestInvalid(t *testing.T) {
	noOwner := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: asks("2", "")}}
	if p := Invalid(noOwner); p.Reason != ReasonInvalidGang || !strings.Contains(p.Message, "no controller") {
		t.Errorf("no owner: %+v", p)
	}
	if p := Invalid(member("u1", asks("two", ""))); p.Reason != ReasonInvalidGang || !strings.Contains(p.Message, `"two", not a positive integer`) {
		t.Errorf("bad number: %+v", p)
	}
}
