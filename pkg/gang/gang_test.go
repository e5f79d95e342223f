package gang

import (
	"math"
	"testing"
	"time"
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
