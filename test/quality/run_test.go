package quality

import (
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/runlimit"
	"github.com/caldera-sched/caldera/test/quality/trace"
)

// TestPodLimit: a pod carries its job's declared limit, compressed like its
// run time and rounded up to whole seconds, never below the run time the
// runner gives it; a job without a limit has no annotation; and every
// profile's pods say the same.
func TestPodLimit(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		tr := trace.Generate(trace.DefaultParams(seed))
		for _, c := range []float64{1, 3, 4, 7.5} {
			limited := 0
			for _, j := range tr.Jobs {
				js := &jobState{job: j, ns: j.Queue}
				var first string
				for i, p := range profiles() {
					r := &runner{p: p, tr: tr, opts: options{compression: c}}
					pod := r.podFor(js, j.Name()+"-0")
					v, has := pod.Annotations[runlimit.Annotation]
					if i == 0 {
						first = v
					} else if v != first {
						t.Fatalf("seed %d, compression %v, %s: profile %s annotates %q, %s %q", seed, c, j.Name(), p.name, v, profiles()[0].name, first)
					}
					if j.Limit == 0 {
						if has {
							t.Fatalf("seed %d, %s: no limit declared, annotation %q", seed, j.Name(), v)
						}
						continue
					}
					lim, err := runlimit.Of(pod, nil)
					if err != nil || lim.Source != runlimit.PodAnnotation {
						t.Fatalf("seed %d, %s: annotation %q reads as %v, %v", seed, j.Name(), v, lim, err)
					}
					run, err := time.ParseDuration(pod.Annotations[runTimeAnnotation])
					if err != nil {
						t.Fatal(err)
					}
					got := time.Duration(lim.Seconds) * time.Second
					if got < run {
						t.Fatalf("seed %d, compression %v, %s: limit %v below the run time %v", seed, c, j.Name(), got, run)
					}
					// Rounded up, not further: a second less is below the
					// compressed limit.
					if want := float64(j.Limit) / c; float64(got) < want || float64(got-time.Second) >= want {
						t.Fatalf("seed %d, compression %v, %s: limit %v for %v compressed %vx", seed, c, j.Name(), got, j.Limit, c)
					}
				}
				if j.Limit > 0 {
					limited++
				}
			}
			if limited == 0 || limited == len(tr.Jobs) {
				t.Fatalf("seed %d: %d of %d jobs limited", seed, limited, len(tr.Jobs))
			}
		}
	}
}

func TestScaledLimitSeconds(t *testing.T) {
	for _, tc := range []struct {
		limit time.Duration
		c     float64
		want  int64
	}{
		{0, 4, 0},
		{120 * time.Second, 4, 30},
		{121 * time.Second, 4, 31},
		{1 * time.Second, 4, 1},
		{7 * time.Second, 1, 7},
	} {
		if got := scaledLimitSeconds(tc.limit, tc.c); got != tc.want {
			t.Errorf("scaledLimitSeconds(%v, %v) = %d, want %d", tc.limit, tc.c, got, tc.want)
		}
	}
}
