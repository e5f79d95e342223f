package gang

import (
	"fmt"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

func TestBackoffFail(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	def := Backoff{Base: time.Second, Max: 30 * time.Second}
	tests := []struct {
		name      string
		b         Backoff
		s         BackoffState
		now       time.Time
		want      BackoffState
		wantStart bool
	}{
		{name: "first failure waits Base", b: def, now: t0, want: BackoffState{Failures: 1, Until: t0.Add(time.Second)}, wantStart: true},
		{name: "second failure doubles", b: def, s: BackoffState{Failures: 1, Until: t0}, now: t0, want: BackoffState{Failures: 2, Until: t0.Add(2 * time.Second)}, wantStart: true},
		{name: "fifth failure", b: def, s: BackoffState{Failures: 4, Until: t0.Add(-time.Hour)}, now: t0, want: BackoffState{Failures: 5, Until: t0.Add(16 * time.Second)}, wantStart: true},
		{name: "sixth failure is capped at Max", b: def, s: BackoffState{Failures: 5}, now: t0, want: BackoffState{Failures: 6, Until: t0.Add(30 * time.Second)}, wantStart: true},
		{name: "hundredth failure stays at Max", b: def, s: BackoffState{Failures: 99}, now: t0, want: BackoffState{Failures: 100, Until: t0.Add(30 * time.Second)}, wantStart: true},
		{name: "doubling reaching Max exactly", b: Backoff{Base: time.Second, Max: 4 * time.Second}, s: BackoffState{Failures: 2}, now: t0, want: BackoffState{Failures: 3, Until: t0.Add(4 * time.Second)}, wantStart: true},
		{name: "Base equal to Max", b: Backoff{Base: 5 * time.Second, Max: 5 * time.Second}, s: BackoffState{Failures: 3}, now: t0, want: BackoffState{Failures: 4, Until: t0.Add(5 * time.Second)}, wantStart: true},
		{name: "Base above Max is capped on the first failure", b: Backoff{Base: 10 * time.Second, Max: 5 * time.Second}, now: t0, want: BackoffState{Failures: 1, Until: t0.Add(5 * time.Second)}, wantStart: true},
		{name: "zero Base disables backoff", b: Backoff{Base: 0, Max: 30 * time.Second}, s: BackoffState{Failures: 3}, now: t0, want: BackoffState{Failures: 4, Until: t0}, wantStart: true},
		{name: "zero Base with a long failure history returns promptly", b: Backoff{Base: 0, Max: 30 * time.Second}, s: BackoffState{Failures: 1 << 62}, now: t0, want: BackoffState{Failures: 1<<62 + 1, Until: t0}, wantStart: true},
		{name: "a failure during the backoff changes nothing", b: def, s: BackoffState{Failures: 3, Until: t0.Add(4 * time.Second)}, now: t0.Add(time.Second), want: BackoffState{Failures: 3, Until: t0.Add(4 * time.Second)}},
		{name: "a failure one nanosecond before Until changes nothing", b: def, s: BackoffState{Failures: 1, Until: t0}, now: t0.Add(-1), want: BackoffState{Failures: 1, Until: t0}},
		{name: "a failure at Until starts the next backoff", b: def, s: BackoffState{Failures: 2, Until: t0}, now: t0, want: BackoffState{Failures: 3, Until: t0.Add(4 * time.Second)}, wantStart: true},
		{
			name: "Max near the largest duration does not overflow", b: Backoff{Base: 3 * time.Second, Max: math.MaxInt64},
			s: BackoffState{Failures: 40}, now: t0, want: BackoffState{Failures: 41, Until: t0.Add(math.MaxInt64)}, wantStart: true,
		},
		{
			name: "largest Base and Max", b: Backoff{Base: math.MaxInt64, Max: math.MaxInt64},
			s: BackoffState{Failures: 2}, now: t0, want: BackoffState{Failures: 3, Until: t0.Add(math.MaxInt64)}, wantStart: true,
		},
		{
			name: "doubling past half of the largest duration caps at Max", b: Backoff{Base: math.MaxInt64/2 + 1, Max: math.MaxInt64 - 1},
			s: BackoffState{Failures: 1}, now: t0, want: BackoffState{Failures: 2, Until: t0.Add(math.MaxInt64 - 1)}, wantStart: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, started := tt.b.Fail(tt.s, tt.now)
			if started != tt.wantStart || got.Failures != tt.want.Failures || !got.Until.Equal(tt.want.Until) {
				t.Errorf("Fail() = (%+v, %v), want (%+v, %v); backoff %v", got, started, tt.want, tt.wantStart, got.Until.Sub(tt.now))
			}
		})
	}

	t.Run("consecutive failures double up to Max", func(t *testing.T) {
		var s BackoffState
		now := t0
		want := []time.Duration{1, 2, 4, 8, 16, 30, 30, 30}
		for i, w := range want {
			var started bool
			s, started = def.Fail(s, now)
			if !started {
				t.Fatalf("failure %d did not start a backoff", i+1)
			}
			if got := s.Until.Sub(now); got != w*time.Second {
				t.Fatalf("failure %d: backoff %v, want %v", i+1, got, w*time.Second)
			}
			// The siblings rejected by the same release fail while it runs.
			if again, started := def.Fail(s, now.Add(time.Millisecond)); started || again != s {
				t.Fatalf("failure %d repeated during its backoff: (%+v, %v), want (%+v, false)", i+1, again, started, s)
			}
			now = s.Until
		}
	})
}

