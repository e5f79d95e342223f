package resources

import (
	"encoding/binary"
	"math"
	"reflect"
	"sort"
	"testing"
)

func TestClone(t *testing.T) {
	tests := []struct {
		name string
		in   List
	}{
		{name: "nil list clones to an empty writable list", in: nil},
		{name: "empty list", in: List{}},
		{name: "several names including zero and negative", in: List{CPU: 1500, "memory": 1 << 30, "gpu": 0, "debt": -3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orig := copyMap(tt.in)
			got := tt.in.Clone()
			if got == nil {
				t.Fatal("Clone() = nil, want a writable list")
			}
			if !reflect.DeepEqual(map[string]int64(got), nonNil(orig)) {
				t.Fatalf("Clone() = %v, want %v", got, orig)
			}
			got["written-by-test"] = 7
			got[CPU] = -99
			if !reflect.DeepEqual(copyMap(tt.in), orig) {
				t.Fatalf("writing the clone changed the original: %v, want %v", tt.in, orig)
			}
		})
	}
}

func TestAdd(t *testing.T) {
	tests := []struct {
		name string
		l, o List
		want List
	}{
		{name: "nil plus nil is empty", l: nil, o: nil, want: List{}},
		{name: "nil plus list allocates a copy", l: nil, o: List{CPU: 100}, want: List{CPU: 100}},
		{name: "list plus nil is unchanged", l: List{CPU: 100}, o: nil, want: List{CPU: 100}},
		{name: "overlapping names are summed", l: List{CPU: 100, "memory": 10}, o: List{CPU: 250, "memory": 5}, want: List{CPU: 350, "memory": 15}},
		{name: "disjoint names are merged", l: List{CPU: 100}, o: List{"gpu": 2}, want: List{CPU: 100, "gpu": 2}},
		{name: "negative amounts subtract", l: List{CPU: 100}, o: List{CPU: -300}, want: List{CPU: -200}},
		{name: "zero amounts keep the name", l: List{}, o: List{"gpu": 0}, want: List{"gpu": 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oBefore := copyMap(tt.o)
			got := tt.l.Add(tt.o)
			if !reflect.DeepEqual(map[string]int64(got), map[string]int64(tt.want)) {
				t.Fatalf("Add() = %v, want %v", got, tt.want)
			}
			if tt.l != nil && !sameMap(got, tt.l) {
				t.Error("Add() on a non-nil list returned a different map, want in-place update")
			}
			if !reflect.DeepEqual(copyMap(tt.o), oBefore) {
				t.Errorf("Add() modified its argument: %v, want %v", tt.o, oBefore)
			}
		})
	}
	t.Run("adding a list to itself doubles it", func(t *testing.T) {
		l := List{CPU: 3, "memory": -4}
		if got, want := l.Add(l), (List{CPU: 6, "memory": -8}); !reflect.DeepEqual(got, want) {
			t.Fatalf("l.Add(l) = %v, want %v", got, want)
		}
	})
}

func TestSub(t *testing.T) {
	tests := []struct {
		name string
		l, o List
		want List
	}{
		{name: "nil minus nil is empty", l: nil, o: nil, want: List{}},
		{name: "nil minus list allocates the negation", l: nil, o: List{CPU: 100}, want: List{CPU: -100}},
		{name: "list minus nil is unchanged", l: List{CPU: 100}, o: nil, want: List{CPU: 100}},
		{name: "overlapping names are subtracted", l: List{CPU: 500, "memory": 10}, o: List{CPU: 200, "memory": 10}, want: List{CPU: 300, "memory": 0}},
		{name: "amounts may go negative", l: List{CPU: 100}, o: List{CPU: 300, "gpu": 1}, want: List{CPU: -200, "gpu": -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oBefore := copyMap(tt.o)
			got := tt.l.Sub(tt.o)
			if !reflect.DeepEqual(map[string]int64(got), map[string]int64(tt.want)) {
				t.Fatalf("Sub() = %v, want %v", got, tt.want)
			}
			if tt.l != nil && !sameMap(got, tt.l) {
				t.Error("Sub() on a non-nil list returned a different map, want in-place update")
			}
			if !reflect.DeepEqual(copyMap(tt.o), oBefore) {
				t.Errorf("Sub() modified its argument: %v, want %v", tt.o, oBefore)
			}
		})
	}
}

