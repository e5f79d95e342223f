package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	kfake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"sigs.k8s.io/scheduler-plugins/apis/scheduling/v1alpha1"
	pgfake "sigs.k8s.io/scheduler-plugins/pkg/generated/clientset/versioned/fake"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/dialect/annotation"
	"github.com/caldera-sched/caldera/pkg/gang"
	"github.com/caldera-sched/caldera/pkg/groupspec"
	"github.com/caldera-sched/caldera/pkg/queue"
)

// fakeSource is a Source whose work a test sets, recording what the writer
// hands back.
type fakeSource struct {
	mu        sync.Mutex
	ready     bool
	admitting bool
	groups    []Group
	writes    []Admission
	pgs       map[types.NamespacedName]*v1alpha1.PodGroup
	stale     map[types.UID]bool
	rec       *recorder

	retried  []types.NamespacedName
	settled  []types.UID
	allDirty int
	// took is signalled at every GroupStatusWork call.
	took chan struct{}
	// create and notices are handed out once; onCreate, if set, is called
	// at every PodGroupsToCreate.
	create   []annotation.ToCreate
	notices  []PodNotice
	onCreate func()
	// protect is handed out once; a pod handed back is in reprotect.
	protect   []*v1.Pod
	reprotect []*v1.Pod
}

func (s *fakeSource) StatusReady() bool { return s.ready }
func (s *fakeSource) GroupStatusWork(time.Time) []Group {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.took != nil {
		select {
		case s.took <- struct{}{}:
		default:
		}
	}
	g := s.groups
	s.groups = nil
	return g
}
func (s *fakeSource) RetryGroupStatus(k types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.retried = append(s.retried, k)
}
func (s *fakeSource) MarkAllGroupsDirty() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.allDirty++
}
func (s *fakeSource) PodGroupsToCreate() []annotation.ToCreate {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onCreate != nil {
		s.onCreate()
	}
	c := s.create
	s.create = nil
	return c
}
func (s *fakeSource) OverrunEvictions() []OverrunEviction       { return nil }
func (s *fakeSource) FinishOverrun(OverrunEviction, error) bool { return false }

func (s *fakeSource) PodNotices() []PodNotice {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.notices
	s.notices = nil
	return n
}
func (s *fakeSource) Protection() Protection { return fakeProtection{s} }

// fakeProtection is a fakeSource's protection book.
type fakeProtection struct{ s *fakeSource }

func (f fakeProtection) Take(limit int) []*v1.Pod {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(limit, len(s.protect))
	p := s.protect[:n:n]
	s.protect = s.protect[n:]
	return p
}
func (f fakeProtection) Retry(pod *v1.Pod) {
	s := f.s
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reprotect = append(s.reprotect, pod)
}
func (s *fakeSource) RecordGroupMetrics() {}
func (s *fakeSource) Admitting() bool     { return s.admitting }
func (s *fakeSource) AdmissionWrites() []Admission {
	w := s.writes
	s.writes = nil
	return w
}
func (s *fakeSource) Nominations() Nominations { return fakeNominations{s} }

// fakeNominations are a fakeSource's nominations to clear.
type fakeNominations struct{ s *fakeSource }

func (n fakeNominations) Stale(p *v1.Pod) bool                   { return n.s.stale[p.UID] }
func (n fakeNominations) Settled(uid types.UID)                  { n.s.settled = append(n.s.settled, uid) }
func (s *fakeSource) NodeNames() []string                        { return nil }
func (s *fakeSource) Gated([]*v1.Pod) []*v1.Pod                  { return nil }
func (s *fakeSource) QueueStatusUpdates() []*qapi.Queue          { return nil }
func (s *fakeSource) Recorder(string) events.EventRecorderLogger { return s.rec }
func (s *fakeSource) PodGroup(k types.NamespacedName) (*v1alpha1.PodGroup, bool) {
	pg, ok := s.pgs[k]
	return pg, ok
}

// recorder keeps "Kind ns/name type reason action: note" per Event.
type recorder struct {
	mu  sync.Mutex
	got []string
}

