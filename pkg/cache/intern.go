package cache

import (
	"slices"
	"strconv"

	"github.com/caldera-sched/caldera/pkg/resources"
)

// maxInterned bounds the table of shared requests: past it, a request of a
// new shape gets a list of its own, as every request did before.
const maxInterned = 4096

// requestInterner shares one request list among the pods that request the
// same amounts. A batch job's pods mostly do (every worker asks for the same
// cpu, memory and GPUs), and a small map costs a few hundred bytes, a large
// part of what the cache holds per pod. Shared lists are never changed in
// place: the cache only reads a pod's request (and replaces it when it
// changes), adding it into or subtracting it from totals of its own.
type requestInterner struct {
	lists map[string]resources.List
	key   []byte
	names []string
}

// intern returns a list equal to l that may be shared; l itself is not kept.
// O(len(l) log len(l)); allocation-free when the shape is already known.
func (in *requestInterner) intern(l resources.List) resources.List {
	in.names = in.names[:0]
	for name := range l {
		in.names = append(in.names, name)
	}
	slices.Sort(in.names)
	in.key = in.key[:0]
	for _, name := range in.names {
		in.key = append(in.key, name...)
		in.key = append(in.key, '=')
		in.key = strconv.AppendInt(in.key, l[name], 10)
		in.key = append(in.key, ',')
	}
	if shared, ok := in.lists[string(in.key)]; ok {
		return shared
	}
	own := l.Clone()
	if len(in.lists) < maxInterned {
		if in.lists == nil {
			in.lists = map[string]resources.List{}
		}
		in.lists[string(in.key)] = own
	}
	return own
}
