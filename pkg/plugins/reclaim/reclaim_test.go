package reclaim

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/caldera-sched/caldera/pkg/cache"
	"github.com/caldera-sched/caldera/pkg/cache/cachetest"
	policy "github.com/caldera-sched/caldera/pkg/reclaim"
)

// eventHandle is the part of fwk.Handle the book's adapter uses.
type eventHandle struct {
	fwk.Handle
	rec *events.FakeRecorder
}

func (h eventHandle) EventRecorder() events.EventRecorderLogger { return h.rec }

// profile is the plugin as one scheduler profile builds it, on the shared cache.
func profile(c *cache.Cache) (*Reclaim, *events.FakeRecorder) {
	rec := events.NewFakeRecorder(100)
	return &Reclaim{handle: eventHandle{rec: rec}, cache: c, evictions: c.Evictions(), plans: map[types.UID]*plan{}}, rec
}

func mkPod(name string) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

// decide is what policy.Decide returns for a plan taking victims (indices
// into running) for preemptor of queue b from queue a.
func decide(running []*v1.Pod, victims ...int) (policy.Input, policy.Plan) {
	in := policy.Input{Preemptor: policy.Preemptor{Queue: "b"}, Options: policy.Options{Now: time.Now()}}
	for _, r := range running {
		in.Pods = append(in.Pods, policy.Pod{ID: r.Namespace + "/" + r.Name, Queue: "a"})
	}
	return in, policy.Plan{Node: "n1", Mode: policy.Reclaim, Victims: victims}
}

// TestProfilesShareEvictionsInFlight: the plugins of two profiles on one
// cache see each other's evictions in flight, so the second preemptor
// neither takes the first one's victims nor counts them as running.
func TestProfilesShareEvictionsInFlight(t *testing.T) {
	c := cachetest.NewForTest(t, nil, nil)
	a, recA := profile(c)
	b, recB := profile(c)
	running := []*v1.Pod{mkPod("v0"), mkPod("v1"), mkPod("v2"), mkPod("v3")}
	preA, preB := mkPod("pre-a"), mkPod("pre-b")

	in, decided := decide(running, 0, 1)
	planA, ok := a.start(preA, in, decided, running)
	if !ok {
		t.Fatal("profile a could not start its plan on an empty book")
	}
	if got := b.evictions.InFlight(running); len(got) != 2 || !got["uid-v0"] || !got["uid-v1"] {
		t.Errorf("profile b sees %v in flight, want v0 and v1", got)
	}
	in, decided = decide(running, 1, 2)
	if _, ok := b.start(preB, in, decided, running); ok {
		t.Error("profile b took v1, which profile a is evicting")
	}
	if got := a.evictions.InFlight(running); len(got) != 2 || got["uid-v2"] {
		t.Errorf("a refused plan left %v in flight, want v0 and v1 only", got)
	}

	// Only the preemptor's own Executor reports its evictions.
	b.evicted(context.Background(), preB.UID, running[0], nil)
	a.evicted(context.Background(), preA.UID, running[0], nil)
	if n := len(recB.Events); n != 0 {
		t.Errorf("profile b wrote %d Events for profile a's victim", n)
	}
	if got := <-recA.Events; !strings.Contains(got, "Reclaimed for ns/pre-a of queue \"b\"") {
		t.Errorf("profile a's Event for v0 = %q", got)
	}

	a.abandon(preA, planA)
	if _, ok := b.start(preB, in, decided, running); !ok {
		t.Error("profile b could not take v1 after profile a abandoned its plan")
	}
}

// TestProfilesRaceForVictims: two profiles planning at once for the same
// victims never both get one. Run with -race.
func TestProfilesRaceForVictims(t *testing.T) {
	const victims = 200
	c := cachetest.NewForTest(t, nil, nil)
	running := make([]*v1.Pod, victims)
	for i := range running {
		running[i] = mkPod(fmt.Sprint("v", i))
	}
	won := make([][victims]bool, 2)
	var wg sync.WaitGroup
	for p := range 2 {
		pl, _ := profile(c)
		wg.Go(func() {
			for i := range victims {
				pre := mkPod(fmt.Sprintf("pre-%d-%d", p, i))
				in, decided := decide(running, i)
				_, won[p][i] = pl.start(pre, in, decided, running)
				pl.evictions.InFlight(running)
			}
		})
	}
	wg.Wait()
	for i := range victims {
		if won[0][i] == won[1][i] {
			t.Errorf("victim v%d: profile 0 got it %v, profile 1 got it %v; want exactly one", i, won[0][i], won[1][i])
		}
	}
}
