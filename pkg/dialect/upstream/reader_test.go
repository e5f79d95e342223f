package upstream

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sched "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	kfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2"

	qapi "github.com/caldera-sched/caldera/pkg/apis/scheduling/v1alpha1"
	"github.com/caldera-sched/caldera/pkg/groupspec"
)

// sink records the groups a Reader hands over, from its informer's
// goroutine, and the start step it adds.
type sink struct {
	mu     sync.Mutex
	groups map[string]bool
	step   func(context.Context, klog.Logger) error
}

func (s *sink) SetGroup(_ klog.Logger, g *groupspec.Spec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.groups[g.Key()] = true
}
func (s *sink) UpdateGroup(l klog.Logger, _, g *groupspec.Spec) { s.SetGroup(l, g) }
func (s *sink) DeleteGroup(_ klog.Logger, g *groupspec.Spec) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.groups, g.Key())
}
func (s *sink) Admitting() bool            { return false }
func (s *sink) SetQueue(*qapi.Queue, bool) {}
func (s *sink) has(key string) bool        { s.mu.Lock(); defer s.mu.Unlock(); return s.groups[key] }
func (s *sink) SetUp(_ string, step func(context.Context, klog.Logger) error) error {
	s.step = step
	return nil
}

// The API appearing after the scheduler started is read from then on, and
// its going away takes its groups out, as deletions: pods naming such a
// group wait for it instead of waiting forever for a PodGroup the cache
// would never read.
func TestReaderFollowsTheAPI(t *testing.T) {
	pg := &sched.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "u"},
		Spec: sched.PodGroupSpec{SchedulingPolicy: sched.PodGroupSchedulingPolicy{Gang: &sched.GangSchedulingPolicy{MinCount: 2}}}}
	var served atomic.Bool
	r := NewReader()
	r.poll = 10 * time.Millisecond
	r.discover = func() (bool, error) { return served.Load(), nil }
	s := &sink{groups: map[string]bool{}}
	if err := r.watch(kfake.NewClientset(pg), s, s.SetUp); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := s.step(ctx, klog.Background()); err != nil {
		t.Fatal(err)
	}
	key := types.NamespacedName{Namespace: "ns", Name: "g"}
	if _, ok := r.UpstreamPodGroup(key); ok || s.has("ns/g") {
		t.Fatalf("read a PodGroup while the API is not served")
	}

	served.Store(true)
	waitFor(t, "the PodGroup read once the API appeared", func() bool { return s.has("ns/g") })
	if got, ok := r.UpstreamPodGroup(key); !ok || got.UID != "u" {
		t.Errorf("the writer cannot read the PodGroup: %v, %v", got, ok)
	}

	served.Store(false)
	waitFor(t, "the group taken out once the API went away", func() bool { return !s.has("ns/g") })
	if _, ok := r.UpstreamPodGroup(key); ok {
		t.Errorf("the writer still reads a PodGroup of an API that went away")
	}

	served.Store(true)
	waitFor(t, "the PodGroup read again once the API came back", func() bool { return s.has("ns/g") })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 5*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}
