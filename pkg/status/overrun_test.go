package status

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/events"
	"k8s.io/component-base/metrics/testutil"
)

// overrunSource hands out its evictions once and records what came back.
type overrunSource struct {
	evs      []OverrunEviction
	finished []error
	rec      *events.FakeRecorder
}

func (s *overrunSource) OverrunEvictions() []OverrunEviction {
	evs := s.evs
	s.evs = nil
	return evs
}

func (s *overrunSource) FinishOverrun(_ OverrunEviction, err error) bool {
	s.finished = append(s.finished, err)
	return true
}

func (s *overrunSource) Recorder(string) events.EventRecorderLogger { return s.rec }

// An overrun eviction deletes the pod, tells it with a Warning Event and
// counts in caldera_overrun_evictions_total under the pod's queue.
func TestEvictOverrunsCounts(t *testing.T) {
	RegisterMetrics()
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "short", UID: "uid-short"}}
	cs := fake.NewSimpleClientset(pod)
	src := &overrunSource{
		evs: []OverrunEviction{{Pod: pod, Queue: "team-a", Message: "ran 60s past its run-time limit"}},
		rec: events.NewFakeRecorder(10),
	}
	before, _ := testutil.GetCounterMetricValue(overrunEvictions.WithLabelValues("team-a"))
	EvictOverruns(context.Background(), cs, src)
	if len(src.finished) != 1 || src.finished[0] != nil {
		t.Fatalf("finished %v, want one eviction made", src.finished)
	}
	if _, err := cs.CoreV1().Pods("ns").Get(context.Background(), "short", metav1.GetOptions{}); err == nil {
		t.Errorf("pod still exists after its eviction")
	}
	if after, _ := testutil.GetCounterMetricValue(overrunEvictions.WithLabelValues("team-a")); after != before+1 {
		t.Errorf("caldera_overrun_evictions_total{queue=team-a} went %v -> %v, want +1", before, after)
	}
	select {
	case ev := <-src.rec.Events:
		if want := "Warning " + ReasonOverranRunLimit; len(ev) < len(want) || ev[:len(want)] != want {
			t.Errorf("Event %q, want a %s", ev, want)
		}
	default:
		t.Errorf("no Event about the evicted pod")
	}
}
