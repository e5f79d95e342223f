package queue

import "strings"

// Kind says what a unit of admission is: a gang or a singleton pod.
type Kind uint8

const (
	// KindGroup is a PodGroup's unit: every member is admitted together.
	KindGroup Kind = iota
	// KindPod is a pod without a PodGroup, admitted alone.
	KindPod
)

// prefix is the kind as Key.String writes it.
func (k Kind) prefix() string {
	if k == KindPod {
		return "pod:"
	}
	return "pg:"
}

// Key names a unit of admission. It is a comparable struct rather than a
// "pg:ns/name" string so that the cache looks units up with the namespace and
// name strings it already holds: no key is built, stored or parsed per pod.
type Key struct {
	Kind            Kind
	Namespace, Name string
}

// GroupUnit is the key of PodGroup namespace/name's unit.
func GroupUnit(namespace, name string) Key {
	return Key{Kind: KindGroup, Namespace: namespace, Name: name}
}

// PodUnit is the key of pod namespace/name's singleton unit.
func PodUnit(namespace, name string) Key {
	return Key{Kind: KindPod, Namespace: namespace, Name: name}
}

// IsZero reports whether k names nothing.
func (k Key) IsZero() bool { return k == Key{} }

// String renders the key as messages, logs and the cache dump show it:
// "pg:namespace/name" or "pod:namespace/name".
func (k Key) String() string {
	return k.Kind.prefix() + k.Namespace + "/" + k.Name
}

// Compare orders keys as their String forms order, without building them:
// gangs ("pg:") before pods ("pod:"), then namespace+"/"+name compared as one
// string. Admission breaks ties of priority and creation time by it, and that
// order must not depend on how keys are represented.
func (k Key) Compare(o Key) int {
	if k.Kind != o.Kind {
		// "pg:" < "pod:" ('g' < 'o'): the kinds order as their prefixes.
		if k.Kind < o.Kind {
			return -1
		}
		return 1
	}
	if k.Namespace == o.Namespace {
		return strings.Compare(k.Name, o.Name)
	}
	return compareJoined(k.Namespace, k.Name, o.Namespace, o.Name)
}

// compareJoined compares a1+"/"+a2 with b1+"/"+b2 for a1 != b1, without
// concatenating: the first differing byte lies at or right after the common
// prefix of a1 and b1, where an exhausted namespace contributes its '/'.
func compareJoined(a1, a2, b1, b2 string) int {
	n := 0
	for n < len(a1) && n < len(b1) && a1[n] == b1[n] {
		n++
	}
	ca, cb := joinedByte(a1, n), joinedByte(b1, n)
	if ca != cb {
		if ca < cb {
			return -1
		}
		return 1
	}
	// Only when one namespace ends where the other holds a '/', which
	// Kubernetes names never contain; compare the whole strings then.
	return strings.Compare(a1+"/"+a2, b1+"/"+b2)
}

// joinedByte is byte i of s+"/"+..., for i <= len(s).
func joinedByte(s string, i int) byte {
	if i < len(s) {
		return s[i]
	}
	return '/'
}
