package gang

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// Member states used across the tables.
var (
	mPending   = Member{Phase: PodPending}
	mReserved  = Member{Phase: PodPending, Reserved: true}
	mWaiting   = Member{Phase: PodPending, Reserved: true, Waiting: true}
	mBound     = Member{Phase: PodPending, Assigned: true}
	mRunning   = Member{Phase: PodRunning, Assigned: true}
	mSucceeded = Member{Phase: PodSucceeded, Assigned: true}
	mFailed    = Member{Phase: PodFailed, Assigned: true}
)

// countsOf adds every member once.
func countsOf(ms ...Member) Counts {
	var c Counts
	for _, m := range ms {
		c.Add(m, +1)
	}
	return c
}

// repeat returns n copies of m.
func repeat(n int, m Member) []Member {
	out := make([]Member, n)
	for i := range out {
		out[i] = m
	}
	return out
}

func concat(groups ...[]Member) []Member {
	var out []Member
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

func int32p(v int32) *int32 { return &v }

func TestPodPhaseTerminal(t *testing.T) {
	tests := []struct {
		phase PodPhase
		name  string
		want  bool
	}{
		{PodPending, "pending is not terminal", false},
		{PodRunning, "running is not terminal", false},
		{PodSucceeded, "succeeded is terminal", true},
		{PodFailed, "failed is terminal", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.phase.Terminal(); got != tt.want {
				t.Errorf("PodPhase(%d).Terminal() = %v, want %v", tt.phase, got, tt.want)
			}
		})
	}
}

func TestMemberPlaced(t *testing.T) {
	tests := []struct {
		name string
		m    Member
		want bool
	}{
		{name: "pending without node", m: mPending, want: false},
		{name: "pending waiting in permit without reservation", m: Member{Waiting: true}, want: false},
		{name: "reserved", m: mReserved, want: true},
		{name: "reserved and waiting", m: mWaiting, want: true},
		{name: "bound", m: mBound, want: true},
		{name: "bound and reserved", m: Member{Assigned: true, Reserved: true}, want: true},
		{name: "running on its node", m: mRunning, want: true},
		{name: "running without node", m: Member{Phase: PodRunning}, want: false},
		{name: "succeeded on its node holds nothing", m: mSucceeded, want: false},
		{name: "failed on its node holds nothing", m: mFailed, want: false},
		{name: "failed while reserved holds nothing", m: Member{Phase: PodFailed, Reserved: true}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.m.Placed(); got != tt.want {
				t.Errorf("%+v.Placed() = %v, want %v", tt.m, got, tt.want)
			}
		})
	}
}

