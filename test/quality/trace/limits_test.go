package trace

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"
)

// limitKind classifies a job's limit by its factor over the run time, into
// the classes limitClasses states; "" when it fits none of them.
func limitKind(j Job) string {
	if j.Limit == 0 {
		return "none"
	}
	f := j.Limit.Seconds() / j.Run.Seconds()
	switch {
	case f == 1:
		return "exact"
	case f >= 1.5 && f <= 3:
		return "1.5-3x"
	case f > 3 && f <= 6:
		return "3-6x"
	case f == 10:
		return "10x"
	}
	return ""
}

// manyJobs is the jobs of traces of seeds 1-50: about 8,900 jobs, enough
// that a share's standard error (at most about half a percentage point) is
// well inside the tolerance.
func manyJobs() []Job {
	var jobs []Job
	for seed := uint64(1); seed <= 50; seed++ {
		jobs = append(jobs, Generate(DefaultParams(seed)).Jobs...)
	}
	return jobs
}

// Over many jobs each class's share is within 2 percentage points (4
// standard errors) of the stated one, every limit is in a stated class, and
// the factors within a class are spread over its range.
func TestLimitShares(t *testing.T) {
	jobs := manyJobs()
	want := map[string]float64{"none": 0.15, "exact": 0.10, "1.5-3x": 0.60, "3-6x": 0.10, "10x": 0.05}
	got := map[string]float64{}
	lo, hi := map[string]float64{}, map[string]float64{}
	for _, j := range jobs {
		k := limitKind(j)
		if k == "" {
			t.Fatalf("job %s runs %v, limit %v: in no stated class", j.Name(), j.Run, j.Limit)
		}
		got[k]++
		f := j.Limit.Seconds() / j.Run.Seconds()
		if _, ok := lo[k]; !ok || f < lo[k] {
			lo[k] = f
		}
		hi[k] = max(hi[k], f)
	}
	for k, w := range want {
		share := got[k] / float64(len(jobs))
		if math.Abs(share-w) > 0.02 {
			t.Errorf("%s: %.3f of %d jobs, want %.2f", k, share, len(jobs), w)
		}
	}
	// Uniform factors come close to both ends of their range.
	for k, r := range map[string][2]float64{"1.5-3x": {1.5, 3}, "3-6x": {3, 6}} {
		if lo[k] > r[0]+0.1 || hi[k] < r[1]-0.1 {
			t.Errorf("%s: factors in [%.2f, %.2f], want close to [%v, %v]", k, lo[k], hi[k], r[0], r[1])
		}
	}
}

// A declared limit never cuts a job short of its actual run time, and is
// whole seconds.
func TestLimitNotBelowRun(t *testing.T) {
	for _, j := range manyJobs() {
		if j.Limit != 0 && j.Limit < j.Run {
			t.Errorf("job %s runs %v, limit %v", j.Name(), j.Run, j.Limit)
		}
		if j.Limit%time.Second != 0 {
			t.Errorf("job %s: limit %v is not whole seconds", j.Name(), j.Limit)
		}
	}
}

// The same seed gives the same limits; another seed others.
func TestLimitsSeeded(t *testing.T) {
	limits := func(seed uint64) []time.Duration {
		var ls []time.Duration
		for _, j := range Generate(DefaultParams(seed)).Jobs {
			ls = append(ls, j.Limit)
		}
		return ls
	}
	if a, b := limits(3), limits(3); !reflect.DeepEqual(a, b) {
		t.Fatal("two traces of seed 3 declare different limits")
	}
	a, c := limits(3), limits(4)
	n := min(len(a), len(c))
	if reflect.DeepEqual(a[:n], c[:n]) {
		t.Fatal("seeds 3 and 4 declare the same limits")
	}
}

// The jobs' other fields are, seed for seed, those the generator gave
// before limits were added: testdata/jobs-seed*.golden was written by that
// generator, and must never be rewritten to make this test pass (a
// published trace would silently become another one).
func TestOldFieldsUnchanged(t *testing.T) {
	for _, seed := range []uint64{1, 2} {
		path := fmt.Sprintf("testdata/jobs-seed%d.golden", seed)
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, j := range Generate(DefaultParams(seed)).Jobs {
			fmt.Fprintf(&b, "%d %s %v %d %d %v\n", j.ID, j.Queue, j.Arrival, j.Size, j.MemberCPU, j.Run)
		}
		if got := b.String(); got != string(want) {
			t.Errorf("seed %d: jobs differ from %s", seed, path)
		}
	}
}

// A job without a limit writes no Limit, and a job written before limits
// existed reads back as one without.
func TestLimitJSON(t *testing.T) {
	b, err := json.Marshal(Job{ID: 1, Run: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "Limit") {
		t.Errorf("a job without a limit writes %s", b)
	}
	var j Job
	if err := json.Unmarshal([]byte(`{"ID":1,"Queue":"team-a","Size":2,"MemberCPU":1000,"Run":60000000000}`), &j); err != nil {
		t.Fatal(err)
	}
	if j.Limit != 0 || j.Run != time.Minute {
		t.Errorf("old job read as %+v", j)
	}
	b, _ = json.Marshal(Job{Run: time.Minute, Limit: 90 * time.Second})
	var back Job
	if err := json.Unmarshal(b, &back); err != nil || back.Limit != 90*time.Second {
		t.Errorf("limit 90s round-trips as %v (%v)", back.Limit, err)
	}
}
