package gang

import (
	"errors"
	"math"
	"math/bits"
	"strings"
	"testing"
	"time"

	"github.com/caldera-sched/caldera/pkg/resources"
)

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