func TestCountsAdd(t *testing.T) {
	tests := []struct {
		name string
		m    Member
		want Counts
	}{
		{name: "pending member", m: mPending, want: Counts{Members: 1, Active: 1, Pending: 1}},
		{name: "reserved member is placed", m: mReserved, want: Counts{Members: 1, Active: 1, Placed: 1}},
		{name: "member waiting in permit", m: mWaiting, want: Counts{Members: 1, Active: 1, Placed: 1, Waiting: 1}},
		{name: "bound member not yet running", m: mBound, want: Counts{Members: 1, Active: 1, Placed: 1, Bound: 1}},
		{name: "bound and still reserved counts once", m: Member{Assigned: true, Reserved: true}, want: Counts{Members: 1, Active: 1, Placed: 1, Bound: 1}},
		{name: "running member", m: mRunning, want: Counts{Members: 1, Active: 1, Placed: 1, Bound: 1, Running: 1}},
		{name: "succeeded member is bound but not active", m: mSucceeded, want: Counts{Members: 1, Bound: 1, Succeeded: 1}},
		{name: "failed member is bound but not active", m: mFailed, want: Counts{Members: 1, Bound: 1, Failed: 1}},
		{name: "failed reserved member is not placed", m: Member{Phase: PodFailed, Reserved: true}, want: Counts{Members: 1, Failed: 1}},
		{name: "succeeded unbound member", m: Member{Phase: PodSucceeded}, want: Counts{Members: 1, Succeeded: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Counts
			c.Add(tt.m, +1)
			if c != tt.want {
				t.Fatalf("after Add(+1): %+v, want %+v", c, tt.want)
			}
			c.Add(tt.m, +1)
			if twice := scale(tt.want, 2); c != twice {
				t.Fatalf("after two Add(+1): %+v, want %+v", c, twice)
			}
			c.Add(tt.m, -1)
			c.Add(tt.m, -1)
			if c != (Counts{}) {
				t.Fatalf("after removing both: %+v, want zero", c)
			}
		})
	}

	t.Run("every state satisfies the aggregate identities", func(t *testing.T) {
		for b := 0; b < 32; b++ {
			m := memberFromByte(byte(b))
			c := countsOf(m)
			checkCountsInvariants(t, c)
			if want := recount([]Member{m}); c != want {
				t.Errorf("%+v: Add gave %+v, want %+v", m, c, want)
			}
		}
	})

	t.Run("a member's lifecycle moves one count at a time", func(t *testing.T) {
		c := countsOf(mPending, mPending)
		steps := []struct {
			from, to Member
			want     Counts
		}{
			{mPending, mReserved, Counts{Members: 2, Active: 2, Pending: 1, Placed: 1}},
			{mReserved, mWaiting, Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Waiting: 1}},
			{mWaiting, mBound, Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Bound: 1}},
			{mBound, mRunning, Counts{Members: 2, Active: 2, Pending: 1, Placed: 1, Bound: 1, Running: 1}},
			{mRunning, mSucceeded, Counts{Members: 2, Active: 1, Pending: 1, Bound: 1, Succeeded: 1}},
		}
		for _, s := range steps {
			c.Add(s.from, -1)
			c.Add(s.to, +1)
			if c != s.want {
				t.Fatalf("after %+v -> %+v: %+v, want %+v", s.from, s.to, c, s.want)
			}
		}
	})
}

func scale(c Counts, k int) Counts { return plus(Counts{}, c, k) }

