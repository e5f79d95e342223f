package volcano

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	vc "volcano.sh/apis/pkg/apis/scheduling/v1beta1"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// sink records what a Reader hands over.
type sink struct {
	admitting bool
	set, del  []string
	queues    []string
}

func (s *sink) SetGroup(_ klog.Logger, g *groupspec.Spec) { s.set = append(s.set, g.Key()) }
func (s *sink) UpdateGroup(l klog.Logger, old, g *groupspec.Spec) {
	if old.Source.UID != g.Source.UID {
		s.DeleteGroup(l, old)
	}
	s.SetGroup(l, g)
}
func (s *sink) DeleteGroup(_ klog.Logger, g *groupspec.Spec) { s.del = append(s.del, g.Key()) }
func (s *sink) Admitting() bool                              { return s.admitting }
func (s *sink) SetQueue(q *qapi.Queue, deleted bool) {
	if deleted {
		s.queues = append(s.queues, "-"+q.Name)
		return
	}
	s.queues = append(s.queues, q.Name)
}
func (s *sink) SetUp(string, func(context.Context, klog.Logger) error) error { return nil }

// Warnings about a Volcano Queue: none without queue admission (Queues are
// not read then, and none reaches the sink); with it, the latest per Queue
// until the writer takes them, so a follower, which never takes them,
// keeps one per Queue; a deleted Queue's is forgotten.
func TestQueueWarningsStayBounded(t *testing.T) {
	vq := &vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: "vq", UID: "vq-uid"},
		Spec: vc.QueueSpec{Weight: 1, Deserved: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}}}
	plain := &sink{}
	r := ReaderOver(nil, nil, nil, plain)
	r.OnQueue(vq, false)
	if w := r.VolcanoQueueWarnings(); len(w) != 0 || len(plain.queues) != 0 {
		t.Errorf("without admission: %d warnings, queues %v; want none", len(w), plain.queues)
	}

	s := &sink{admitting: true}
	r = ReaderOver(nil, nil, nil, s)
	r.OnQueue(vq, false)
	more := vq.DeepCopy()
	more.Spec.Type = "x"
	r.OnQueue(more, false)
	w := r.VolcanoQueueWarnings()
	if len(w) != 1 || !strings.Contains(w[0].Message, "spec.type") {
		t.Errorf("warnings %+v, want the latest one for vq", w)
	}
	if w := r.VolcanoQueueWarnings(); len(w) != 0 {
		t.Errorf("taken twice: %+v", w)
	}
	r.OnQueue(more, false) // a resync: nothing new to say
	if w := r.VolcanoQueueWarnings(); len(w) != 0 {
		t.Errorf("a resync warned again: %+v", w)
	}
	r.OnQueue(more, true)
	r.OnQueue(more, false) // created again: warned again
	if w := r.VolcanoQueueWarnings(); len(w) != 1 {
		t.Errorf("a recreated Queue: %d warnings, want 1", len(w))
	}
	if want := "vq vq vq -vq vq"; strings.Join(s.queues, " ") != want {
		t.Errorf("queues handed over %v, want %q", s.queues, want)
	}
	root := &vc.Queue{ObjectMeta: metav1.ObjectMeta{Name: RootQueue}}
	r.OnQueue(root, false)
	if len(s.queues) != 5 {
		t.Errorf("Volcano's root queue was handed over as a queue")
	}
}

// PodGroup events reach the sink as specs: an add, an update (a replaced
// object as its deletion and the new one's addition), a deletion; anything
// else is handed over as nil, which the sink ignores.
func TestOnPodGroup(t *testing.T) {
	s := &sink{}
	r := ReaderOver(nil, nil, nil, s)
	pg := &vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "1"}, Spec: vc.PodGroupSpec{MinMember: 2}}
	again := pg.DeepCopy()
	again.UID = "2"
	r.OnPodGroup(klog.Background(), nil, pg, false)
	r.OnPodGroup(klog.Background(), pg, again, false)
	r.OnPodGroup(klog.Background(), nil, again, true)
	if strings.Join(s.set, " ") != "ns/g ns/g" || strings.Join(s.del, " ") != "ns/g ns/g" {
		t.Errorf("set %v, deleted %v; want two of each", s.set, s.del)
	}
}

// A queue's counts are its PodGroups by phase, as vcctl counts them, kept
// from the informer's events; a queue is handed out once per change.
func TestQueueCounts(t *testing.T) {
	r := ReaderOver(nil, nil, nil, &sink{})
	pg := func(name, q string, p vc.PodGroupPhase) *vc.PodGroup {
		return &vc.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("u-" + name)},
			Spec: vc.PodGroupSpec{MinMember: 1, Queue: q}, Status: vc.PodGroupStatus{Phase: p}}
	}
	a, b := pg("a", "q", vc.PodGroupPending), pg("b", "q", vc.PodGroupInqueue)
	r.OnPodGroup(klog.Background(), nil, a, false)
	r.OnPodGroup(klog.Background(), nil, b, false)
	r.OnPodGroup(klog.Background(), nil, pg("c", "other", vc.PodGroupRunning), false)
	if got := r.VolcanoQueueCounts("q"); got != (QueueCounts{Pending: 1, Inqueue: 1}) {
		t.Errorf("q: %+v, want 1 pending, 1 inqueue", got)
	}
	if got := r.RecountedVolcanoQueues(); len(got) != 2 {
		t.Errorf("recounted %v, want q and other", got)
	}
	running := pg("b", "q", vc.PodGroupRunning)
	r.OnPodGroup(klog.Background(), b, running, false)
	r.OnPodGroup(klog.Background(), a, a, false) // a resync changes nothing
	if got := r.VolcanoQueueCounts("q"); got != (QueueCounts{Pending: 1, Running: 1}) {
		t.Errorf("q after b ran: %+v", got)
	}
	if got := r.RecountedVolcanoQueues(); len(got) != 1 || got[0] != "q" {
		t.Errorf("recounted %v, want q once", got)
	}
	r.OnPodGroup(klog.Background(), nil, a, true)
	if got := r.VolcanoQueueCounts("q"); got != (QueueCounts{Running: 1}) {
		t.Errorf("q after a was deleted: %+v", got)
	}
}