func (r *recorder) Eventf(regarding, _ runtime.Object, typ, reason, action, note string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := ""
	switch o := regarding.(type) {
	case *v1.Pod:
		name = "Pod " + o.Namespace + "/" + o.Name
	case *v1.ObjectReference:
		name = o.Kind + " " + o.Namespace + "/" + o.Name
	}
	r.got = append(r.got, fmt.Sprintf("%s %s %s %s: %s", name, typ, reason, action, fmt.Sprintf(note, args...)))
}
func (r *recorder) WithLogger(klog.Logger) events.EventRecorderLogger { return r }
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	g := r.got
	r.got = nil
	return g
}

func mkPG(uid string, annotations map[string]string) *v1alpha1.PodGroup {
	return &v1alpha1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: types.UID(uid), Annotations: annotations}}
}

var gKey = types.NamespacedName{Namespace: "ns", Name: "g"}

// sourceOf names pg as the state hands it to the writer.
func sourceOf(pg *v1alpha1.PodGroup) *groupspec.Source {
	return &groupspec.Source{Dialect: groupspec.SchedulerPlugins, APIVersion: "scheduling.x-k8s.io/v1alpha1",
		Namespace: pg.Namespace, Name: pg.Name, UID: string(pg.UID)}
}

// A status write changes only the fields Caldera owns: a ScheduleStartTime
// and an OccupiedBy set by someone else stay, also when the first write
// meets a conflict and is retried on the latest object.
func TestWriteGroupsKeepsOthersFields(t *testing.T) {
	theirs := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	stored := mkPG("u1", nil)
	stored.Status = v1alpha1.PodGroupStatus{ScheduleStartTime: theirs, OccupiedBy: "ns/job"}
	pgc := pgfake.NewSimpleClientset(stored)
	conflicts := 1
	pgc.PrependReactor("update", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "podgroups"}, "g", errors.New("changed"))
		}
		return false, nil, nil
	})
	// The informer's copy lacks the others' fields.
	src := &fakeSource{ready: true, rec: &recorder{}, pgs: map[types.NamespacedName]*v1alpha1.PodGroup{gKey: mkPG("u1", nil)}}
	src.groups = []Group{{
		Key:      gKey,
		Source:   sourceOf(stored),
		Progress: groupspec.Progress{Phase: gang.PhaseRunning, Running: 2, FirstAttempt: theirs.Add(time.Hour)},
		Notice:   gang.Notice{Reason: gang.ReasonScheduled, Message: "gang scheduled"},
	}}
	New(src, Clients{PodGroups: pgc, PodGroupObjects: src}).Sync(t.Context())

	got, err := pgc.SchedulingV1alpha1().PodGroups("ns").Get(t.Context(), "g", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != v1alpha1.PodGroupRunning || got.Status.Running != 2 || !got.Status.ScheduleStartTime.Equal(&theirs) || got.Status.OccupiedBy != "ns/job" {
		t.Errorf("status = %+v, want Running, 2 running, the stored start time and OccupiedBy", got.Status)
	}
	if conflicts != 0 {
		t.Error("the conflict reactor was never reached")
	}
	if want := []string{"PodGroup ns/g Normal Scheduled Scheduling: gang scheduled"}; !slices.Equal(src.rec.take(), want) {
		t.Errorf("events differ from %v", want)
	}
	if len(src.retried) != 0 {
		t.Errorf("a successful write was handed back: %v", src.retried)
	}
}