func TestSpecValidate(t *testing.T) {
	tests := []struct {
		name      string
		minMember int32
		wantErr   string
	}{
		{name: "one member is valid", minMember: 1},
		{name: "large gang is valid", minMember: math.MaxInt32},
		{name: "omitted minMember", minMember: 0, wantErr: "spec.minMember is 0, must be at least 1"},
		{name: "negative minMember", minMember: -3, wantErr: "spec.minMember is -3, must be at least 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Spec{MinMember: tt.minMember}.Validate()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Validate() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("Validate() = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestEnqueueable(t *testing.T) {
	tests := []struct {
		name    string
		exists  bool
		spec    Spec
		c       Counts
		wantOK  bool
		wantMsg string
	}{
		{name: "missing PodGroup", exists: false, spec: Spec{MinMember: 1}, c: countsOf(mPending), wantMsg: "waiting for PodGroup ns/pg"},
		{name: "invalid minMember", exists: true, spec: Spec{MinMember: 0}, c: countsOf(mPending), wantMsg: "PodGroup ns/pg is invalid: spec.minMember is 0, must be at least 1"},
		{name: "negative minMember", exists: true, spec: Spec{MinMember: -1}, c: countsOf(mPending), wantMsg: "PodGroup ns/pg is invalid: spec.minMember is -1, must be at least 1"},
		{name: "too few members", exists: true, spec: Spec{MinMember: 3}, c: countsOf(mPending, mPending), wantMsg: "waiting for members: 2/3"},
		{name: "no members yet", exists: true, spec: Spec{MinMember: 3}, wantMsg: "waiting for members: 0/3"},
		{name: "finished members do not count", exists: true, spec: Spec{MinMember: 3}, c: countsOf(mPending, mPending, mSucceeded, mFailed), wantMsg: "waiting for members: 2/3"},
		{name: "exactly minMember active", exists: true, spec: Spec{MinMember: 3}, c: countsOf(mPending, mReserved, mRunning), wantOK: true},
		{name: "more than minMember active", exists: true, spec: Spec{MinMember: 2}, c: countsOf(mPending, mPending, mPending), wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ok, msg := Enqueueable("ns/pg", tt.exists, tt.spec, tt.c)
			if ok != tt.wantOK || msg != tt.wantMsg {
				t.Errorf("Enqueueable() = (%v, %q), want (%v, %q)", ok, msg, tt.wantOK, tt.wantMsg)
			}
			if got := CanEnqueue(tt.exists, tt.spec, tt.c); got != tt.wantOK {
				t.Errorf("CanEnqueue() = %v, want %v", got, tt.wantOK)
			}
		})
	}
}

func TestReady(t *testing.T) {
	tests := []struct {
		name      string
		minMember int32
		placed    int
		want      bool
	}{
		{name: "none placed", minMember: 1, placed: 0, want: false},
		{name: "one short", minMember: 4, placed: 3, want: false},
		{name: "exactly minMember placed", minMember: 4, placed: 4, want: true},
		{name: "more than minMember placed", minMember: 4, placed: 6, want: true},
		{name: "single-member gang", minMember: 1, placed: 1, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Ready(Spec{MinMember: tt.minMember}, tt.placed); got != tt.want {
				t.Errorf("Ready(minMember=%d, placed=%d) = %v, want %v", tt.minMember, tt.placed, got, tt.want)
			}
		})
	}
}

func TestPermitTimeout(t *testing.T) {
	const def = 60 * time.Second
	tests := []struct {
		name    string
		timeout *int32
		want    time.Duration
	}{
		{name: "unset uses the default", timeout: nil, want: def},
		{name: "zero uses the default", timeout: int32p(0), want: def},
		{name: "negative uses the default", timeout: int32p(-5), want: def},
		{name: "positive is seconds", timeout: int32p(30), want: 30 * time.Second},
		{name: "one second", timeout: int32p(1), want: time.Second},
		{name: "largest int32 does not overflow", timeout: int32p(math.MaxInt32), want: math.MaxInt32 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PermitTimeout(Spec{MinMember: 1, ScheduleTimeoutSeconds: tt.timeout}, def); got != tt.want {
				t.Errorf("PermitTimeout() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPhaseOf(t *testing.T) {
	tests := []struct {
		name      string
		minMember int32
		members   []Member
		want      Phase
	}{
		{name: "no members", minMember: 3, want: PhasePending},
		{name: "all pending", minMember: 3, members: repeat(3, mPending), want: PhasePending},
		{name: "reserved but not bound", minMember: 3, members: repeat(3, mReserved), want: PhasePending},
		{name: "one short of bound", minMember: 3, members: concat(repeat(2, mBound), repeat(1, mPending)), want: PhasePending},
		{name: "minMember bound", minMember: 3, members: repeat(3, mBound), want: PhaseScheduling},
		{name: "bound with some running but not enough", minMember: 3, members: concat(repeat(2, mBound), repeat(1, mRunning)), want: PhaseScheduling},
		{name: "minMember running", minMember: 3, members: repeat(3, mRunning), want: PhaseRunning},
		{name: "running plus succeeded reach minMember", minMember: 3, members: concat(repeat(1, mRunning), repeat(2, mSucceeded)), want: PhaseRunning},
		{name: "minMember succeeded but one still running", minMember: 3, members: concat(repeat(1, mRunning), repeat(3, mSucceeded)), want: PhaseRunning},
		{name: "minMember succeeded none running", minMember: 3, members: repeat(3, mSucceeded), want: PhaseFinished},
		{name: "finished wins over failures", minMember: 3, members: concat(repeat(3, mSucceeded), repeat(2, mFailed)), want: PhaseFinished},
		{name: "finished with pending leftovers", minMember: 2, members: concat(repeat(2, mSucceeded), repeat(1, mPending)), want: PhaseFinished},
		{name: "failures leave too few members", minMember: 3, members: concat(repeat(2, mRunning), repeat(2, mFailed)), want: PhaseFailed},
		{name: "single failure in a one-member gang", minMember: 1, members: repeat(1, mFailed), want: PhaseFailed},
		{name: "failure with enough left running", minMember: 3, members: concat(repeat(3, mRunning), repeat(1, mFailed)), want: PhaseRunning},
		{name: "failure with enough left counting succeeded members", minMember: 3, members: concat(repeat(1, mRunning), repeat(2, mSucceeded), repeat(1, mFailed)), want: PhaseRunning},
		{name: "failure with enough left bound", minMember: 3, members: concat(repeat(3, mBound), repeat(1, mFailed)), want: PhaseScheduling},
		{name: "failure with enough left pending", minMember: 3, members: concat(repeat(3, mPending), repeat(1, mFailed)), want: PhasePending},
		{name: "bound counts finished members", minMember: 3, members: concat(repeat(1, mBound), repeat(1, mSucceeded), repeat(1, mRunning)), want: PhaseScheduling},
		{name: "single-member gang running", minMember: 1, members: repeat(1, mRunning), want: PhaseRunning},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := countsOf(tt.members...)
			if got := PhaseOf(Spec{MinMember: tt.minMember}, c); got != tt.want {
				t.Errorf("PhaseOf(minMember=%d, %+v) = %q, want %q", tt.minMember, c, got, tt.want)
			}
		})
	}
}

func TestBackoffStateActive(t *testing.T) {
	t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name string
		s    BackoffState
		now  time.Time
		want bool
	}{
		{name: "zero state is never active", s: BackoffState{}, now: t0, want: false},
		{name: "before Until", s: BackoffState{Until: t0.Add(time.Second)}, now: t0, want: true},
		{name: "one nanosecond before Until", s: BackoffState{Until: t0}, now: t0.Add(-1), want: true},
		{name: "at Until it has ended", s: BackoffState{Until: t0}, now: t0, want: false},
		{name: "after Until", s: BackoffState{Until: t0}, now: t0.Add(time.Minute), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Active(tt.now); got != tt.want {
				t.Errorf("Active() = %v, want %v", got, tt.want)
			}
		})
	}
}

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

// memberFromByte maps the low five bits of b to a member state: two bits of
// phase and one bit each for Assigned, Reserved and Waiting.
func memberFromByte(b byte) Member {
	return Member{Phase: PodPhase(b & 3), Assigned: b&4 != 0, Reserved: b&8 != 0, Waiting: b&16 != 0}
}

func membersFromBytes(data []byte) []Member {
	ms := make([]Member, len(data))
	for i, b := range data {
		ms[i] = memberFromByte(b)
	}
	return ms
}

// recount computes Counts from scratch from the field comments, independently
// of Add's incremental bookkeeping.
func recount(ms []Member) Counts {
	var c Counts
	for _, m := range ms {
		finished := m.Phase == PodSucceeded || m.Phase == PodFailed
		holdsNode := m.Assigned || m.Reserved
		c.Members++
		if !finished {
			c.Active++
		}
		if !finished && !holdsNode {
			c.Pending++
		}
		if !finished && holdsNode {
			c.Placed++
		}
		if m.Waiting {
			c.Waiting++
		}
		if m.Assigned {
			c.Bound++
		}
		if m.Phase == PodRunning {
			c.Running++
		}
		if m.Phase == PodSucceeded {
			c.Succeeded++
		}
		if m.Phase == PodFailed {
			c.Failed++
		}
	}
	return c
}

func checkCountsInvariants(t *testing.T, c Counts) {
	t.Helper()
	var errs []error
	if c.Members != c.Active+c.Succeeded+c.Failed {
		errs = append(errs, errors.New("Members != Active+Succeeded+Failed"))
	}
	if c.Active != c.Pending+c.Placed {
		errs = append(errs, errors.New("Active != Pending+Placed"))
	}
	for name, v := range map[string]int{
		"Members": c.Members, "Active": c.Active, "Pending": c.Pending, "Waiting": c.Waiting, "Placed": c.Placed,
		"Bound": c.Bound, "Running": c.Running, "Succeeded": c.Succeeded, "Failed": c.Failed,
	} {
		if v < 0 {
			errs = append(errs, errors.New(name+" is negative"))
		}
	}
	if c.Waiting > c.Members || c.Bound > c.Members {
		errs = append(errs, errors.New("Waiting or Bound exceeds Members"))
	}
	if c.Running > c.Active {
		errs = append(errs, errors.New("Running exceeds Active"))
	}
	if len(errs) > 0 {
		t.Fatalf("counts %+v break invariants: %v", c, errors.Join(errs...))
	}
}

func FuzzCountsAdd(f *testing.F) {
	f.Add([]byte{}, uint8(0))
	f.Add([]byte{0, 8, 8 | 16, 4, 4 | 1, 4 | 2, 4 | 3}, uint8(3))
	f.Add([]byte{31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16}, uint8(200))
	f.Add([]byte(strings.Repeat("\x05", 40)), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, rotate uint8) {
		if len(data) > 256 {
			data = data[:256]
		}
		ms := membersFromBytes(data)
		// want tracks recount's from-scratch answer, one member at a time.
		var c, want Counts
		for i, m := range ms {
			c.Add(m, +1)
			want = plus(want, recount([]Member{m}), +1)
			checkCountsInvariants(t, c)
			if c != want {
				t.Fatalf("after adding %d members: %+v, want %+v", i+1, c, want)
			}
		}
		if all := recount(ms); c != all {
			t.Fatalf("after adding every member: %+v, want %+v", c, all)
		}
		// Remove the same states in another order: the counts are a multiset
		// function, so they must track the members still present and end at zero.
		n := len(ms)
		removed := make([]bool, n)
		for i := 0; i < n; i++ {
			j := (int(rotate) + i*7) % n
			for removed[j] {
				j = (j + 1) % n
			}
			removed[j] = true
			c.Add(ms[j], -1)
			want = plus(want, recount([]Member{ms[j]}), -1)
			checkCountsInvariants(t, c)
			if c != want {
				t.Fatalf("after removing %d members: %+v, want %+v", i+1, c, want)
			}
		}
		if c != (Counts{}) {
			t.Fatalf("after removing every member: %+v, want zero", c)
		}
	})
}

