package status

import (
	"errors"
	"testing"
	"time"

	sched "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/caldera-sched/caldera/pkg/dialect/upstream"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// upstreamSource is a fakeSource that also has upstream's PodGroups.
type upstreamSource struct {
	*fakeSource
	pgs map[types.NamespacedName]*sched.PodGroup
}

func (s *upstreamSource) UpstreamPodGroup(key types.NamespacedName) (*sched.PodGroup, bool) {
	pg, ok := s.pgs[key]
	return pg, ok
}

// Caldera's conditions go on an upstream PodGroup through its status, next
// to upstream's own, which a write that conflicted with upstream's
// scheduler keeps.
func TestWriteUpstreamConditions(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "g"}
	stored := &sched.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "u1", Generation: 1}}
	cs := kfake.NewSimpleClientset(stored.DeepCopy())
	// Between the informer's copy and the write, someone else adds a
	// condition of upstream's: the first update conflicts.
	theirs := metav1.Condition{Type: sched.DisruptionTarget, Status: metav1.ConditionTrue, Reason: sched.PodGroupReasonPreemptionByScheduler,
		LastTransitionTime: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
	conflicts := 1
	cs.PrependReactor("update", "podgroups", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		latest := stored.DeepCopy()
		latest.Status.Conditions = []metav1.Condition{theirs}
		if err := cs.Tracker().Update(sched.SchemeGroupVersion.WithResource("podgroups"), latest, "ns"); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "podgroups"}, "g", errors.New("changed"))
	})
	src := &upstreamSource{fakeSource: &fakeSource{ready: true, rec: &recorder{}},
		pgs: map[types.NamespacedName]*sched.PodGroup{key: stored}}
	src.groups = []Group{{Key: key, Source: &groupspec.Source{Dialect: groupspec.Upstream, Namespace: "ns", Name: "g", UID: "u1"},
		Progress: groupspec.Progress{MinMember: 1, Why: "queue q: cpu request 3 exceeds remaining capability 1"}}}
	New(src, Clients{Pods: cs, UpstreamObjects: src}).Sync(t.Context())

	got, err := cs.SchedulingV1beta1().PodGroups("ns").Get(t.Context(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(got.Status.Conditions, sched.DisruptionTarget); c == nil || c.Reason != theirs.Reason {
		t.Errorf("upstream's condition lost: %+v", got.Status.Conditions)
	}
	a := meta.FindStatusCondition(got.Status.Conditions, upstream.ConditionAdmitted)
	if a == nil || a.Status != metav1.ConditionFalse || a.Message != "queue q: cpu request 3 exceeds remaining capability 1" {
		t.Errorf("Admitted condition = %+v, want False with the verdict", a)
	}
	if conflicts != 0 || len(src.retried) != 0 {
		t.Errorf("conflicts left %d, handed back %v; want the retry to have written", conflicts, src.retried)
	}
}