// A failed write is counted and handed back to the source for the next
// pass; one already equal to the stored status is not written at all.
func TestWriteGroupsHandsBackFailures(t *testing.T) {
	RegisterMetrics()
	counter := func() float64 {
		v, err := testutil.GetCounterMetricValue(writeErrors.WithLabelValues(WritePodGroupStatus))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	before := counter()
	pgc := pgfake.NewSimpleClientset(mkPG("u1", nil))
	pgc.PrependReactor("update", "podgroups", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("etcdserver: request timed out")
	})
	same := mkPG("u2", nil)
	same.Name = "same"
	same.Status.Phase = v1alpha1.PodGroupPending
	sameKey := types.NamespacedName{Namespace: "ns", Name: "same"}
	src := &fakeSource{ready: true, rec: &recorder{}, groups: []Group{
		{Key: gKey, Source: sourceOf(mkPG("u1", nil)), Progress: groupspec.Progress{Phase: gang.PhaseRunning}},
		{Key: sameKey, Source: sourceOf(same), Progress: groupspec.Progress{Phase: gang.PhasePending}},
	}, pgs: map[types.NamespacedName]*v1alpha1.PodGroup{gKey: mkPG("u1", nil), sameKey: same}}
	New(src, Clients{PodGroups: pgc, PodGroupObjects: src}).Sync(t.Context())
	if !slices.Equal(src.retried, []types.NamespacedName{gKey}) {
		t.Errorf("handed back %v, want only ns/g", src.retried)
	}
	if after := counter(); after != before+1 {
		t.Errorf("write errors went from %v to %v, want one more", before, after)
	}
	updates := 0
	for _, a := range pgc.Actions() {
		if a.GetVerb() == "update" {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("%d updates, want 1 (the unchanged group is not written)", updates)
	}
}

// Nothing is written before the source has every member.
func TestSyncWaitsForTheSource(t *testing.T) {
	pgc := pgfake.NewSimpleClientset(mkPG("u1", nil))
	src := &fakeSource{rec: &recorder{}, groups: []Group{{Key: gKey, Source: sourceOf(mkPG("u1", nil)),
		Progress: groupspec.Progress{Phase: gang.PhaseRunning}, Notice: gang.Notice{Reason: "R"}}},
		pgs: map[types.NamespacedName]*v1alpha1.PodGroup{gKey: mkPG("u1", nil)}}
	New(src, Clients{PodGroups: pgc, PodGroupObjects: src}).Sync(t.Context())
	if len(pgc.Actions()) != 0 || len(src.rec.take()) != 0 || len(src.groups) != 1 {
		t.Errorf("a pass before the source was ready wrote %v", pgc.Actions())
	}
}

func TestWriteAdmissions(t *testing.T) {
	single := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "pod-s", ResourceVersion: "7"}, Spec: v1.PodSpec{SchedulerName: "caldera"}}
	k := gKey
	annotated := map[string]string{qapi.AdmittedAtAnnotation: "2026-01-01T00:00:00Z"}
	eta := time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		pg      *v1alpha1.PodGroup // in the state's lister and the API
		write   Admission
		stale   bool
		events  []string
		patches []string // "resource subresource"
		settled bool
		// verdict is the PodGroup's verdict annotation after (with pg).
		verdict string
		// eta is its expected-start annotation after (with pg).
		eta string
		est string // the estimated-start annotation after the write
	}{{
		name:    "an admitted gang gets its Event and the admitted-at annotation",
		pg:      mkPG("u1", nil),
		write:   Admission{PodGroup: &k, UID: "u1", Admitted: true, Message: "admitted to queue q"},
		events:  []string{"PodGroup ns/g Normal Admitted Admission: admitted to queue q"},
		patches: []string{"podgroups "},
	}, {
		name:   "an annotated gang is not patched again",
		pg:     mkPG("u1", annotated),
		write:  Admission{PodGroup: &k, UID: "u1", Admitted: true, Message: "admitted to queue q"},
		events: []string{"PodGroup ns/g Normal Admitted Admission: admitted to queue q"},
	}, {
		name:    "a refused gang keeps the verdict on its PodGroup",
		pg:      mkPG("u1", nil),
		write:   Admission{PodGroup: &k, UID: "u1", Check: queue.CheckCapability, Message: "queue q: cpu request 3 exceeds remaining capability 2"},
		events:  []string{"PodGroup ns/g Warning NotAdmitted AdmissionCapability: queue q: cpu request 3 exceeds remaining capability 2"},
		patches: []string{"podgroups "},
		verdict: "queue q: cpu request 3 exceeds remaining capability 2",
	}, {
		name: "a refused gang with a reservation gets its expected start",
		pg:   mkPG("u1", nil),
		write: Admission{PodGroup: &k, UID: "u1", Check: queue.CheckPlacement, ExpectedStart: &eta,
			Message: "members not placeable: 1/2 fit on the free nodes; reserved from 2026-12-05T07:00:00Z on n0, n2"},
		events:  []string{"PodGroup ns/g Warning NotAdmitted AdmissionPlacement: members not placeable: 1/2 fit on the free nodes; reserved from 2026-12-05T07:00:00Z on n0, n2"},
		patches: []string{"podgroups "},
		verdict: "members not placeable: 1/2 fit on the free nodes; reserved from 2026-12-05T07:00:00Z on n0, n2",
		eta:     "2026-12-05T07:00:00Z",
	}, {
		name:    "a refused gang without a reservation gets its estimated start",
		pg:      mkPG("u1", nil),
		write:   Admission{PodGroup: &k, UID: "u1", Check: queue.CheckPlacement, EstimatedStart: &eta, Message: "members not placeable: 1/2 fit on the free nodes"},
		events:  []string{"PodGroup ns/g Warning NotAdmitted AdmissionPlacement: members not placeable: 1/2 fit on the free nodes"},
		patches: []string{"podgroups "},
		verdict: "members not placeable: 1/2 fit on the free nodes",
		est:     "2026-12-05T07:00:00Z",
	}, {
		name: "a reservation replaces the estimated start",
		pg: mkPG("u1", map[string]string{qapi.VerdictAnnotation: "members not placeable: 1/2 fit on the free nodes",
			qapi.EstimatedStartAnnotation: "2026-12-05T08:00:00Z"}),
		write:   Admission{PodGroup: &k, UID: "u1", Check: queue.CheckPlacement, ExpectedStart: &eta, Message: "members not placeable: 1/2 fit on the free nodes"},
		events:  []string{"PodGroup ns/g Warning NotAdmitted AdmissionPlacement: members not placeable: 1/2 fit on the free nodes"},
		patches: []string{"podgroups "},
		verdict: "members not placeable: 1/2 fit on the free nodes",
		eta:     "2026-12-05T07:00:00Z",
	}, {
		name:    "a reservation that ends takes the expected start out",
		pg:      mkPG("u1", map[string]string{qapi.VerdictAnnotation: "queue q: closed", qapi.ExpectedStartAnnotation: "2026-12-05T07:00:00Z"}),
		write:   Admission{PodGroup: &k, UID: "u1", Check: queue.CheckQueueClosed, Message: "queue q: closed"},
		events:  []string{"PodGroup ns/g Warning NotAdmitted AdmissionQueueClosed: queue q: closed"},
		patches: []string{"podgroups "},
		verdict: "queue q: closed",
	}, {
		name:    "admission takes the expected start out",
		pg:      mkPG("u1", map[string]string{qapi.ExpectedStartAnnotation: "2026-12-05T07:00:00Z"}),
		write:   Admission{PodGroup: &k, UID: "u1", Admitted: true, Message: "admitted to queue q", ExpectedStart: &eta},
		events:  []string{"PodGroup ns/g Normal Admitted Admission: admitted to queue q"},
		patches: []string{"podgroups "},
	}, {
		name:    "the same verdict is not written again",
		pg:      mkPG("u1", map[string]string{qapi.VerdictAnnotation: "queue q: closed"}),
		write:   Admission{PodGroup: &k, UID: "u1", Check: queue.CheckQueueClosed, Message: "queue q: closed"},
		events:  []string{"PodGroup ns/g Warning NotAdmitted AdmissionQueueClosed: queue q: closed"},
		verdict: "queue q: closed",
	}, {
		name:    "admission takes the verdict out, in the patch that records it",
		pg:      mkPG("u1", map[string]string{qapi.VerdictAnnotation: "queue q: closed"}),
		write:   Admission{PodGroup: &k, UID: "u1", Admitted: true, Message: "admitted to queue q"},
		events:  []string{"PodGroup ns/g Normal Admitted Admission: admitted to queue q"},
		patches: []string{"podgroups "},
	}, {
		name:  "a decision about a PodGroup since replaced under its name is dropped",
		pg:    mkPG("u2", nil),
		write: Admission{PodGroup: &k, UID: "u1", Admitted: true, Message: "admitted to queue q"},
	}, {
		name:  "a decision about a deleted PodGroup is dropped",
		write: Admission{PodGroup: &k, UID: "u1", Admitted: true, Message: "admitted to queue q"},
	}, {
		name:    "a released gang loses its annotation, without an Event",
		pg:      mkPG("u1", annotated),
		write:   Admission{PodGroup: &k, UID: "u1", Unadmit: true},
		patches: []string{"podgroups "},
	}, {
		name:   "a refused singleton's Event names the check in its action",
		write:  Admission{Pod: single, Check: queue.CheckCapability, Message: "queue q: cpu request 1 exceeds remaining capability 0"},
		events: []string{"Pod ns/s Warning NotAdmitted AdmissionCapability: queue q: cpu request 1 exceeds remaining capability 0"},
	}, {
		name:    "a stale nomination is removed with preconditions",
		write:   Admission{Pod: single, ClearNomination: true},
		stale:   true,
		patches: []string{"pods status"},
	}, {
		name:    "a nomination no longer stale is left, and settled",
		write:   Admission{Pod: single, ClearNomination: true},
		settled: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := &fakeSource{ready: true, admitting: true, rec: &recorder{}, writes: []Admission{tc.write},
				pgs: map[types.NamespacedName]*v1alpha1.PodGroup{}, stale: map[types.UID]bool{single.UID: tc.stale}}
			var objs []runtime.Object
			if tc.pg != nil {
				src.pgs[gKey] = tc.pg
				objs = append(objs, tc.pg)
			}
			pgc := pgfake.NewSimpleClientset(objs...)
			pods := kfake.NewSimpleClientset(single)
			New(src, Clients{PodGroups: pgc, Pods: pods, PodGroupObjects: src}).WriteAdmissions(t.Context())

			if got := src.rec.take(); !slices.Equal(got, tc.events) {
				t.Errorf("events\n got %q\nwant %q", got, tc.events)
			}
			var patches []string
			for _, a := range slices.Concat(pgc.Actions(), pods.Actions()) {
				if a.GetVerb() == "patch" {
					patches = append(patches, a.GetResource().Resource+" "+a.GetSubresource())
					if a.GetResource().Resource == "pods" {
						body := string(a.(k8stesting.PatchAction).GetPatch())
						if want := `{"metadata":{"uid":"pod-s","resourceVersion":"7"},"status":{"nominatedNodeName":null}}`; body != want {
							t.Errorf("nomination patch %s, want %s", body, want)
						}
					}
				}
			}
			if !slices.Equal(patches, tc.patches) {
				t.Errorf("patches %q, want %q", patches, tc.patches)
			}
			if got := len(src.settled) == 1; got != tc.settled {
				t.Errorf("settled %v, want %v", src.settled, tc.settled)
			}
			if tc.pg == nil || len(tc.patches) == 0 {
				return
			}
			got, err := pgc.SchedulingV1alpha1().PodGroups("ns").Get(t.Context(), "g", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if has := got.Annotations[qapi.AdmittedAtAnnotation] != ""; has != (tc.write.Admitted && !tc.write.Unadmit) {
				t.Errorf("admitted-at annotation present %v after %+v", has, tc.write)
			}
			if v, ok := got.Annotations[qapi.VerdictAnnotation]; v != tc.verdict || ok != (tc.verdict != "") {
				t.Errorf("verdict annotation %q (present %v), want %q", v, ok, tc.verdict)
			}
			if v, ok := got.Annotations[qapi.ExpectedStartAnnotation]; v != tc.eta || ok != (tc.eta != "") {
				t.Errorf("expected-start annotation %q (present %v), want %q", v, ok, tc.eta)
			}
			if v, ok := got.Annotations[qapi.EstimatedStartAnnotation]; v != tc.est || ok != (tc.est != "") {
				t.Errorf("estimated-start annotation %q (present %v), want %q", v, ok, tc.est)
			}
		})
	}
}