// plus returns a + k*b field by field.
func plus(a, b Counts, k int) Counts {
	return Counts{
		Members: a.Members + k*b.Members, Active: a.Active + k*b.Active, Pending: a.Pending + k*b.Pending,
		Waiting: a.Waiting + k*b.Waiting, Placed: a.Placed + k*b.Placed, Bound: a.Bound + k*b.Bound,
		Running: a.Running + k*b.Running, Succeeded: a.Succeeded + k*b.Succeeded, Failed: a.Failed + k*b.Failed,
	}
}

// wantBackoff is the documented backoff of the n-th consecutive failure,
// min(Max, Base*2^(n-1)), computed without overflow. Base and Max are >= 0.
func wantBackoff(b Backoff, n int) time.Duration {
	if b.Base == 0 || b.Max <= 0 {
		return min(b.Base, b.Max)
	}
	if n-1 >= 63 {
		return b.Max
	}
	hi, lo := bits.Mul64(uint64(b.Base), uint64(1)<<(n-1))
	if hi != 0 || lo > uint64(b.Max) {
		return b.Max
	}
	return time.Duration(lo)
}

func FuzzBackoffFail(f *testing.F) {
	f.Add(uint64(time.Second), uint64(30*time.Second), int64(0), uint16(0), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint64(time.Second), uint64(30*time.Second), int64(0), uint16(0), []byte{0, 0x80, 5, 0xff, 0, 0x81})
	f.Add(uint64(0), uint64(30*time.Second), int64(-1), uint16(1000), []byte{0, 1, 0x80})
	f.Add(uint64(10*time.Second), uint64(5*time.Second), int64(12345), uint16(0), []byte{0, 0})
	f.Add(uint64(3*time.Second), uint64(math.MaxInt64), int64(0), uint16(30), []byte{0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(uint64(math.MaxInt64/2+1), uint64(math.MaxInt64-1), int64(0), uint16(0), []byte{0, 0})
	f.Add(uint64(1), uint64(1), int64(math.MaxInt64), uint16(65535), []byte{0x7f, 0xff})
	f.Fuzz(func(t *testing.T, base, max uint64, start int64, failures uint16, steps []byte) {
		// Durations the plugin can be configured with are never negative.
		b := Backoff{Base: time.Duration(base &^ (1 << 63)), Max: time.Duration(max &^ (1 << 63))}
		if len(steps) > 100 {
			steps = steps[:100]
		}
		now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(start))
		s := BackoffState{Failures: int(failures)}
		var failedAt time.Time // when the current backoff started
		prev := time.Duration(-1)
		for i, step := range steps {
			if step&0x80 != 0 && s.Active(failedAt) {
				// A sibling fails while the backoff runs: nothing changes.
				during := s.Until.Add(-time.Duration(1 + int(step&0x7f)))
				if during.Before(failedAt) {
					during = failedAt
				}
				got, started := b.Fail(s, during)
				if started || got != s {
					t.Fatalf("step %d: Fail during backoff = (%+v, %v), want (%+v, false)", i, got, started, s)
				}
				continue
			}
			// The next failure comes at or after the previous backoff ended.
			if now.Before(s.Until) {
				now = s.Until
			}
			now = now.Add(time.Duration(step&0x7f) * time.Millisecond)
			got, started := b.Fail(s, now)
			if !started {
				t.Fatalf("step %d: Fail at %v after Until %v did not start a backoff", i, now, s.Until)
			}
			if got.Failures != s.Failures+1 {
				t.Fatalf("step %d: Failures = %d, want %d", i, got.Failures, s.Failures+1)
			}
			d := got.Until.Sub(now)
			if d > b.Max {
				t.Fatalf("step %d: backoff %v exceeds Max %v (%+v)", i, d, b.Max, b)
			}
			if d < min(b.Base, b.Max) {
				t.Fatalf("step %d: backoff %v below Base %v (%+v)", i, d, b.Base, b)
			}
			if want := wantBackoff(b, got.Failures); d != want {
				t.Fatalf("step %d: failure %d backs off %v, want %v (%+v)", i, got.Failures, d, want, b)
			}
			if prev >= 0 {
				if d < prev {
					t.Fatalf("step %d: backoff shrank from %v to %v (%+v)", i, prev, d, b)
				}
				if want := wantBackoff(Backoff{Base: prev, Max: b.Max}, 2); d != want {
					t.Fatalf("step %d: backoff %v after %v, want doubling capped at Max: %v", i, d, prev, want)
				}
			}
			prev, s, failedAt = d, got, now
		}
	})
}

// subsetMin is, per name, the smallest sum over every k-subset of members.
func subsetMin(members []resources.List, k int, names []string) resources.List {
	out := resources.List{}
	for _, n := range names {
		best := int64(math.MaxInt64)
		for mask := 0; mask < 1<<len(members); mask++ {
			if bits.OnesCount(uint(mask)) != k {
				continue
			}
			var sum int64
			for i, m := range members {
				if mask&(1<<i) != 0 {
					sum += m[n]
				}
			}
			best = min(best, sum)
		}
		if best != 0 && best != math.MaxInt64 {
			out[n] = best
		}
	}
	return out
}

var fuzzResourceNames = []string{resources.CPU, "memory", "nvidia.com/gpu"}

// decodeMembers reads up to 8 members of three bytes each, one per resource
// name; 0xff leaves the name out of the member's list.
func decodeMembers(data []byte) []resources.List {
	var out []resources.List
	for len(data) >= len(fuzzResourceNames) && len(out) < 8 {
		l := resources.List{}
		for i, n := range fuzzResourceNames {
			if data[i] != 0xff {
				l[n] = int64(data[i]) * 1000
			}
		}
		out = append(out, l)
		data = data[len(fuzzResourceNames):]
	}
	return out
}

func FuzzMinRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0xff, 1, 9, 0xff, 3, 5, 2}, int8(2), false, []byte{})
	f.Add([]byte{5, 1, 0, 1, 9, 0, 3, 5, 2, 0, 0, 0}, int8(3), false, []byte{})
	f.Add([]byte{1, 2, 3}, int8(5), false, []byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6}, int8(-1), false, []byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6}, int8(0), false, []byte{})
	f.Add([]byte{1, 2, 3, 4, 5, 6}, int8(2), true, []byte{40, 0xff, 2})
	f.Fuzz(func(t *testing.T, data []byte, minMember int8, setMinResources bool, minRes []byte) {
		members := decodeMembers(data)
		names := fuzzResourceNames
		spec := Spec{MinMember: int32(minMember)}
		if setMinResources {
			spec.MinResources = resources.List{}
			if mr := decodeMembers(minRes); len(mr) > 0 {
				spec.MinResources = mr[0]
			}
			specBefore := spec.MinResources.Clone()
			got := MinRequest(spec, members)
			if !got.Equal(spec.MinResources) {
				t.Fatalf("MinRequest = %v, want minResources %v", got, spec.MinResources)
			}
			got.Add(resources.List{resources.CPU: 1, "extra": 1})
			if !spec.MinResources.Equal(specBefore) || len(spec.MinResources) != len(specBefore) {
				t.Fatalf("writing the result changed minResources to %v", spec.MinResources)
			}
			return
		}

		k := min(max(int(minMember), 0), len(members))
		missing := max(int(minMember), 0) - k
		got := MinRequest(spec, members)
		want := subsetMin(members, k, names)
		if len(members) > 0 && missing > 0 {
			// Each missing member counts as the smallest known one.
			for _, n := range names {
				if v := want[n] + int64(missing)*subsetMin(members, 1, names)[n]; v != 0 {
					want[n] = v
				}
			}
		}
		if !got.Equal(want) {
			t.Fatalf("MinRequest(minMember=%d, %v) = %v, want the smallest %d-subset sums plus %d smallest members %v", minMember, members, got, k, missing, want)
		}
		// A lower bound of every minMember-subset's need (with all members
		// known).
		for mask := 0; missing == 0 && mask < 1<<len(members); mask++ {
			if bits.OnesCount(uint(mask)) != k {
				continue
			}
			for _, n := range names {
				var sum int64
				for i, m := range members {
					if mask&(1<<i) != 0 {
						sum += m[n]
					}
				}
				if got[n] > sum {
					t.Fatalf("MinRequest[%s] = %d exceeds subset %b's %d", n, got[n], mask, sum)
				}
			}
		}
		// Monotone in minMember.
		next := MinRequest(Spec{MinMember: int32(minMember) + 1}, members)
		for _, n := range names {
			if next[n] < got[n] {
				t.Fatalf("MinRequest[%s] fell from %d to %d as minMember grew from %d", n, got[n], next[n], minMember)
			}
		}
	})
}

