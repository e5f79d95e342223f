package queue

import (
	"reflect"
	"strings"
	"testing"
)

func TestBuildTreeProblems(t *testing.T) {
	tests := []struct {
		name     string
		specs    []Spec
		problems map[string]ProblemKind // queues with a problem; the rest must be healthy
		messages map[string]string      // exact messages, where checked
	}{
		{name: "empty list"},
		{
			name:  "flat queues, empty and root parents are top level",
			specs: []Spec{{Name: "a"}, {Name: "b", Parent: RootName}},
		},
		{
			name:     "missing parent",
			specs:    []Spec{{Name: "a", Parent: "ghost"}},
			problems: map[string]ProblemKind{"a": ProblemParentMissing},
			messages: map[string]string{"a": `parent queue "ghost" not found`},
		},
		{
			name:     "self parent is a cycle of one",
			specs:    []Spec{{Name: "a", Parent: "a"}},
			problems: map[string]ProblemKind{"a": ProblemCycle},
			messages: map[string]string{"a": "parent cycle: a -> a"},
		},
		{
			name:     "cycle of two",
			specs:    []Spec{{Name: "a", Parent: "b"}, {Name: "b", Parent: "a"}},
			problems: map[string]ProblemKind{"a": ProblemCycle, "b": ProblemCycle},
			messages: map[string]string{"a": "parent cycle: a -> b -> a", "b": "parent cycle: b -> a -> b"},
		},
		{
			name:     "cycle of three, seen from each member",
			specs:    []Spec{{Name: "c", Parent: "a"}, {Name: "a", Parent: "b"}, {Name: "b", Parent: "c"}},
			problems: map[string]ProblemKind{"a": ProblemCycle, "b": ProblemCycle, "c": ProblemCycle},
			messages: map[string]string{
				"a": "parent cycle: a -> b -> c -> a",
				"b": "parent cycle: b -> c -> a -> b",
				"c": "parent cycle: c -> a -> b -> c",
			},
		},
		{
			name: "queues hanging below a cycle inherit it; a healthy sibling tree is untouched",
			specs: []Spec{
				{Name: "a", Parent: "b"}, {Name: "b", Parent: "a"},
				{Name: "x", Parent: "a"}, {Name: "y", Parent: "x"},
				{Name: "ok"}, {Name: "ok-child", Parent: "ok"},
			},
			problems: map[string]ProblemKind{"a": ProblemCycle, "b": ProblemCycle, "x": ProblemAncestor, "y": ProblemAncestor},
			messages: map[string]string{"y": `ancestor queue "a" is unusable: parent cycle: a -> b -> a`},
		},
		{
			name:     "descendants of a queue with a missing parent",
			specs:    []Spec{{Name: "a", Parent: "ghost"}, {Name: "b", Parent: "a"}, {Name: "c", Parent: "b"}},
			problems: map[string]ProblemKind{"a": ProblemParentMissing, "b": ProblemAncestor, "c": ProblemAncestor},
			messages: map[string]string{"c": `ancestor queue "a" is unusable: parent queue "ghost" not found`},
		},
		{
			name:     "a chain leading into a cycle",
			specs:    []Spec{{Name: "d", Parent: "c"}, {Name: "c", Parent: "b"}, {Name: "b", Parent: "a"}, {Name: "a", Parent: "b"}},
			problems: map[string]ProblemKind{"a": ProblemCycle, "b": ProblemCycle, "c": ProblemAncestor, "d": ProblemAncestor},
		},
		{
			name:     "reserved and empty names",
			specs:    []Spec{{Name: RootName}, {Name: ""}, {Name: "kid", Parent: RootName}},
			problems: map[string]ProblemKind{RootName: ProblemInvalidName, "": ProblemInvalidName},
		},
		{
			name:     "duplicated name",
			specs:    []Spec{{Name: "a", Weight: 1}, {Name: "a", Weight: 2}, {Name: "b", Parent: "a"}},
			problems: map[string]ProblemKind{"a": ProblemDuplicate, "b": ProblemAncestor},
		},
		{
			name:  "deep healthy chain",
			specs: []Spec{{Name: "a"}, {Name: "b", Parent: "a"}, {Name: "c", Parent: "b"}, {Name: "d", Parent: "c"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := BuildTree(tt.specs)
			got := map[string]ProblemKind{}
			for name, p := range tr.Problems() {
				got[name] = p.Kind
				if p.Error() != p.Message || p.Message == "" {
					t.Errorf("queue %q: problem %+v has no message", name, p)
				}
			}
			want := tt.problems
			if want == nil {
				want = map[string]ProblemKind{}
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("problems = %v, want %v", got, want)
			}
			for name, msg := range tt.messages {
				if p := tr.Problem(name); p == nil || p.Message != msg {
					t.Errorf("Problem(%q) = %v, want %q", name, p, msg)
				}
			}
			for _, name := range tr.Names() {
				if healthy := tr.Problem(name) == nil; tr.Healthy(name) != healthy {
					t.Errorf("Healthy(%q) = %v, want %v", name, tr.Healthy(name), healthy)
				}
				if name == "" || name == RootName {
					continue // Children of these names are the root's
				}
				if !tr.Healthy(name) && (len(tr.Ancestors(name)) != 0 || len(tr.Children(name)) != 0) {
					t.Errorf("broken queue %q has ancestors %v, children %v", name, tr.Ancestors(name), tr.Children(name))
				}
			}
		})
	}
}

func TestTreeAccessors(t *testing.T) {
	tr := BuildTree([]Spec{
		{Name: "org", Weight: 2},
		{Name: "team-b", Parent: "org"},
		{Name: "team-a", Parent: "org"},
		{Name: "sub", Parent: "team-a"},
		{Name: "other", Parent: RootName},
		{Name: "lost", Parent: "nowhere"},
	})
	if got, want := tr.Len(), 6; got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
	if got, want := tr.Names(), []string{"lost", "org", "other", "sub", "team-a", "team-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
	if got, want := tr.Children(""), []string{"org", "other"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Children(\"\") = %v, want %v", got, want)
	}
	if got, want := tr.Children(RootName), []string{"org", "other"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Children(root) = %v, want %v", got, want)
	}
	if got, want := tr.Children("org"), []string{"team-a", "team-b"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Children(org) = %v, want %v", got, want)
	}
	if got := tr.Children("unknown"); got != nil {
		t.Errorf("Children(unknown) = %v, want nil", got)
	}
	if got, want := tr.Ancestors("sub"), []string{"team-a", "org"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Ancestors(sub) = %v, want %v", got, want)
	}
	if got := tr.Ancestors("org"); got != nil {
		t.Errorf("Ancestors(org) = %v, want nil", got)
	}
	if got := tr.Ancestors("unknown"); got != nil {
		t.Errorf("Ancestors(unknown) = %v, want nil", got)
	}
	if s, ok := tr.Spec("org"); !ok || s.Weight != 2 {
		t.Errorf("Spec(org) = %+v, %v", s, ok)
	}
	if _, ok := tr.Spec("unknown"); ok {
		t.Error("Spec(unknown) found")
	}
	if tr.Problem("unknown") != nil || tr.Healthy("unknown") {
		t.Error("an unknown queue must have no problem and not be healthy")
	}
	if p := tr.Problem("lost"); p == nil || p.Kind != ProblemParentMissing {
		t.Errorf("Problem(lost) = %v", p)
	}
}

func TestBuildTreeLongCycle(t *testing.T) {
	const n = 500
	specs := make([]Spec, n)
	for i := range specs {
		specs[i] = Spec{Name: name(i), Parent: name((i + 1) % n)}
	}
	tr := BuildTree(specs)
	for i := range n {
		p := tr.Problem(name(i))
		if p == nil || p.Kind != ProblemCycle {
			t.Fatalf("queue %s: problem %v, want a cycle", name(i), p)
		}
		if !strings.HasPrefix(p.Message, "parent cycle: "+name(i)+" -> "+name((i+1)%n)) {
			t.Fatalf("queue %s: message %q", name(i), p.Message)
		}
	}
}

func TestSpecHelpers(t *testing.T) {
	tests := []struct {
		weight, want int32
	}{{0, 1}, {-5, 1}, {1, 1}, {3, 3}, {65535, 65535}, {70000, 65535}}
	for _, tt := range tests {
		if got := (Spec{Weight: tt.weight}).EffectiveWeight(); got != tt.want {
			t.Errorf("EffectiveWeight(%d) = %d, want %d", tt.weight, got, tt.want)
		}
	}
	for _, st := range []State{"", StateOpen} {
		if !(Spec{State: st}).Open() {
			t.Errorf("state %q is not open", st)
		}
	}
	if (Spec{State: StateClosed}).Open() {
		t.Error("Closed is open")
	}
	if !(Spec{}).TopLevel() || !(Spec{Parent: RootName}).TopLevel() || (Spec{Parent: "p"}).TopLevel() {
		t.Error("TopLevel")
	}
}

func name(i int) string {
	const letters = "abcdefghijklmnopqrstuvwxyz"
	s := ""
	for {
		s = string(letters[i%26]) + s
		i /= 26
		if i == 0 {
			return "q" + s
		}
	}
}