func TestLess(t *testing.T) {
	tests := []struct {
		name string
		l, o List
		want List
	}{
		{name: "nil less anything is empty", l: nil, o: List{CPU: 100}, want: List{}},
		{name: "list less nil is a copy", l: List{CPU: 100}, o: nil, want: List{CPU: 100}},
		{name: "taken part is subtracted", l: List{CPU: 500, "memory": 10}, o: List{CPU: 200}, want: List{CPU: 300, "memory": 10}},
		{name: "never below zero", l: List{CPU: 100}, o: List{CPU: 300}, want: List{CPU: 0}},
		{name: "names only in o stay absent", l: List{CPU: 100}, o: List{"gpu": 1}, want: List{CPU: 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lBefore := copyMap(tt.l)
			got := tt.l.Less(tt.o)
			if !reflect.DeepEqual(map[string]int64(got), map[string]int64(tt.want)) {
				t.Fatalf("Less() = %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(copyMap(tt.l), lBefore) {
				t.Errorf("Less() modified its receiver: %v, want %v", tt.l, lBefore)
			}
		})
	}
}

func TestExceedingAndFitsIn(t *testing.T) {
	tests := []struct {
		name      string
		l, cap    List
		exceeding []string
	}{
		{name: "nil request fits nil capacity", l: nil, cap: nil},
		{name: "request equal to capacity fits", l: List{CPU: 1000, "memory": 64}, cap: List{CPU: 1000, "memory": 64}},
		{name: "request below capacity fits", l: List{CPU: 999}, cap: List{CPU: 1000}},
		{name: "one millicore over does not fit", l: List{CPU: 1001}, cap: List{CPU: 1000}, exceeding: []string{CPU}},
		{name: "capacity lacking a requested name does not fit", l: List{"gpu": 1}, cap: List{CPU: 1000}, exceeding: []string{"gpu"}},
		{name: "capacity names absent from the request are ignored", l: List{CPU: 1}, cap: List{CPU: 1, "gpu": 0}},
		{name: "zero request fits missing capacity", l: List{"gpu": 0}, cap: nil},
		{name: "negative request fits negative capacity", l: List{CPU: -5}, cap: List{CPU: -10}},
		{name: "positive request exceeds negative capacity", l: List{CPU: 1}, cap: List{CPU: -10}, exceeding: []string{CPU}},
		{
			name:      "several names exceeding come back sorted",
			l:         List{"memory": 10, CPU: 10, "a-resource": 10, "ok": 1},
			cap:       List{"memory": 9, CPU: 0, "ok": 1},
			exceeding: []string{"a-resource", CPU, "memory"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.l.Exceeding(tt.cap)
			if len(got) != len(tt.exceeding) || (len(got) > 0 && !reflect.DeepEqual(got, tt.exceeding)) {
				t.Errorf("Exceeding() = %q, want %q", got, tt.exceeding)
			}
			if fits, want := tt.l.FitsIn(tt.cap), len(tt.exceeding) == 0; fits != want {
				t.Errorf("FitsIn() = %v, want %v", fits, want)
			}
		})
	}
}

func TestIsZero(t *testing.T) {
	tests := []struct {
		name string
		l    List
		want bool
	}{
		{name: "nil", l: nil, want: true},
		{name: "empty", l: List{}, want: true},
		{name: "only zero amounts", l: List{CPU: 0, "memory": 0}, want: true},
		{name: "one positive amount", l: List{CPU: 0, "memory": 1}, want: false},
		{name: "one negative amount", l: List{CPU: -1}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.IsZero(); got != tt.want {
				t.Errorf("%v.IsZero() = %v, want %v", tt.l, got, tt.want)
			}
		})
	}
}