func FuzzPhaseOf(f *testing.F) {
	f.Add([]byte{}, int32(1))
	f.Add([]byte{5, 5, 5}, int32(3))
	f.Add([]byte{6, 6, 6, 5}, int32(3))
	f.Add([]byte{5, 5, 7, 7}, int32(3))
	f.Add([]byte{4, 4, 4}, int32(3))
	f.Add([]byte{0, 6, 6}, int32(0))
	f.Add([]byte{0, 6, 6}, int32(-7))
	f.Add([]byte{0, 6, 6}, int32(math.MaxInt32))
	f.Fuzz(func(t *testing.T, data []byte, minMember int32) {
		c := countsOf(membersFromBytes(data)...)
		spec := Spec{MinMember: minMember}
		mm := int(minMember)
		p := PhaseOf(spec, c)
		if p != PhaseOf(spec, c) {
			t.Fatal("PhaseOf is not deterministic")
		}
		switch p {
		case PhaseFinished:
			if c.Succeeded < mm || c.Running != 0 {
				t.Fatalf("Finished with %+v, minMember %d", c, mm)
			}
		case PhaseFailed:
			if c.Failed == 0 || c.Members-c.Failed >= mm {
				t.Fatalf("Failed with %+v, minMember %d", c, mm)
			}
		case PhaseRunning:
			if c.Running == 0 || c.Running+c.Succeeded < mm {
				t.Fatalf("Running with %+v, minMember %d", c, mm)
			}
		case PhaseScheduling:
			if c.Bound < mm {
				t.Fatalf("Scheduling with %+v, minMember %d", c, mm)
			}
		case PhasePending:
			if c.Bound >= mm {
				t.Fatalf("Pending with %d bound of minMember %d", c.Bound, mm)
			}
		default:
			t.Fatalf("PhaseOf = %q, not a known phase", p)
		}
		// A group whose counts reach minMember is never reported as waiting to start.
		if c.Running > 0 && c.Running+c.Succeeded >= mm && (p == PhasePending || p == PhaseScheduling) {
			t.Fatalf("%q with %+v, minMember %d, but enough members are running", p, c, mm)
		}
	})
}