func TestMinRequest(t *testing.T) {
	cpu := resources.CPU
	tests := []struct {
		name    string
		spec    Spec
		members []resources.List
		want    resources.List
	}{
		{
			name:    "minResources wins over members",
			spec:    Spec{MinMember: 2, MinResources: resources.List{cpu: 4000, "memory": 1 << 30}},
			members: []resources.List{{cpu: 1}, {cpu: 1}, {cpu: 1}},
			want:    resources.List{cpu: 4000, "memory": 1 << 30},
		},
		{
			name:    "empty but set minResources wins over members",
			spec:    Spec{MinMember: 2, MinResources: resources.List{}},
			members: []resources.List{{cpu: 100}, {cpu: 100}},
			want:    resources.List{},
		},
		{
			name:    "sum of the minMember smallest, per resource independently",
			spec:    Spec{MinMember: 2},
			members: []resources.List{{cpu: 500, "memory": 1}, {cpu: 100, "memory": 9}, {cpu: 300, "memory": 5}},
			want:    resources.List{cpu: 400, "memory": 6},
		},
		{
			name:    "a member lacking a resource asks zero of it",
			spec:    Spec{MinMember: 2},
			members: []resources.List{{cpu: 100}, {cpu: 200, "gpu": 1}, {cpu: 300, "gpu": 2}},
			want:    resources.List{cpu: 300, "gpu": 1},
		},
		{
			name:    "a resource that enough members lack drops out",
			spec:    Spec{MinMember: 2},
			members: []resources.List{{cpu: 100}, {cpu: 200}, {cpu: 300, "gpu": 2}},
			want:    resources.List{cpu: 300},
		},
		{
			name:    "nil member request",
			spec:    Spec{MinMember: 2},
			members: []resources.List{nil, {cpu: 200}, {cpu: 300}},
			want:    resources.List{cpu: 200},
		},
		{
			name:    "all members when minMember equals their number",
			spec:    Spec{MinMember: 3},
			members: []resources.List{{cpu: 100}, {cpu: 200, "gpu": 1}, {cpu: 300}},
			want:    resources.List{cpu: 600, "gpu": 1},
		},
		{
			name:    "fewer members than minMember: each missing one counts as the smallest",
			spec:    Spec{MinMember: 8},
			members: []resources.List{{cpu: 100}, {cpu: 200}},
			want:    resources.List{cpu: 300 + 6*100},
		},
		{
			name:    "no members",
			spec:    Spec{MinMember: 3},
			members: nil,
			want:    resources.List{},
		},
		{
			name:    "minMember one takes the smallest",
			spec:    Spec{MinMember: 1},
			members: []resources.List{{cpu: 700}, {cpu: 200}, {cpu: 900}},
			want:    resources.List{cpu: 200},
		},
		{
			name:    "zero minMember needs nothing",
			spec:    Spec{MinMember: 0},
			members: []resources.List{{cpu: 700}},
			want:    resources.List{},
		},
		{
			name:    "negative minMember needs nothing",
			spec:    Spec{MinMember: -2},
			members: []resources.List{{cpu: 700}, {cpu: 100}},
			want:    resources.List{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := make([]resources.List, len(tt.members))
			for i, m := range tt.members {
				before[i] = m.Clone()
			}
			specBefore := tt.spec.MinResources.Clone()

			got := MinRequest(tt.spec, tt.members)
			if got == nil || !got.Equal(tt.want) {
				t.Fatalf("MinRequest() = %#v, want %#v", got, tt.want)
			}
			for i := range tt.members {
				if !tt.members[i].Equal(before[i]) {
					t.Errorf("member %d changed to %v, was %v", i, tt.members[i], before[i])
				}
			}
			got["written-by-test"] = 1
			if tt.spec.MinResources != nil && !reflect.DeepEqual(tt.spec.MinResources, specBefore) {
				t.Errorf("writing the result changed spec.MinResources to %v", tt.spec.MinResources)
			}
		})
	}
}

