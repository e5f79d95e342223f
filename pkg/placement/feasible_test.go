package placement

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func room(r int, nodes ...[]int64) *Room {
	rm := &Room{R: r}
	for _, n := range nodes {
		rm.Free = append(rm.Free, n...)
	}
	return rm
}

func TestFeasible(t *testing.T) {
	for _, tc := range []struct {
		name    string
		room    *Room
		classes []Class
		ok      bool
		fit     int
	}{
		{"fragmented: 15 of 16 cpu but one member per node",
			room(1, []int64{4000}, []int64{4000}, []int64{4000}, []int64{4000}),
			[]Class{{Request: []int64{3000}, Count: 5}}, false, 4},
		{"fits one per node",
			room(1, []int64{4000}, []int64{4000}, []int64{4000}, []int64{4000}),
			[]Class{{Request: []int64{3000}, Count: 4}}, true, 4},
		{"two per node",
			room(1, []int64{4000}, []int64{4000}),
			[]Class{{Request: []int64{2000}, Count: 4}}, true, 4},
		{"decreasing order: the large member first",
			room(1, []int64{3000}, []int64{1000}),
			[]Class{{Request: []int64{1000}, Count: 1}, {Request: []int64{3000}, Count: 1}}, true, 2},
		{"eligibility restricts",
			room(1, []int64{4000}, []int64{4000}),
			[]Class{{Request: []int64{3000}, Count: 2, Nodes: []int32{1}}}, false, 1},
		{"no eligible node",
			room(1, []int64{4000}),
			[]Class{{Request: []int64{1000}, Count: 1, Nodes: []int32{}}}, false, 0},
		{"second resource short",
			room(2, []int64{4000, 1}, []int64{4000, 0}),
			[]Class{{Request: []int64{1000, 1}, Count: 2}}, false, 1},
		{"negative room holds nothing",
			room(1, []int64{-1000}, []int64{1000}),
			[]Class{{Request: []int64{500}, Count: 2}}, true, 2},
		{"blocked node",
			&Room{R: 1, Free: []int64{4000, 4000}, Blocked: []bool{true, false}},
			[]Class{{Request: []int64{3000}, Count: 2}}, false, 1},
		{"max bound: nothing visited",
			&Room{R: 1, Free: []int64{4000, 4000}, Max: []int64{2000}},
			[]Class{{Request: []int64{3000}, Count: 1}}, false, 0},
		{"nothing requested", room(1, []int64{0}), []Class{{Request: []int64{0}, Count: 3}}, true, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := slices.Clone(tc.room.Free)
			var p Placer
			ok, fit, _ := p.Feasible(tc.room, tc.classes)
			if ok != tc.ok || fit != tc.fit {
				t.Errorf("Feasible = %v, %d fit; want %v, %d", ok, fit, tc.ok, tc.fit)
			}
			if !slices.Equal(before, tc.room.Free) {
				t.Errorf("Feasible changed the room: %v -> %v", before, tc.room.Free)
			}
		})
	}
}

// TestApplyOnAnotherRoom: steps found on a room with extra room (a plan's
// victims freed) are applied to the real room, which may go negative.
func TestApplyOnAnotherRoom(t *testing.T) {
	classes := []Class{{Request: []int64{3000}, Count: 2}}
	real := room(1, []int64{1000}, []int64{4000})
	plan := room(1, []int64{4000}, []int64{4000})
	var p Placer
	fit, steps := p.Place(plan, classes)
	if fit != 2 {
		t.Fatalf("placed %d, want 2", fit)
	}
	Apply(real, classes, steps)
	if want := []int64{-2000, 1000}; !slices.Equal(real.Free, want) {
		t.Errorf("room after Apply = %v, want %v", real.Free, want)
	}
}

// bruteForce reports whether every member (expanded from classes) fits by
// trying every assignment.
func bruteForce(r int, free []int64, members []Class) bool {
	n := len(free) / r
	var rec func(m int) bool
	rec = func(m int) bool {
		if m == len(members) {
			return true
		}
		c := members[m]
		for i := range n {
			if c.Nodes != nil && !slices.Contains(c.Nodes, int32(i)) {
				continue
			}
			f := free[i*r : (i+1)*r]
			if !fitsAt(c.Request, f) {
				continue
			}
			take(c.Request, f, -1)
			ok := rec(m + 1)
			take(c.Request, f, 1)
			if ok {
				return true
			}
		}
		return false
	}
	return rec(0)
}

// TestFeasibleNeverWrongWhenBruteForceSaysNo: on small random inputs, FFD
// never answers "feasible" where an exhaustive search finds no placement,
// and its steps are a valid placement.
func TestFeasibleNeverWrongWhenBruteForceSaysNo(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var p Placer
	agree, total := 0, 0
	for iter := 0; iter < 20000; iter++ {
		r := 1 + rng.IntN(2)
		n := 1 + rng.IntN(4)
		free := make([]int64, n*r)
		for i := range free {
			free[i] = int64(rng.IntN(6))
		}
		var classes, members []Class
		for range 1 + rng.IntN(3) {
			c := Class{Request: make([]int64, r), Count: 1 + rng.IntN(3)}
			for j := range c.Request {
				c.Request[j] = int64(rng.IntN(4))
			}
			if rng.IntN(3) == 0 {
				c.Nodes = []int32{}
				for i := range n {
					if rng.IntN(2) == 0 {
						c.Nodes = append(c.Nodes, int32(i))
					}
				}
			}
			classes = append(classes, c)
			for range c.Count {
				members = append(members, Class{Request: c.Request, Count: 1, Nodes: c.Nodes})
			}
		}
		rm := &Room{R: r, Free: slices.Clone(free)}
		fit, steps := p.Place(rm, classes)
		want := len(members)
		// The steps are a placement: nothing went negative.
		for i, v := range rm.Free {
			if v < 0 && free[i] >= 0 {
				t.Fatalf("placement overfilled node %d: free %v, classes %+v, steps %v", i/r, free, classes, steps)
			}
		}
		brute := bruteForce(r, slices.Clone(free), members)
		if fit == want && !brute {
			t.Fatalf("FFD says feasible, brute force says no: free %v, classes %+v", free, classes)
		}
		total++
		if (fit == want) == brute {
			agree++
		}
	}
	t.Logf("FFD agreed with brute force on %d/%d inputs", agree, total)
}

func BenchmarkFeasible(b *testing.B) {
	const nodes = 1000
	rm := &Room{R: 2, Free: make([]int64, nodes*2)}
	for i := range nodes {
		rm.Free[2*i], rm.Free[2*i+1] = 4000, 16<<30
	}
	classes := []Class{{Request: []int64{3000, 1 << 30}, Count: 100}}
	var p Placer
	b.ReportAllocs()
	for b.Loop() {
		if ok, _, _ := p.Feasible(rm, classes); !ok {
			b.Fatal("not feasible")
		}
	}
}