// TestReadyCounts: succeeded members make up minMember only for the last
// members of a gang (fewer than minMember left unfinished); failed ones
// never count.
func TestReadyCounts(t *testing.T) {
	tests := []struct {
		name                              string
		active, placed, succeeded, failed int
		want                              bool
	}{
		{name: "minimum placed", active: 4, placed: 3, want: true},
		{name: "tail of an elastic gang whose minimum succeeded", active: 1, placed: 1, succeeded: 3, want: true},
		{name: "tail member placed before its siblings", active: 2, placed: 1, succeeded: 3, want: true},
		{name: "enough left unfinished: succeeded hold no node", active: 3, placed: 2, succeeded: 1, want: false},
		{name: "short", active: 1, placed: 1, succeeded: 1, want: false},
		{name: "failed members do not count", active: 1, placed: 1, failed: 3, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Counts{Active: tt.active, Placed: tt.placed, Succeeded: tt.succeeded, Failed: tt.failed}
			if got := ReadyCounts(Spec{MinMember: 3}, c); got != tt.want {
				t.Errorf("ReadyCounts = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTasksReady(t *testing.T) {
	for _, tc := range []struct {
		name   string
		spec   Spec
		placed map[string]int
		ok     bool
		short  string
	}{
		{"no tasks", Spec{MinMember: 4}, nil, true, ""},
		{"workers without their master", Spec{MinMember: 4, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			map[string]int{"worker": 4}, false, "master"},
		{"master and three workers", Spec{MinMember: 4, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			map[string]int{"master": 1, "worker": 3}, true, ""},
		{"the first short task by name", Spec{MinMember: 3, MinTaskMember: map[string]int32{"ps": 1, "b": 1, "worker": 1}},
			map[string]int{}, false, "b"},
		{"a task of minimum 0 holds nothing", Spec{MinMember: 1, MinTaskMember: map[string]int32{"master": 1, "worker": 0}},
			map[string]int{"master": 1}, true, ""},
		// Volcano skips the check when minAvailable is below the tasks'
		// sum: the job may start without every task whole.
		{"elastic: minMember below the tasks' sum", Spec{MinMember: 2, MinTaskMember: map[string]int32{"master": 1, "worker": 3}},
			map[string]int{"worker": 2}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, short := TasksReady(tc.spec, tc.placed)
			if ok != tc.ok || short != tc.short {
				t.Errorf("TasksReady = %v, %q; want %v, %q", ok, short, tc.ok, tc.short)
			}
		})
	}
}