func TestEqual(t *testing.T) {
	tests := []struct {
		name string
		l, o List
		want bool
	}{
		{name: "nil and nil", l: nil, o: nil, want: true},
		{name: "nil and empty", l: nil, o: List{}, want: true},
		{name: "missing equals explicit zero", l: List{CPU: 5}, o: List{CPU: 5, "gpu": 0}, want: true},
		{name: "nil equals all zeros", l: nil, o: List{CPU: 0}, want: true},
		{name: "same amounts", l: List{CPU: 5, "memory": 7}, o: List{"memory": 7, CPU: 5}, want: true},
		{name: "different amount", l: List{CPU: 5}, o: List{CPU: 6}, want: false},
		{name: "extra non-zero name on the right", l: List{CPU: 5}, o: List{CPU: 5, "gpu": 1}, want: false},
		{name: "extra non-zero name on the left", l: List{CPU: 5, "gpu": -1}, o: List{CPU: 5}, want: false},
		{name: "nil versus non-zero", l: nil, o: List{"gpu": 1}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.Equal(tt.o); got != tt.want {
				t.Errorf("%v.Equal(%v) = %v, want %v", tt.l, tt.o, got, tt.want)
			}
			if got := tt.o.Equal(tt.l); got != tt.want {
				t.Errorf("%v.Equal(%v) = %v, want %v (symmetry)", tt.o, tt.l, got, tt.want)
			}
		})
	}
}

func TestFormat(t *testing.T) {
	tests := []struct {
		name     string
		resource string
		v        int64
		want     string
	}{
		{name: "whole cores", resource: CPU, v: 2000, want: "2"},
		{name: "zero cpu", resource: CPU, v: 0, want: "0"},
		{name: "fractional cpu in millicores", resource: CPU, v: 1500, want: "1500m"},
		{name: "sub-core cpu", resource: CPU, v: 250, want: "250m"},
		{name: "negative whole cores", resource: CPU, v: -3000, want: "-3"},
		{name: "negative millicores", resource: CPU, v: -1, want: "-1m"},
		{name: "memory in bytes stays an integer", resource: "memory", v: 1073741824, want: "1073741824"},
		{name: "memory multiple of 1000 is not scaled", resource: "memory", v: 2000, want: "2000"},
		{name: "extended resource", resource: "nvidia.com/gpu", v: 4, want: "4"},
		{name: "largest amount", resource: "memory", v: math.MaxInt64, want: "9223372036854775807"},
		{name: "smallest cpu amount", resource: CPU, v: math.MinInt64, want: "-9223372036854775808m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Format(tt.resource, tt.v); got != tt.want {
				t.Errorf("Format(%q, %d) = %q, want %q", tt.resource, tt.v, got, tt.want)
			}
		})
	}
}

func TestString(t *testing.T) {
	tests := []struct {
		name string
		l    List
		want string
	}{
		{name: "nil", l: nil, want: ""},
		{name: "doc example", l: List{"memory": 1073741824, CPU: 1500}, want: "cpu=1500m,memory=1073741824"},
		{name: "names in order, cpu in cores when whole", l: List{"nvidia.com/gpu": 2, CPU: 4000, "ephemeral-storage": 0}, want: "cpu=4,ephemeral-storage=0,nvidia.com/gpu=2"},
		{name: "single name", l: List{"pods": 110}, want: "pods=110"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.l.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
		})
	}
}

// fuzzNames is the small name alphabet fuzzed lists draw from, so that two
// lists share names often.
var fuzzNames = []string{CPU, "memory", "nvidia.com/gpu", "ephemeral-storage", "pods", ""}

// decodeList reads entries of one name byte and one signed varint amount until
// data runs out or a varint is malformed.
func decodeList(data []byte) List {
	l := List{}
	for len(data) > 1 {
		name := fuzzNames[int(data[0])%len(fuzzNames)]
		v, n := binary.Varint(data[1:])
		if n <= 0 {
			break
		}
		l[name] = v
		data = data[1+n:]
	}
	return l
}

func encodeList(l List) []byte {
	var out []byte
	for i, name := range fuzzNames {
		if v, ok := l[name]; ok {
			out = append(out, byte(i))
			out = binary.AppendVarint(out, v)
		}
	}
	return out
}