func TestUnschedulableMessage(t *testing.T) {
	const reason = "0/4 nodes are available: 4 Insufficient cpu."
	tests := []struct {
		name      string
		minMember int32
		c         Counts
		want      string
	}{
		{name: "doc example", minMember: 8, c: countsOf(concat(repeat(5, mReserved), repeat(3, mPending))...), want: "3/8 members unschedulable: " + reason},
		{name: "fewer active than minMember counts the missing ones", minMember: 4, c: countsOf(mReserved, mPending), want: "3/4 members unschedulable: " + reason},
		{name: "more active than minMember", minMember: 4, c: countsOf(repeat(10, mPending)...), want: "10/10 members unschedulable: " + reason},
		{name: "finished members are not counted", minMember: 2, c: countsOf(mPending, mSucceeded, mFailed, mFailed), want: "2/2 members unschedulable: " + reason},
		{name: "no members", minMember: 3, want: "3/3 members unschedulable: " + reason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := UnschedulableMessage(Spec{MinMember: tt.minMember}, tt.c, reason); got != tt.want {
				t.Errorf("UnschedulableMessage() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSummarizeReasons(t *testing.T) {
	tests := []struct {
		name    string
		nodes   int
		reasons map[string]int
		want    string
	}{
		{name: "no reasons", nodes: 4, reasons: nil, want: "0/4 nodes are available."},
		{name: "empty reasons", nodes: 0, reasons: map[string]int{}, want: "0/0 nodes are available."},
		{
			name:    "doc example, highest count first",
			nodes:   4,
			reasons: map[string]int{"node(s) had untolerated taint": 1, "Insufficient cpu": 3},
			want:    "0/4 nodes are available: 3 Insufficient cpu, 1 node(s) had untolerated taint.",
		},
		{
			name:    "equal counts sort by reason",
			nodes:   9,
			reasons: map[string]int{"b": 2, "a": 2, "c": 5},
			want:    "0/9 nodes are available: 5 c, 2 a, 2 b.",
		},
		{name: "single reason", nodes: 1, reasons: map[string]int{"Insufficient memory": 1}, want: "0/1 nodes are available: 1 Insufficient memory."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := 0; i < 5; i++ { // map order varies between calls
				if got := SummarizeReasons(tt.nodes, tt.reasons); got != tt.want {
					t.Fatalf("SummarizeReasons() = %q, want %q", got, tt.want)
				}
			}
		})
	}
}

func TestNoticeOf(t *testing.T) {
	const unsched = "3/3 members unschedulable: 0/4 nodes are available: 4 Insufficient cpu."
	spec3 := Spec{MinMember: 3}
	tests := []struct {
		name          string
		exists        bool
		spec          Spec
		c             Counts
		unschedulable string
		want          Notice
	}{
		{name: "missing PodGroup without active members", exists: false, c: countsOf(mSucceeded), want: Notice{}},
		{name: "missing PodGroup and no members at all", exists: false, want: Notice{}},
		{
			name: "missing PodGroup with active members", exists: false, c: countsOf(mPending),
			want: Notice{Warning: true, Reason: ReasonWaiting, Message: "waiting for PodGroup ns/pg"},
		},
		{
			name: "missing PodGroup beats a stale unschedulable reason", exists: false, c: countsOf(mPending), unschedulable: unsched,
			want: Notice{Warning: true, Reason: ReasonWaiting, Message: "waiting for PodGroup ns/pg"},
		},
		{
			name: "invalid spec", exists: true, spec: Spec{MinMember: 0}, c: countsOf(mPending),
			want: Notice{Warning: true, Reason: ReasonInvalidSpec, Message: "PodGroup ns/pg is invalid: spec.minMember is 0, must be at least 1"},
		},
		{
			name: "invalid spec without members", exists: true, spec: Spec{MinMember: -1},
			want: Notice{Warning: true, Reason: ReasonInvalidSpec, Message: "PodGroup ns/pg is invalid: spec.minMember is -1, must be at least 1"},
		},
		{
			name: "minMember bound", exists: true, spec: spec3, c: countsOf(repeat(3, mBound)...),
			want: Notice{Reason: ReasonScheduled, Message: "gang scheduled: minMember 3 bound"},
		},
		{
			name: "scheduled beats a stale unschedulable reason", exists: true, spec: spec3, c: countsOf(repeat(4, mRunning)...), unschedulable: unsched,
			want: Notice{Reason: ReasonScheduled, Message: "gang scheduled: minMember 3 bound"},
		},
		{
			name: "unschedulable", exists: true, spec: spec3, c: countsOf(repeat(3, mPending)...), unschedulable: unsched,
			want: Notice{Warning: true, Reason: ReasonUnschedulable, Message: unsched},
		},
		{
			name: "unschedulable beats waiting for members", exists: true, spec: spec3, c: countsOf(mPending), unschedulable: unsched,
			want: Notice{Warning: true, Reason: ReasonUnschedulable, Message: unsched},
		},
		{
			name: "waiting for members", exists: true, spec: spec3, c: countsOf(mPending, mPending),
			want: Notice{Reason: ReasonWaiting, Message: "waiting for members: 2/3"},
		},
		{
			name: "waiting for members when one failed", exists: true, spec: spec3, c: countsOf(mPending, mPending, mFailed),
			want: Notice{Reason: ReasonWaiting, Message: "waiting for members: 2/3"},
		},
		{name: "PodGroup without members", exists: true, spec: spec3, want: Notice{}},
		{name: "enough members, not yet bound", exists: true, spec: spec3, c: countsOf(repeat(3, mReserved)...), want: Notice{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NoticeOf("ns/pg", tt.exists, tt.spec, tt.c, tt.unschedulable); got != tt.want {
				t.Errorf("NoticeOf() = %+v, want %+v", got, tt.want)
			}
		})
	}

	// The cache writes an Event whenever reason+message change, so a message
	// that embedded moving counts would write one Event per member event.
	// "waiting for members: n/m" is the one deliberate exception (its count is
	// the information), checked separately below.
	t.Run("one state yields one notice while counts move", func(t *testing.T) {
		type state struct {
			name   string
			exists bool
			spec   Spec
			counts []Counts
			unsch  string
		}
		var waitingMembers, bound, missing []Counts
		for n := 1; n < 8; n++ {
			waitingMembers = append(waitingMembers, countsOf(repeat(n, mPending)...))
			missing = append(missing, countsOf(repeat(n, mPending)...))
		}
		for n := 8; n < 12; n++ {
			bound = append(bound, countsOf(concat(repeat(n, mRunning), repeat(n-8, mPending))...))
		}
		states := []state{
			{name: "waiting for PodGroup", exists: false, counts: missing},
			{name: "scheduled", exists: true, spec: Spec{MinMember: 8}, counts: bound},
			{name: "unschedulable", exists: true, spec: Spec{MinMember: 8}, counts: waitingMembers, unsch: unsched},
		}
		for _, s := range states {
			first := NoticeOf("ns/pg", s.exists, s.spec, s.counts[0], s.unsch)
			if first.Reason == "" {
				t.Fatalf("%s: no notice for %+v", s.name, s.counts[0])
			}
			for _, c := range s.counts[1:] {
				if got := NoticeOf("ns/pg", s.exists, s.spec, c, s.unsch); got != first {
					t.Errorf("%s: notice changed from %+v to %+v as counts moved to %+v", s.name, first, got, c)
				}
			}
		}
		for i, c := range waitingMembers {
			want := Notice{Reason: ReasonWaiting, Message: fmt.Sprintf("waiting for members: %d/8", i+1)}
			if got := NoticeOf("ns/pg", true, Spec{MinMember: 8}, c, ""); got != want {
				t.Errorf("waiting for members: got %+v, want %+v", got, want)
			}
		}
	})
}
