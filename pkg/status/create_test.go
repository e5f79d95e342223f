package status

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/component-base/metrics/testutil"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
)

func toCreate(name string) annotation.ToCreate {
	timeout := int32(30)
	return annotation.ToCreate{
		Key:       types.NamespacedName{Namespace: "ns", Name: name},
		Owner:     metav1.OwnerReference{APIVersion: "batch/v1", Kind: "Job", Name: "train", UID: "job-uid"},
		MinMember: 4, ScheduleTimeoutSeconds: &timeout, Queue: "team-a",
	}
}

// The created PodGroup is owned by the members' controller, not as its
// controller and without blockOwnerDeletion, labelled as managed, with the
// annotations' minMember and timeout and the members' queue. An existing
// one counts as created; another failure is counted and logged.
func TestCreatePodGroups(t *testing.T) {
	RegisterMetrics()
	counter := func() float64 {
		v, err := testutil.GetCounterMetricValue(writeErrors.WithLabelValues(WriteCreatePodGroup))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name     string
		existing bool
		fail     error
		errors   float64
	}{
		{name: "new"},
		{name: "already exists", existing: true},
		{name: "failure", fail: errors.New("etcdserver: request timed out"), errors: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var objs []runtime.Object
			if tc.existing {
				objs = append(objs, &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job-train", UID: "theirs"}})
			}
			pgc := pgfake.NewSimpleClientset(objs...)
			if tc.fail != nil {
				pgc.PrependReactor("create", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, tc.fail
				})
			}
			before := counter()
			src := &fakeSource{ready: true, rec: &recorder{}, create: []annotation.ToCreate{toCreate("job-train")}}
			New(src, Clients{PodGroups: pgc, PodGroupObjects: src}).Sync(t.Context())
			if got := counter() - before; got != tc.errors {
				t.Errorf("create errors grew by %v, want %v", got, tc.errors)
			}
			pg, err := pgc.SchedulingV1alpha1().PodGroups("ns").Get(t.Context(), "job-train", metav1.GetOptions{})
			switch {
			case tc.fail != nil:
				if !apierrors.IsNotFound(err) {
					t.Fatalf("get after a failed create: %v, want NotFound", err)
				}
				return
			case err != nil:
				t.Fatal(err)
			case tc.existing:
				if pg.UID != "theirs" || pg.Labels[qapi.ManagedByLabel] != "" {
					t.Errorf("the existing PodGroup was replaced: %+v", pg.ObjectMeta)
				}
				return
			}
			if len(pg.OwnerReferences) != 1 {
				t.Fatalf("owner references %+v, want the Job", pg.OwnerReferences)
			}
			o := pg.OwnerReferences[0]
			if o.Kind != "Job" || o.Name != "train" || o.UID != "job-uid" || o.APIVersion != "batch/v1" ||
				o.Controller == nil || *o.Controller || o.BlockOwnerDeletion != nil {
				t.Errorf("owner %+v, want Job train, controller false, no blockOwnerDeletion", o)
			}
			if pg.Labels[qapi.ManagedByLabel] != qapi.ManagedByCaldera || pg.Labels[qapi.QueueLabel] != "team-a" {
				t.Errorf("labels %v, want managed-by caldera and queue team-a", pg.Labels)
			}
			if pg.Spec.MinMember != 4 || pg.Spec.ScheduleTimeoutSeconds == nil || *pg.Spec.ScheduleTimeoutSeconds != 30 {
				t.Errorf("spec %+v, want minMember 4 and timeout 30", pg.Spec)
			}
		})
	}
}

// A namespace being deleted refuses creates; that is no write error.
func TestCreateInTerminatingNamespace(t *testing.T) {
	RegisterMetrics()
	pgc := pgfake.NewSimpleClientset()
	pgc.PrependReactor("create", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(schema.GroupResource{Group: "scheduling.x-k8s.io", Resource: "podgroups"}, "job-train",
			errors.New("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: v1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	before, _ := testutil.GetCounterMetricValue(writeErrors.WithLabelValues(WriteCreatePodGroup))
	src := &fakeSource{ready: true, rec: &recorder{}, create: []annotation.ToCreate{toCreate("job-train")}}
	New(src, Clients{PodGroups: pgc, PodGroupObjects: src}).Sync(t.Context())
	if after, _ := testutil.GetCounterMetricValue(writeErrors.WithLabelValues(WriteCreatePodGroup)); after != before {
		t.Errorf("a create refused by a terminating namespace was counted as an error (%v -> %v)", before, after)
	}
}

// Notices become one Warning Event each on their pod.
func TestPodNoticesPosted(t *testing.T) {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	src := &fakeSource{ready: true, rec: &recorder{}, notices: []PodNotice{{Pod: pod, Reason: annotation.ReasonInvalidGang, Message: "bad"}}}
	w := New(src, Clients{PodGroups: pgfake.NewSimpleClientset(), PodGroupObjects: src})
	w.Sync(t.Context())
	w.Sync(t.Context())
	if got, want := src.rec.take(), []string{"Pod ns/p Warning InvalidGang Scheduling: bad"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

// Only the leader creates: the writer asks for PodGroups to create only
// while its process holds the Lease, and creates them once it does.
func TestCreateOnlyWhileLeading(t *testing.T) {
	lock := &fakeLock{id: "me"}
	le := &leaderelection.LeaderElectionConfig{Lock: lock, RenewDeadline: time.Hour}
	lead := NewLeadership()
	lead.Follow(le)
	var asked, askedWhileFollowing atomic.Int32
	pgc := pgfake.NewSimpleClientset()
	src := &fakeSource{ready: true, rec: &recorder{}, took: make(chan struct{}, 1), create: []annotation.ToCreate{toCreate("job-train")}}
	src.onCreate = func() {
		asked.Add(1)
		if _, ok := lead.Leading(time.Now()); !ok {
			askedWhileFollowing.Add(1)
		}
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(src, Clients{PodGroups: pgc, PodGroupObjects: src}).Run(ctx, time.Millisecond, lead)
	}()
	// Following: passes come and go (a negative check; 20 periods).
	time.Sleep(20 * time.Millisecond)
	if n := asked.Load(); n != 0 {
		t.Fatalf("a follower asked for PodGroups to create %d times", n)
	}
	if err := le.Lock.Update(t.Context(), resourcelock.LeaderElectionRecord{HolderIdentity: "me"}); err != nil {
		t.Fatal(err)
	}
	<-src.took
	cancel()
	<-done
	if n := askedWhileFollowing.Load(); n != 0 {
		t.Errorf("asked %d times while following", n)
	}
	if _, err := pgc.SchedulingV1alpha1().PodGroups("ns").Get(t.Context(), "job-train", metav1.GetOptions{}); err != nil {
		t.Errorf("the leader did not create the PodGroup: %v", err)
	}
}