func FuzzListAddSub(f *testing.F) {
	f.Add(encodeList(List{CPU: 1500, "memory": 1 << 30}), encodeList(List{CPU: 500, "nvidia.com/gpu": 1}))
	f.Add(encodeList(List{CPU: math.MaxInt64}), encodeList(List{CPU: 1}))
	f.Add(encodeList(List{"pods": math.MinInt64}), encodeList(List{"pods": math.MinInt64, "": -1}))
	f.Add([]byte{}, encodeList(List{"memory": -7}))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		l, o := decodeList(a), decodeList(b)
		lOrig, oOrig := copyMap(l), copyMap(o)

		if got := l.Clone().Add(o).Sub(o); !got.Equal(l) {
			t.Fatalf("%v.Add(%v).Sub(same) = %v, want %v", l, o, got, l)
		}
		if got := l.Clone().Sub(o).Add(o); !got.Equal(l) {
			t.Fatalf("%v.Sub(%v).Add(same) = %v, want %v", l, o, got, l)
		}
		if lo, ol := l.Clone().Add(o), o.Clone().Add(l); !lo.Equal(ol) {
			t.Fatalf("Add is not commutative: %v vs %v", lo, ol)
		}
		if got := List(nil).Add(o); !got.Equal(o) {
			t.Fatalf("nil.Add(%v) = %v", o, got)
		}
		if got := List(nil).Sub(o).Add(o); !got.IsZero() {
			t.Fatalf("nil.Sub(%v).Add(same) = %v, want zero", o, got)
		}
		if got := l.Clone().Sub(l); !got.IsZero() {
			t.Fatalf("%v.Sub(itself) = %v, want zero", l, got)
		}
		if !l.Equal(l.Clone()) || l.Equal(o) != o.Equal(l) {
			t.Fatalf("Equal is not reflexive or not symmetric for %v, %v", l, o)
		}
		if !reflect.DeepEqual(copyMap(l), lOrig) || !reflect.DeepEqual(copyMap(o), oOrig) {
			t.Fatal("operations on clones modified the inputs")
		}
	})
}

func FuzzListFitsIn(f *testing.F) {
	f.Add(encodeList(List{CPU: 1500, "memory": 1 << 30}), encodeList(List{CPU: 1500, "memory": 1<<30 - 1}))
	f.Add(encodeList(List{"nvidia.com/gpu": 1}), encodeList(List{CPU: 64000}))
	f.Add(encodeList(List{CPU: 0, "pods": -1}), []byte{})
	f.Add(encodeList(List{CPU: 1}), encodeList(List{CPU: -1}))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		l, capacity := decodeList(a), decodeList(b)
		over := l.Exceeding(capacity)
		if fits := l.FitsIn(capacity); fits != (len(over) == 0) {
			t.Fatalf("%v.FitsIn(%v) = %v but Exceeding = %q", l, capacity, fits, over)
		}
		if !sort.StringsAreSorted(over) {
			t.Fatalf("Exceeding = %q, not sorted", over)
		}
		in := map[string]bool{}
		for _, n := range over {
			if in[n] {
				t.Fatalf("Exceeding = %q repeats %q", over, n)
			}
			in[n] = true
			if v, ok := l[n]; !ok || v <= 0 || v <= capacity[n] {
				t.Fatalf("Exceeding names %q but request %d (present %v) fits capacity %d", n, v, ok, capacity[n])
			}
		}
		for n, v := range l {
			if !in[n] && v > 0 && v > capacity[n] {
				t.Fatalf("Exceeding = %q misses %q: request %d > capacity %d", over, n, v, capacity[n])
			}
		}
		if !l.FitsIn(l) {
			t.Fatalf("%v does not fit in itself", l)
		}
		if !List(nil).FitsIn(capacity) {
			t.Fatalf("the empty request does not fit in %v", capacity)
		}
		// Growing the capacity never makes a fitting request stop fitting.
		if l.FitsIn(capacity) {
			grown := capacity.Clone()
			for n, v := range l {
				if v > 0 && grown[n] < math.MaxInt64 {
					grown[n]++
				}
			}
			if !l.FitsIn(grown) {
				t.Fatalf("%v fits %v but not the larger %v", l, capacity, grown)
			}
		}
	})
}

func copyMap(l List) map[string]int64 {
	if l == nil {
		return nil
	}
	out := make(map[string]int64, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

func nonNil(m map[string]int64) map[string]int64 {
	if m == nil {
		return map[string]int64{}
	}
	return m
}

// sameMap reports whether a and b are the same map object: a write through one
// shows through the other.
func sameMap(a, b List) bool {
	const probe = "\x00probe"
	if _, ok := a[probe]; ok {
		return false
	}
	a[probe] = 1
	_, shared := b[probe]
	delete(a, probe)
	return shared
}