// A writer that starts leading marks every group dirty before its first
// pass: the previous leader may have left anything unwritten.
func TestRunMarksAllDirtyWhenItStartsLeading(t *testing.T) {
	src := &fakeSource{ready: true, rec: &recorder{}, took: make(chan struct{}, 1)}
	lead := NewLeadership()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		New(src, Clients{PodGroupObjects: src}).Run(ctx, time.Millisecond, lead)
	}()
	lead.Follow(nil)
	<-src.took
	cancel()
	<-done
	src.mu.Lock()
	defer src.mu.Unlock()
	if src.allDirty != 1 {
		t.Errorf("MarkAllGroupsDirty called %d times, want once, before the first pass", src.allDirty)
	}
}

// A refusal's verdict goes into the PodScheduled condition of the unit's
// waiting pods, once per verdict; an admission takes it out, unless the
// scheduler has written its own condition since.
func TestWaitingPodsToldTheVerdict(t *testing.T) {
	waiting := func(conds ...v1.PodCondition) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s", UID: "pod-s"},
			Status: v1.PodStatus{Phase: v1.PodPending, Conditions: conds}}
	}
	ours := func(msg string) v1.PodCondition {
		return v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: ReasonWaitingForAdmission, Message: msg}
	}
	unschedulable := v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionFalse, Reason: v1.PodReasonUnschedulable, Message: "0/2 nodes"}
	const msg = "queue q: cpu request 1 exceeds remaining capability 0"
	for _, tc := range []struct {
		name     string
		pod      *v1.Pod // as the state has it, and as stored
		admitted bool
		want     *v1.PodCondition // the stored PodScheduled condition after
		patches  int
	}{
		{name: "a refused pod without a condition is told", pod: waiting(), want: ptrTo(ours(msg)), patches: 1},
		{name: "a pod told another verdict is told the new one", pod: waiting(ours("older numbers")), want: ptrTo(ours(msg)), patches: 1},
		{name: "a pod told this verdict is not written again", pod: waiting(ours(msg)), want: ptrTo(ours(msg))},
		{name: "an admitted pod loses the verdict", pod: waiting(ours(msg)), admitted: true, patches: 1},
		{name: "an admitted pod keeps the scheduler's condition", pod: waiting(unschedulable), admitted: true, want: &unschedulable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods := kfake.NewSimpleClientset(tc.pod.DeepCopy())
			src := &fakeSource{ready: true, admitting: true, rec: &recorder{},
				writes: []Admission{{Pod: tc.pod, Waiting: []*v1.Pod{tc.pod}, Admitted: tc.admitted, Check: queue.CheckCapability, Message: msg}}}
			New(src, Clients{Pods: pods, PodGroupObjects: src}).WriteAdmissions(t.Context())
			n := 0
			for _, a := range pods.Actions() {
				if a.GetVerb() == "patch" {
					n++
				}
			}
			if n != tc.patches {
				t.Errorf("%d patches, want %d", n, tc.patches)
			}
			got, err := pods.CoreV1().Pods("ns").Get(t.Context(), "s", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			c, _ := podScheduled(got)
			if (c == nil) != (tc.want == nil) || c != nil && (c.Status != tc.want.Status || c.Reason != tc.want.Reason || c.Message != tc.want.Message) {
				t.Errorf("PodScheduled = %+v, want %+v", c, tc.want)
			}
			if c != nil && c.Reason == v1.PodReasonUnschedulable && !tc.admitted {
				t.Error("a pod held by admission says Unschedulable: cluster-autoscaler would add nodes for it")
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
