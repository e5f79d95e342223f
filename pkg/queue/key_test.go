package queue

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// k is a test's key for "ns/name" (a gang's unit) or "name" (no namespace).
func k(s string) Key {
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		return Key{Name: s}
	}
	return GroupUnit(ns, name)
}

// short is k's inverse: the "ns/name" (or "name") a test wrote.
func short(key Key) string {
	if key.Namespace == "" {
		return key.Name
	}
	return key.Namespace + "/" + key.Name
}

func TestKeyString(t *testing.T) {
	for _, tt := range []struct {
		key  Key
		want string
	}{
		{GroupUnit("ns", "train"), "pg:ns/train"},
		{PodUnit("ns", "web-0"), "pod:ns/web-0"},
		{Key{}, "pg:/"},
	} {
		if got := tt.key.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.key, got, tt.want)
		}
	}
	if !(Key{}).IsZero() || GroupUnit("", "a").IsZero() {
		t.Error("IsZero wrong")
	}
}

// TestKeyCompareMatchesStrings: Compare orders keys exactly as their strings
// order, which is what admission's tie-break used before keys were typed.
// Names are drawn from a small alphabet around '/' ('-' and '.' sort before
// it, letters and digits after) so that namespace boundaries fall on every
// kind of byte.
func TestKeyCompareMatchesStrings(t *testing.T) {
	alphabet := []byte("-.0a/b")
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		n := r.IntN(4)
		b := make([]byte, n)
		for i := range b {
			c := alphabet[r.IntN(len(alphabet))]
			if c == '/' {
				c = 'z'
			}
			b[i] = c
		}
		return string(b)
	}
	key := func() Key { return Key{Kind: Kind(r.IntN(2)), Namespace: word(), Name: word()} }
	for i := 0; i < 200000; i++ {
		a, b := key(), key()
		if i%7 == 0 {
			b.Kind = a.Kind
		}
		if i%5 == 0 {
			b.Namespace = a.Namespace
		}
		got, want := a.Compare(b), strings.Compare(a.String(), b.String())
		if got != want {
			t.Fatalf("%q.Compare(%q) = %d, want %d", a, b, got, want)
		}
	}
	// A namespace ending where the other has '/' (never a Kubernetes name,
	// but Compare must still agree).
	a, b := Key{Namespace: "a", Name: "x"}, Key{Namespace: "a/b", Name: "c"}
	if got, want := a.Compare(b), strings.Compare(a.String(), b.String()); got != want {
		t.Fatalf("%q.Compare(%q) = %d, want %d", a, b, got, want)
	}
}

func BenchmarkKeyCompare(b *testing.B) {
	x, y := GroupUnit("team-a", "train-42"), GroupUnit("team-b", "train-42")
	for b.Loop() {
		if x.Compare(y) >= 0 {
			b.Fatal("order")
		}
	}
}
